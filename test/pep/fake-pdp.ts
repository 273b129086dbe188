/**
 * A small stand-in for the PDP (docs/protocol.md §4) for the PEP's own tests: bearer tokens, the execution
 * state machine (proposed → invoking → committed | rejected | unknown → reconciled), 409s on reuse,
 * supersedes, approvals, outcomes and reconciliation. Decisions come from a JS policy function instead
 * of Cedar. It records every raw request body so tests can check what the PEP sent.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { digestOf, jcs, sha256Tagged } from '../../src/util/canonical.js';

export interface Uid {
  type: string;
  id: string;
}

export interface FakeExecution {
  execution_id: string;
  actor: Uid;
  state: 'proposed' | 'invoking' | 'committed' | 'rejected' | 'unknown' | 'reconciled';
  resolution?: 'committed' | 'absent';
  binding: string;
  envelope_digest: string;
  supersedes?: string;
  superseded_by?: string;
  approvals: Array<{ approval_id: string; approver: Uid; expires_at: string }>;
  outcomes: Array<Record<string, unknown>>;
}

export interface PolicyInput {
  server: string;
  tool: string;
  arguments: Record<string, unknown>;
  envelope: Record<string, unknown>;
  approvals: FakeExecution['approvals'];
  supersedes?: { execution_id: string; state: string; resolution?: string };
}

export type PolicyAnswer = { decision: 'allow' | 'deny' | 'approval_required'; reasons?: string[]; obligations?: Array<Record<string, unknown>> };

export interface FakePdpOptions {
  policy?: (input: PolicyInput) => PolicyAnswer;
  /** Turns the client's arguments into the admitted ones (default: unchanged). */
  admit?: (args: Record<string, unknown>) => Record<string, unknown>;
}

export interface FakePdp {
  url: string;
  tokens: { pep: string; pep2: string; approver: string; reconciler: string };
  executions: Map<string, FakeExecution>;
  /** Every request: method, path, raw body, status answered. */
  log: Array<{ method: string; path: string; body: string; status: number; code?: string }>;
  /** Answer 503 to everything while true. */
  failing: boolean;
  stop(): Promise<void>;
}

const ACTORS: Record<string, Uid> = {
  'fake-pep': { type: 'Agent', id: 'offboarding-agent-prod' },
  'fake-pep2': { type: 'Agent', id: 'other-agent' },
};
const TERMINAL = new Set(['committed', 'rejected', 'unknown', 'reconciled']);

export function defaultPolicy(input: PolicyInput): PolicyAnswer {
  if (input.tool === 'forbidden') return { decision: 'deny', reasons: ['forbid-tool'] };
  if (input.tool === 'needs_approval' && input.approvals.length === 0) {
    return { decision: 'approval_required', reasons: ['hr-approval'], obligations: [{ policy: 'hr-approval', approver_group: 'Role::"hr"' }] };
  }
  const s = input.supersedes;
  if (s && !(s.resolution === 'absent' || s.state === 'rejected')) return { decision: 'deny', reasons: ['retry-only-after-absent'] };
  return { decision: 'allow', reasons: ['permit-all'] };
}

