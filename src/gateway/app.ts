/**
 * `writ gateway`'s HTTP side (docs/protocol.md §14), on Hono: one MCP Streamable HTTP endpoint per
 * upstream at `<public_url>/mcp/NAME`, its RFC 9728 metadata, and /healthz, /readyz, /metrics.
 *
 * Every `/mcp/NAME` request is checked in this order: the server exists (404); its `Origin`, when sent,
 * is allowed (403); it carries a valid access token for that server's resource URI (401 with the
 * RFC 9728 challenge) with one of `scopes_supported` (403 insufficient_scope). Then:
 * - POST (`application/json`, one JSON-RPC message or a batch):
 *   - a message of the stateless era (its `_meta` names revision 2026-07-28 or later) needs no session:
 *     its `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers must match its body (else 400,
 *     JSON-RPC error -32020), and it goes through the caller's own stateless channel (one relay and
 *     upstream connection per identity and server);
 *   - `initialize` without `Mcp-Session-Id` opens a session bound to the caller's identity; any other
 *     message needs the session id (400 without), and a session id that is unknown here — never
 *     issued, ended, issued by another replica, or bound to another identity — is 404, as the MCP spec
 *     answers an unknown session (the client starts a new one);
 *   - an `MCP-Protocol-Version` header naming a revision the gateway does not know is 400.
 * - GET opens the session's stream of server messages (one at a time: 409 for a second); without a
 *   session, 405.
 * - DELETE ends the session (and its upstream session).
 */
import { Hono, type Context } from 'hono';
import { isObject } from '../pep/context.js';
import { FIRST_STATELESS_REVISION, requestRevision } from '../pep/revision.js';
import type { PdpClient } from '../pep/client.js';
import type { JwtVerifier } from '../identity/verify.js';
import type { GatewayConfig } from './config.js';
import type { GatewayMetrics } from './metrics.js';
import { authenticateClient, originRefusal, resourceMetadata, type ClientIdentity, type Refusal } from './resource.js';
import { Session, TaskOwners, type PostAnswer } from './session.js';
import { routingHeadersOf } from './upstream.js';

export const SUPPORTED_REVISIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28'];
/** A POST body larger than this is 413. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** A session nobody used for this long is ended (stateful), or its channel closed (stateless). */
const SESSION_IDLE_MS = 30 * 60_000;
const CHANNEL_IDLE_MS = 5 * 60_000;

export interface GatewayState {
  sessions: Map<string, Session>;
  /** Stateless-era channels, by owner and server. */
  channels: Map<string, Session>;
  /** Set on SIGTERM: new sessions and calls are refused 503 while in-flight calls finish. */
  stopping: boolean;
}

export interface GatewayDeps {
  cfg: GatewayConfig;
  verifier: JwtVerifier;
  pdp: PdpClient;
  metrics: GatewayMetrics;
  log: (line: string) => void;
}

