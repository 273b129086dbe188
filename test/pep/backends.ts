/**
 * The PDP a PEP test runs against: the real sidecar (`startTestServer`, with test/pep/policies) or the
 * small fake (test/pep/fake-pdp.ts). Both are driven through the same HTTP API only.
 */
import { defaultPolicy, startFakePdp, type PolicyAnswer, type PolicyInput } from './fake-pdp.js';
import { startTestServer } from '../helpers/server.js';
import { PEP_POLICIES, ACTOR_KEY } from './helpers.js';

export interface Backend {
  kind: 'fake' | 'real';
  url: string;
  tokens: { pep: string; pep2: string; approver: string; reconciler: string; auditor?: string };
  http(method: string, path: string, token: string, body?: unknown): Promise<{ status: number; body: any }>;
  execution(id: string): Promise<{ status: number; body: any }>;
  reconcile(id: string, resolution: string): Promise<{ status: number; body: any }>;
  /** Has the PDP recorded a second (late) outcome for this execution, refused as terminal? */
  lateOutcomeRecorded(id: string): Promise<boolean>;
  stop(): Promise<void>;
}

async function http(base: string, method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* keep text */
  }
  return { status: res.status, body: parsed as any };
}

const FS_READ = new Set([
  'read_text_file',
  'read_file',
  'read_multiple_files',
  'list_directory',
  'list_allowed_directories',
  'get_file_info',
  'directory_tree',
  'search_files',
]);
const MEMORY_USE = new Set(['read_graph', 'search_nodes', 'open_nodes', 'create_entities', 'create_relations', 'add_observations', 'delete_entities']);

/** test/pep/policies/pep.cedar, transcribed for the fake PDP. */
export function mirroredPolicy(i: PolicyInput): PolicyAnswer {
  if (i.server === 'fs') {
    if (i.tool === 'write_file' && typeof i.arguments.path === 'string' && i.arguments.path.includes('forbidden')) {
      return { decision: 'deny', reasons: ['fs-no-forbidden-writes'] };
    }
    if (FS_READ.has(i.tool)) return { decision: 'allow', reasons: ['fs-read'] };
    if (i.tool === 'write_file' || i.tool === 'create_directory') return { decision: 'allow', reasons: ['fs-write'] };
    return { decision: 'deny' };
  }
  if (i.server === 'memory') {
    if (i.tool === 'delete_entities') return { decision: 'deny', reasons: ['memory-no-delete'] };
    if (i.tool === 'add_observations' && i.approvals.length === 0) {
      return {
        decision: 'approval_required',
        reasons: ['memory-observations-need-hr'],
        obligations: [{ policy: 'memory-observations-need-hr', approver_group: 'Role::"hr"' }],
      };
    }
    return MEMORY_USE.has(i.tool) ? { decision: 'allow', reasons: ['memory-use'] } : { decision: 'deny' };
  }
  return defaultPolicy(i);
}

export async function startBackend(kind: 'fake' | 'real'): Promise<Backend> {
  if (kind === 'fake') {
    const f = await startFakePdp({ policy: mirroredPolicy });
    const b: Backend = {
      kind,
      url: f.url,
      tokens: f.tokens,
      http: (m, p, t, body) => http(f.url, m, p, t, body),
      execution: (id) => http(f.url, 'GET', `/v1/executions/${encodeURIComponent(id)}`, f.tokens.pep),
      reconcile: (id, resolution) =>
        http(f.url, 'POST', `/v1/executions/${encodeURIComponent(id)}/reconcile?actor=${encodeURIComponent(ACTOR_KEY)}`, f.tokens.reconciler, {
          resolution,
          evidence_ref: `test:${id}`,
        }),
      lateOutcomeRecorded: async (id) =>
        f.log.filter((e) => e.path === `/v1/executions/${encodeURIComponent(id)}/outcome`).some((e) => e.code === 'EXECUTION_TERMINAL'),
      stop: () => f.stop(),
    };
    return b;
  }
  const s = await startTestServer({ policyDir: PEP_POLICIES });
  const b: Backend = {
    kind,
    url: s.url,
    tokens: s.tokens,
    http: (m, p, t, body) => http(s.url, m, p, t, body),
    execution: (id) => http(s.url, 'GET', `/v1/executions/${encodeURIComponent(id)}`, s.tokens.pep),
    reconcile: (id, resolution) =>
      http(s.url, 'POST', `/v1/executions/${encodeURIComponent(id)}/reconcile?actor=${encodeURIComponent(ACTOR_KEY)}`, s.tokens.reconciler, {
        resolution,
        evidence_ref: `test:${id}`,
      }),
    lateOutcomeRecorded: async (id) => {
      const r = await http(s.url, 'GET', `/v1/ledger/records?execution_id=${encodeURIComponent(id)}&limit=1000`, s.tokens.auditor);
      const records: Array<Record<string, unknown>> = r.body?.records ?? [];
      return records.some((rec) => rec.kind === 'refusal');
    },
    stop: async () => {
      await s.stop();
    },
  };
  return b;
}