export async function startFakePdp(opts: FakePdpOptions = {}): Promise<FakePdp> {
  const policy = opts.policy ?? defaultPolicy;
  const admit = opts.admit ?? ((a) => a);
  const executions = new Map<string, FakeExecution>();
  const log: FakePdp['log'] = [];
  let approvalSeq = 0;
  const key = (actor: Uid, id: string) => `${actor.type}::${JSON.stringify(actor.id)}/${id}`;

  const state: { failing: boolean } = { failing: false };

  function handle(req: IncomingMessage, body: string): { status: number; json: unknown } {
    const err = (status: number, code: string, message = code) => ({ status, json: { error: { code, message } } });
    if (state.failing) return err(503, 'STORE_UNAVAILABLE');
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const url = new URL(req.url ?? '/', 'http://x');
    const actor = auth ? ACTORS[auth] : undefined;
    let parsed: Record<string, unknown> = {};
    if (body) {
      try {
        parsed = JSON.parse(body) as Record<string, unknown>;
      } catch {
        return err(400, 'INVALID_JSON');
      }
    }
    if (req.method === 'POST' && url.pathname === '/v1/decisions') {
      if (!actor) return err(401, 'UNAUTHENTICATED');
      const env = parsed.envelope as Record<string, unknown> | undefined;
      const id = parsed.execution_id;
      const action = parsed.action as { server: string; tool: string; arguments: Record<string, unknown> } | undefined;
      if (typeof id !== 'string' || !/^[A-Za-z0-9._:-]{1,128}$/.test(id) || !action) return err(400, 'INVALID_REQUEST');
      if (
        !env ||
        typeof env !== 'object' ||
        typeof env.task_id !== 'string' ||
        !env.actor ||
        !env.subject ||
        !env.requester ||
        typeof env.purpose !== 'string'
      ) {
        return err(400, 'ENVELOPE_INVALID');
      }
      const ea = env.actor as Uid;
      if (ea.type !== actor.type || ea.id !== actor.id) return err(403, 'ACTOR_MISMATCH');
      if (typeof action.arguments !== 'object' || action.arguments === null || Array.isArray(action.arguments)) return err(400, 'INVALID_REQUEST');
      const admitted = admit(action.arguments);
      const binding = `writ-bind/1:${sha256Tagged(`writ-bind/1\n${jcs({ arguments: admitted, server: action.server, tool: action.tool })}`)}`;
      const envelope_digest = digestOf('writ-envelope/1\n', env);
      const k = key(actor, id);
      let ex = executions.get(k);
      if (ex) {
        if (ex.binding !== binding || ex.envelope_digest !== envelope_digest) return err(409, 'EXECUTION_CONFLICT');
        if (ex.state === 'invoking') return err(409, 'EXECUTION_IN_FLIGHT');
        if (TERMINAL.has(ex.state)) return err(409, 'EXECUTION_TERMINAL');
      } else {
        let sup: FakeExecution | undefined;
        if (typeof env.supersedes === 'string') {
          sup = executions.get(key(actor, env.supersedes));
          if (!sup) return err(404, 'EXECUTION_NOT_FOUND');
          if (sup.superseded_by) return err(409, 'EXECUTION_SUPERSEDED');
          sup.superseded_by = id;
        }
        ex = { execution_id: id, actor, state: 'proposed', binding, envelope_digest, approvals: [], outcomes: [] };
        if (sup) ex.supersedes = sup.execution_id;
        executions.set(k, ex);
      }
      const supEx = ex.supersedes ? executions.get(key(actor, ex.supersedes)) : undefined;
      const input: PolicyInput = { server: action.server, tool: action.tool, arguments: admitted, envelope: env, approvals: ex.approvals };
      if (supEx) {
        input.supersedes = { execution_id: supEx.execution_id, state: supEx.state };
        if (supEx.resolution) input.supersedes.resolution = supEx.resolution;
      }
      const p = policy(input);
      if (parsed.phase === 'execute' && p.decision === 'allow') ex.state = 'invoking';
      return {
        status: 200,
        json: {
          decision: p.decision,
          decision_id: `d-${log.length}`,
          execution_id: id,
          state: ex.state,
          binding,
          envelope_digest,
          arguments: admitted,
          policy_version: 'sha256:fake',
          entities_version: 'sha256:fake',
          reasons: p.reasons ?? [],
          errors: [],
          obligations: p.obligations ?? [],
          record: { seq: log.length, hash: 'sha256:fake' },
        },
      };
    }
    if (req.method === 'POST' && url.pathname === '/v1/approvals') {
      if (auth !== 'fake-approver') return err(403, 'FORBIDDEN_ROLE');
      const a = parsed.actor as Uid;
      const ex = a && executions.get(key(a, String(parsed.execution_id)));
      if (ex?.state !== 'proposed' || ex.binding !== parsed.binding || ex.envelope_digest !== parsed.envelope_digest) return err(409, 'APPROVAL_STALE');
      const approval_id = `ap-${++approvalSeq}`;
      ex.approvals.push({ approval_id, approver: { type: 'User', id: 'hr-5519' }, expires_at: String(parsed.expires_at) });
      return { status: 201, json: { approval_id } };
    }
    const m = /^\/v1\/executions\/([^/]+)(\/outcome|\/reconcile)?$/.exec(url.pathname);
    if (m) {
      const id = decodeURIComponent(m[1]!);
      if (m[2] === '/reconcile') {
        if (auth !== 'fake-reconciler') return err(403, 'FORBIDDEN_ROLE');
        const who = /^([A-Za-z_:]+)::"(.*)"$/.exec(url.searchParams.get('actor') ?? '');
        const ex = who ? executions.get(key({ type: who[1]!, id: who[2]! }, id)) : undefined;
        if (!ex) return err(404, 'EXECUTION_NOT_FOUND');
        if (parsed.resolution !== 'absent' && parsed.resolution !== 'committed') return err(400, 'INVALID_REQUEST');
        if (ex.state !== 'unknown') return err(409, TERMINAL.has(ex.state) ? 'EXECUTION_TERMINAL' : 'EXECUTION_NOT_UNKNOWN');
        ex.state = 'reconciled';
        ex.resolution = parsed.resolution;
        return { status: 200, json: { execution_id: id, state: ex.state, resolution: ex.resolution } };
      }
      if (!actor) return err(401, 'UNAUTHENTICATED');
      const ex = executions.get(key(actor, id));
      if (!ex) return err(404, 'EXECUTION_NOT_FOUND');
      if (m[2] === '/outcome' && req.method === 'POST') {
        ex.outcomes.push(parsed);
        if (ex.state !== 'invoking') return err(409, TERMINAL.has(ex.state) ? 'EXECUTION_TERMINAL' : 'EXECUTION_NOT_INVOKING');
        if (!['committed', 'rejected', 'unknown'].includes(String(parsed.status))) return err(400, 'INVALID_REQUEST');
        ex.state = parsed.status as FakeExecution['state'];
        return { status: 200, json: { execution_id: id, state: ex.state } };
      }
      if (!m[2] && req.method === 'GET') {
        const out: Record<string, unknown> = {
          execution_id: id,
          actor: ex.actor,
          state: ex.state,
          binding: ex.binding,
          envelope_digest: ex.envelope_digest,
          approvals: ex.approvals,
          records: [],
        };
        if (ex.resolution) out.resolution = ex.resolution;
        if (ex.supersedes) out.supersedes = ex.supersedes;
        if (ex.superseded_by) out.superseded_by = ex.superseded_by;
        return { status: 200, json: out };
      }
    }
    return err(404, 'NOT_FOUND');
  }

  const server = createServer((req, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const { status, json } = handle(req, body);
      const code = (json as { error?: { code?: string } }).error?.code;
      log.push({ method: req.method ?? '', path: req.url ?? '', body, status, ...(code ? { code } : {}) });
      const text = JSON.stringify(json);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    });
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  const port = (server.address() as AddressInfo).port;
  const fake: FakePdp = {
    url: `http://127.0.0.1:${port}`,
    tokens: { pep: 'fake-pep', pep2: 'fake-pep2', approver: 'fake-approver', reconciler: 'fake-reconciler' },
    executions,
    log,
    get failing() {
      return state.failing;
    },
    set failing(v: boolean) {
      state.failing = v;
    },
    stop: () =>
      new Promise<void>((res) => {
        server.closeAllConnections();
        server.close(() => res());
      }),
  };
  return fake;
}