function jsonRpcError(status: number, code: number, message: string, id: unknown = null, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

function refusalResponse(r: Refusal): Response {
  return new Response(JSON.stringify({ error: { code: r.code, message: r.message } }), {
    status: r.status,
    headers: { 'content-type': 'application/json', ...r.headers },
  });
}

function answerResponse(a: PostAnswer, headers: Record<string, string>): Response {
  if (a.kind === 'accepted') return new Response(null, { status: 202, headers });
  if (a.kind === 'json') return new Response(a.body, { status: 200, headers: { ...headers, 'content-type': 'application/json' } });
  return new Response(a.stream, {
    status: 200,
    headers: { ...headers, 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive' },
  });
}

/** A 2026-07-28 routing header's value, its Base64 sentinel decoded; undefined when the sentinel is invalid. */
function decodeHeader(v: string): string | undefined {
  const m = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/.exec(v);
  if (!m) return v;
  try {
    return Buffer.from(m[1]!, 'base64').toString('utf8');
  } catch {
    return undefined;
  }
}

/** Why a stateless-era message's headers disagree with its body, or undefined. */
export function routingMismatch(msg: Record<string, unknown>, header: (name: string) => string | undefined): string | undefined {
  const revision = requestRevision(msg.params)!;
  const isRequest = 'id' in msg;
  const version = header('mcp-protocol-version');
  if (version === undefined) {
    if (isRequest) return 'the MCP-Protocol-Version header is required';
  } else if (version !== revision) return `the MCP-Protocol-Version header names ${version} but the body names ${revision}`;
  const expected = routingHeadersOf(msg);
  for (const [name, value] of Object.entries(expected)) {
    const sent = header(name);
    if (sent === undefined) {
      if (isRequest) return `the ${name === 'mcp-method' ? 'Mcp-Method' : 'Mcp-Name'} header is required`;
      continue;
    }
    const decoded = decodeHeader(sent);
    if (decoded === undefined) return `the ${name} header carries an invalid Base64 sentinel`;
    if (decoded !== decodeHeader(value))
      return `the ${name === 'mcp-method' ? 'Mcp-Method' : 'Mcp-Name'} header names ${JSON.stringify(decoded)} but the body names ${JSON.stringify(decodeHeader(value))}`;
  }
  if (expected['mcp-name'] === undefined && header('mcp-name') !== undefined && msg.method === 'tools/call')
    return 'the Mcp-Name header does not match the body';
  return undefined;
}

export function gatewayApp(deps: GatewayDeps, state: GatewayState): Hono {
  const { cfg, verifier, pdp, metrics, log } = deps;
  const app = new Hono();
  const tasks = new TaskOwners();
  const base = new URL(cfg.publicUrl).pathname.replace(/\/$/, '');

  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [id, s] of state.sessions) if (now - s.lastUsed > SESSION_IDLE_MS) void endSession(id, s);
    for (const [key, s] of state.channels)
      if (now - s.lastUsed > CHANNEL_IDLE_MS) {
        state.channels.delete(key);
        void s.drain().then(() => s.close());
      }
  }, 60_000);
  sweep.unref();

  async function endSession(id: string, s: Session): Promise<void> {
    state.sessions.delete(id);
    await s.drain();
    await s.close();
  }

  function newSession(name: string, who: ClientIdentity): Session {
    return new Session({
      server: name,
      spec: cfg.servers.get(name)!,
      owner: who.owner,
      token: who.token,
      pdp,
      callTimeoutMs: cfg.callTimeoutMs,
      log,
      tasks,
      ...(cfg.defaults ? { defaults: cfg.defaults } : {}),
      hooks: {
        callAnswered: (server, refusal) => metrics.calls.inc({ server, result: refusal ?? 'tool' }),
        upstreamLatency: (s) => metrics.upstreamLatency.observe({ server: name }, s),
      },
    });
  }

  const refuse = (r: Refusal): Response => {
    metrics.refusals.inc({ status: String(r.status), reason: r.reason });
    return refusalResponse(r);
  };

  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    const checks: Record<string, string> = {};
    const p = await pdp.request<unknown>('GET', '/readyz');
    checks.pdp = p.ok ? 'ok' : `unavailable: ${p.error.message}`;
    await Promise.all(
      [...cfg.servers].map(async ([name, spec]) => {
        if (spec.kind === 'stdio') {
          checks[name] = 'ok (stdio, started per session)';
          return;
        }
        try {
          // Any HTTP answer means the server is reachable (a GET without a session is often 400 or 405).
          const r = await fetch(spec.url, { method: 'GET', headers: { ...spec.headers, accept: 'text/event-stream' }, signal: AbortSignal.timeout(3_000) });
          await r.body?.cancel();
          checks[name] = r.status >= 500 ? `unavailable: HTTP ${r.status}` : 'ok';
        } catch (e) {
          checks[name] = `unavailable: ${(e as Error).message}`;
        }
      }),
    );
    const ready = !state.stopping && Object.values(checks).every((v) => v.startsWith('ok'));
    return c.json({ status: ready ? 'ready' : 'not ready', checks }, ready ? 200 : 503);
  });
  app.get('/metrics', async (c) => c.body(await metrics.registry.metrics(), 200, { 'content-type': metrics.registry.contentType }));

  app.get(`/.well-known/oauth-protected-resource${base}/mcp/:name`, (c) => {
    const name = c.req.param('name');
    if (!cfg.servers.has(name)) return c.json({ error: { code: 'NOT_FOUND', message: `no MCP server ${name}` } }, 404);
    return c.json(resourceMetadata(cfg, name), 200, { 'cache-control': 'max-age=300' });
  });

  app.all(`${base}/mcp/:name`, async (c) => {
    const name = c.req.param('name');
    if (!cfg.servers.has(name)) return c.json({ error: { code: 'NOT_FOUND', message: `no MCP server ${name}` } }, 404);
    const bad = originRefusal(cfg, c.req.header('origin'));
    if (bad) return refuse(bad);
    const who = await authenticateClient(cfg, verifier, name, c.req.header('authorization'));
    if ('status' in who) return refuse(who);
    const version = c.req.header('mcp-protocol-version');
    if (version !== undefined && !SUPPORTED_REVISIONS.includes(version)) {
      return jsonRpcError(400, -32000, `Bad Request: unsupported MCP-Protocol-Version ${version.slice(0, 40)} (supported: ${SUPPORTED_REVISIONS.join(', ')})`);
    }
    const sessionId = c.req.header('mcp-session-id');
    /** The session this id names for this caller, or a 404 (unknown here, or another identity's). */
    const ownSession = (): Session | Response => {
      const s = state.sessions.get(sessionId!);
      if (!s || s.owner !== who.owner || s.server !== name) return jsonRpcError(404, -32001, 'Session not found');
      if (s.upstreamGone) {
        // Its upstream is gone (calls in flight were answered as unknown): the client opens a new session.
        void endSession(s.id, s);
        return jsonRpcError(404, -32001, 'Session not found: its upstream session ended');
      }
      return s;
    };
    switch (c.req.method) {
      case 'POST':
        return post(c, name, who, sessionId, ownSession);
      case 'GET': {
        if (sessionId === undefined) return new Response(null, { status: 405, headers: { allow: 'POST, DELETE' } });
        const s = ownSession();
        if (s instanceof Response) return s;
        const stream = s.openGet();
        if (!stream) return jsonRpcError(409, -32000, 'Conflict: this session already has a GET stream open');
        return new Response(stream, {
          status: 200,
          headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', 'mcp-session-id': s.id },
        });
      }
      case 'DELETE': {
        if (sessionId === undefined) return jsonRpcError(400, -32000, 'Bad Request: Mcp-Session-Id header is required');
        const s = ownSession();
        if (s instanceof Response) return s;
        await endSession(s.id, s);
        return new Response(null, { status: 200 });
      }
      default:
        return new Response(null, { status: 405, headers: { allow: 'GET, POST, DELETE' } });
    }
  });

  async function post(c: Context, name: string, who: ClientIdentity, sessionId: string | undefined, ownSession: () => Session | Response): Promise<Response> {
    const type = c.req.header('content-type') ?? '';
    if (!/^application\/json\s*(;|$)/i.test(type)) return jsonRpcError(415, -32000, 'Unsupported Media Type: a POST carries application/json');
    const length = Number(c.req.header('content-length') ?? 0);
    if (length > MAX_BODY_BYTES) return jsonRpcError(413, -32000, `Payload Too Large: at most ${MAX_BODY_BYTES} bytes`);
    const text = await c.req.text();
    if (Buffer.byteLength(text) > MAX_BODY_BYTES) return jsonRpcError(413, -32000, `Payload Too Large: at most ${MAX_BODY_BYTES} bytes`);
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      return jsonRpcError(400, -32700, 'Parse error: the body is not JSON');
    }
    const messages = Array.isArray(msg) ? msg : [msg];
    if (messages.length === 0 || !messages.every(isObject))
      return jsonRpcError(400, -32600, 'Invalid Request: a POST carries a JSON-RPC message or a batch of them');
    if (state.stopping) return jsonRpcError(503, -32000, 'Service Unavailable: the gateway is shutting down', null, { 'retry-after': '1' });

    const modern = messages.filter((m) => (requestRevision(m.params) ?? '') >= FIRST_STATELESS_REVISION);
    if (modern.length > 0) {
      if (messages.length > 1) return jsonRpcError(400, -32600, 'Invalid Request: stateless (2026-07-28) messages are sent one per POST');
      const m = messages[0] as Record<string, unknown>;
      const mismatch = routingMismatch(m, (h) => c.req.header(h));
      if (mismatch) return jsonRpcError(400, -32020, `Header mismatch: ${mismatch}`, 'id' in m ? m.id : null);
      const key = `${who.owner}\n${name}`;
      let channel = state.channels.get(key);
      if (!channel || channel.closed || channel.upstreamGone) state.channels.set(key, (channel = newSession(name, who)));
      return answerResponse(await channel.post(text, msg, who.token), {});
    }

    const initialize = messages.some((m) => m.method === 'initialize');
    if (initialize) {
      if (sessionId !== undefined) return jsonRpcError(400, -32600, 'Invalid Request: initialize opens a session; it is sent without Mcp-Session-Id');
      if (messages.length > 1) return jsonRpcError(400, -32600, 'Invalid Request: initialize is sent alone');
      const s = newSession(name, who);
      state.sessions.set(s.id, s);
      const answer = await s.post(text, msg, who.token);
      if (answer.kind === 'json' && /"error"\s*:/.test(answer.body) && !/"result"\s*:/.test(answer.body)) {
        // The upstream refused to initialize: no session is left behind.
        void endSession(s.id, s);
        return answerResponse(answer, {});
      }
      return answerResponse(answer, { 'mcp-session-id': s.id });
    }
    if (sessionId === undefined) return jsonRpcError(400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    const s = ownSession();
    if (s instanceof Response) return s;
    return answerResponse(await s.post(text, msg, who.token), {});
  }

  return app;
}
