/**
 * The HTTP shell (Hono): authentication, roles, body limits and media types, the contract's error
 * shape, and the mapping of routes onto the Sidecar's handlers. No decision logic lives here.
 */
import { Hono, type Context } from 'hono';
import { WritError, isWritError } from '../errors.js';
import { requireRole, type Authenticator } from './auth.js';
import type { Caller } from '../identity/caller.js';
import { delegatedCaller } from '../identity/delegation.js';
import { certificateCallerOf } from './client-certs.js';
import type { Role } from '../config/config.js';
import type { Sidecar } from '../server/sidecar.js';
import { parseUidKey, uidKey, type Uid } from '../util/uid.js';
import { parseLossless, toPlain } from '../binding/index.js';
import { buildOpenApi } from '../schemas/openapi.js';
import { LEDGER_RECORD_KINDS } from '../schemas/load.js';
import * as metrics from '../metrics/metrics.js';
import { allowedMethods, rawPathOf, undecodableSegment } from './paths.js';
import { isJsonMediaType } from './media-type.js';
import { echoedRequestId } from './request-id.js';
import { countAnswer, countRefusal } from './answer-metrics.js';
import { registerConsoleRoutes } from '../console/routes.js';
import { AUTHZEN_EVALUATION_PATH, AUTHZEN_EVALUATIONS_PATH, registerAuthzenRoutes } from '../authzen/routes.js';
import { CallerGate, callerKey, fairnessOf, retryAfterOf } from './fairness.js';
import { carriesLedgerData, NO_STORE_HEADERS } from './no-store.js';
import * as log from '../log/log.js';
import { visibleTools } from '../server/tool-visibility.js';
import { logVkey, type CheckpointNotes } from '../checkpoints/notes.js';
import { NOTE_MEDIA_TYPE, registerTransparencyRoutes, tlogProofOf } from '../checkpoints/routes.js';

/** schemas/defs.json executionId: `.` and `..` are dot segments, which a URL parser removes from a path. */
const EXECUTION_ID = /^(?!\.\.?$)[A-Za-z0-9._:-]{1,128}$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

type Env = { Variables: { caller: Caller } };

export interface AppOptions {
  sidecar: Sidecar;
  /** Static tokens, JWT issuers and client certificates (src/http/auth.ts). */
  auth: Authenticator;
  maxBodyBytes: number;
  /** False while shutting down or when the store cannot write. */
  ready: () => Promise<boolean>;
  /** `http://host:port` the sidecar listens on, once it does (absolute URLs for requests without a Host header). */
  publicOrigin?: () => string | undefined;
  /** The configured `public_url`: AuthZEN discovery names it rather than the request's Host. */
  publicUrl?: string;
  /** The ledger as C2SP signed notes and tiles (docs/protocol.md §16). */
  notes?: CheckpointNotes;
  /** `public_tiles`: tiles need no token. */
  publicTiles?: boolean;
}

function errorResponse(c: Context, e: WritError): Response {
  // RFC 6750 §3: a 401 names the scheme the client must use, and why a token sent was refused.
  if (e.status === 401) c.header('WWW-Authenticate', (e.details as { wwwAuthenticate?: string } | undefined)?.wwwAuthenticate ?? 'Bearer');
  const retryAfter = retryAfterOf(e);
  if (retryAfter !== undefined) c.header('Retry-After', retryAfter);
  return c.json(e.toBody(), e.status as 400);
}

/** The error a body read fails with when the client closed the connection before the body ended. */
function clientWentAway(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e !== null && typeof e === 'object' && (e.message === 'aborted' || e.code === 'ECONNRESET');
}

/** Reads the body through the web Request (the path when there is no Node request, e.g. `app.request`). */
async function readWebBody(c: Context, maxBytes: number): Promise<{ chunks: Uint8Array[]; size: number } | undefined> {
  const body = c.req.raw.body;
  if (!body) return undefined;
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new WritError('PAYLOAD_TOO_LARGE', `the body exceeds ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return { chunks, size };
}

/** Reads a JSON request body as text: size limit (413), media type (415), strict UTF-8 (400). */
async function readJsonText(c: Context, maxBytes: number, optional = false): Promise<string> {
  const declared = Number(c.req.header('content-length') ?? NaN);
  if (declared > maxBytes) throw new WritError('PAYLOAD_TOO_LARGE', `the body exceeds ${maxBytes} bytes`);
  const type = c.req.header('content-type');
  // Performance: with a declared length (what every PEP sends) the body is read in one go
  // by @hono/node-server's direct path (Request.arrayBuffer straight from the socket). Reading
  // `c.req.raw.body` instead makes it build an undici Request, an AbortSignal and a web
  // ReadableStream per request — about 9 % of the server's CPU per decision in the profile. The
  // body cannot exceed its declared length (Node's parser frames it), so the limit above holds;
  // a body without a length (chunked) still goes through the stream with the limit checked per chunk.
  let read: { chunks: Uint8Array[]; size: number } | undefined;
  if (Number.isSafeInteger(declared) && declared >= 0) {
    const whole = new Uint8Array(await c.req.raw.arrayBuffer());
    read = { chunks: [whole], size: whole.byteLength };
  } else {
    read = await readWebBody(c, maxBytes);
  }
  if (!read) {
    if (optional) return '';
    throw new WritError('INVALID_JSON', 'the request body is empty');
  }
  const { chunks, size } = read;
  if (size === 0 && optional) return '';
  if (!isJsonMediaType(type)) {
    throw new WritError('UNSUPPORTED_MEDIA_TYPE', 'send the body as application/json');
  }
  const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
  try {
    return utf8.decode(bytes);
  } catch {
    throw new WritError('INVALID_JSON', 'the body is not valid UTF-8');
  }
}

function intParam(c: Context, name: string, fallback?: number): number {
  const raw = c.req.query(name);
  if (raw === undefined || raw === '') {
    if (fallback !== undefined) return fallback;
    throw new WritError('INVALID_REQUEST', `query parameter ${name} is required`);
  }
  if (!/^\d{1,15}$/.test(raw)) throw new WritError('INVALID_REQUEST', `query parameter ${name} must be a non-negative integer`);
  return Number(raw);
}

function actorParam(c: Context): Uid {
  const raw = c.req.query('actor');
  const uid = raw === undefined ? undefined : parseUidKey(raw);
  if (!uid) throw new WritError('INVALID_REQUEST', 'query parameter actor must be Type::"id" (URL-encoded)');
  return uid;
}

function executionIdParam(c: Context): string {
  const id = c.req.param('id') ?? '';
  if (!EXECUTION_ID.test(id)) throw new WritError('INVALID_REQUEST', 'execution ids are 1–128 characters of A-Za-z0-9._:-, and not . or ..');
  return id;
}

export function buildApp(o: AppOptions): Hono<Env> {
  const app = new Hono<Env>();
  const { sidecar, auth } = o;
  const store = sidecar.store;

  /** Every role the request's credential holds: its bearer token, else its verified client certificate. */
  // Once per request: the caller's share (below) and the route's role check read the same answer.
  const authenticated = new WeakMap<Context, Promise<Caller[]>>();
  const authenticate = (c: Context): Promise<Caller[]> => {
    let callers = authenticated.get(c);
    if (callers === undefined) authenticated.set(c, (callers = auth.authenticate(c.req.header('authorization'), certificateCallerOf(c))));
    return callers;
  };
  /** Authenticates and checks the role; the handler then runs with c.get('caller'). */
  const roles =
    (...allowed: Role[]) =>
    async (c: Context<Env>, next: () => Promise<void>) => {
      c.set('caller', requireRole(await authenticate(c), allowed));
      await next();
    };

  app.onError((err, c) => {
    if (isWritError(err)) {
      countRefusal(err);
      return errorResponse(c, err);
    }
    // Anything unexpected is a refusal, never an allow and never a bare 500 page. A client gone
    // before its body ended is not unexpected: nobody will read the answer, and nothing to log.
    if (!clientWentAway(err)) log.error(`writ: unexpected error on ${c.req.method} ${c.req.path}: ${(err as Error)?.stack ?? err}`);
    const refusal = new WritError('STORE_UNAVAILABLE', 'the sidecar could not complete the request', { status: 503 });
    countRefusal(refusal, { logged: true });
    return errorResponse(c, refusal);
  });
  app.notFound((c) => {
    // A known path asked with a method it does not answer is 405 with `Allow`, not 404.
    const allow = allowedMethods(app.routes, c.req.path);
    // A route that answers this method but has nothing at this path (a console file that does not exist) is 404.
    if (allow.length && !allow.includes(c.req.method)) {
      const e = new WritError('METHOD_NOT_ALLOWED', `${c.req.path} answers ${allow.join(', ')}, not ${c.req.method}`);
      countRefusal(e);
      return c.json(e.toBody(), 405, { allow: allow.join(', ') });
    }
    const e = new WritError('NOT_FOUND', `no route ${c.req.method} ${c.req.path}`);
    countRefusal(e);
    return errorResponse(c, e);
  });
  // Every answer is counted by the route pattern that answered it (`/v1/executions/:id`), not its path,
  // so the series stay few; a path no route knows is `unmatched`.
  app.use('*', async (c, next) => {
    await next();
    const routes = c.req.matchedRoutes;
    let route = 'unmatched';
    for (let i = routes.length - 1; i >= 0; i--) {
      if (routes[i]!.method !== 'ALL') {
        route = routes[i]!.path;
        break;
      }
    }
    countAnswer(route, c.res.status);
  });
  // X-Request-ID is echoed on every answer, errors included (AuthZEN 1.0 asks it of its routes; a
  // PEP or a proxy can match any answer to its request the same way).
  app.use('*', async (c, next) => {
    const requestId = echoedRequestId(c.req.header('x-request-id'));
    if (requestId !== undefined) c.header('X-Request-ID', requestId);
    await next();
  });
  // Ledger and execution data is never cached by a proxy or browser (src/http/no-store.ts); set before
  // the route runs, so its errors carry it too.
  app.use('*', async (c, next) => {
    if (carriesLedgerData(c.req.path)) for (const [name, value] of Object.entries(NO_STORE_HEADERS)) c.header(name, value);
    await next();
  });
  // Every path segment must percent-decode to UTF-8, on every route (else Hono keeps the raw text).
  app.use('*', async (c, next) => {
    const bad = c.req.url.indexOf('%') < 0 ? undefined : undecodableSegment(rawPathOf(c.req.url));
    if (bad !== undefined) throw new WritError('INVALID_REQUEST', `path segment ${JSON.stringify(bad)} is not valid percent-encoded UTF-8`);
    await next();
  });
  // A query parameter given twice (`?actor=A&actor=B`) is refused, not read as its first value: a proxy
  // or gateway in front that reads the last one would check another request than the one writ serves.
  app.use('*', async (c, next) => {
    const q = c.req.url.indexOf('?');
    if (q >= 0) {
      const seen = new Set<string>();
      for (const name of new URLSearchParams(c.req.url.slice(q + 1)).keys()) {
        if (seen.has(name)) throw new WritError('INVALID_REQUEST', `query parameter ${name} is given more than once`);
        seen.add(name);
      }
    }
    await next();
  });

  // ── operations (no auth) ──
  app.get('/healthz', (c) => c.json({ ok: true }));
  // Health checks and scrapes answer within OPS_PROBE_MS even when the store hangs (a database frozen
  // or cut off): a store that cannot answer that fast is not ready, and /metrics falls back to the ledger
  // size last known here, so monitoring keeps working exactly when it is needed.
  app.get('/readyz', async (c) => {
    const ready = await settleWithin(o.ready(), OPS_PROBE_MS, false);
    const size = ready ? await settleWithin(Promise.resolve(store.size()), OPS_PROBE_MS, undefined) : undefined;
    // Not ready (e.g. the database is down): the size last known here, without asking the store again.
    const ok = ready && size !== undefined;
    return c.json({ ready: ok, policy_version: sidecar.engine.policyVersion, ledger_size: size ?? store.knownSize() }, ok ? 200 : 503);
  });
  app.get('/metrics', async (c) => {
    metrics.ledgerRecords.set((await settleWithin(Promise.resolve(store.size()), OPS_PROBE_MS, undefined)) ?? store.knownSize());
    return c.body(await metrics.renderMetrics(), 200, { 'content-type': metrics.metricsContentType });
  });
  const openapi = JSON.stringify(buildOpenApi());
  app.get('/openapi.json', (c) => c.body(openapi, 200, { 'content-type': 'application/json' }));
  // The auditor console (§11): a static page; its data calls carry the auditor token.
  registerConsoleRoutes(app, { tokens: { authenticate: (header) => auth.authenticate(header) } });
  if (o.notes) registerTransparencyRoutes(app, { notes: o.notes, store, publicTiles: o.publicTiles ?? false, auditor: roles('auditor') });

  // ── a caller's share (src/http/fairness.ts) ──
  // Every request that evaluates policy enters the caller's share before its body is read, and leaves it
  // once answered. Unauthenticated requests pass on to their route, which refuses them.
  const fairness = fairnessOf(sidecar.config);
  const gate = new CallerGate({ maxInFlight: fairness.callerMaxInFlight, maxInFlightBytes: fairness.callerMaxInFlightBytes });
  const share = async (c: Context<Env>, next: () => Promise<void>) => {
    let caller: Caller | undefined;
    try {
      caller = (await authenticate(c))[0];
    } catch {
      return next();
    }
    if (caller === undefined) return next();
    const declared = Number(c.req.header('content-length') ?? NaN);
    // A body without a declared length may be as large as the limit allows: it weighs that much.
    const bytes = Number.isSafeInteger(declared) && declared >= 0 ? Math.min(declared, o.maxBodyBytes) : o.maxBodyBytes;
    const leave = gate.enter(callerKey(caller), bytes);
    try {
      await next();
    } finally {
      leave();
    }
  };
  for (const path of ['/v1/decisions', AUTHZEN_EVALUATION_PATH, AUTHZEN_EVALUATIONS_PATH]) app.post(path, share);

  // ── decisions and executions ──
  app.post('/v1/decisions', roles('pep'), async (c) => {
    const text = await readJsonText(c, o.maxBodyBytes);
    return c.json(await sidecar.decide(await delegatedCaller(c.get('caller'), text, auth.jwt), text));
  });
  // The reconciliation queue (§17): who owns each stuck or unknown execution can list it.
  app.get('/v1/executions', roles('reconciler', 'auditor'), async (c) => {
    const state = c.req.query('state');
    if (state !== 'unknown' && state !== 'invoking') throw new WritError('INVALID_REQUEST', 'query parameter state must be unknown or invoking');
    const limit = intParam(c, 'limit', 100);
    if (limit < 1 || limit > 1000) throw new WritError('INVALID_REQUEST', 'query parameter limit must be from 1 to 1000');
    const olderThan = c.req.query('older_than_s');
    const from = c.req.query('from');
    return c.json(
      await sidecar.queue(state, {
        limit,
        ...(olderThan !== undefined ? { olderThanS: intParam(c, 'older_than_s') } : {}),
        ...(from !== undefined && from !== '' ? { from } : {}),
      }),
    );
  });
  app.get('/v1/executions/:id', roles('pep', 'auditor', 'approver'), async (c) => {
    const caller = c.get('caller');
    // A delegated pep speaks for many actors: it names the one it asks about, as an auditor does.
    const actor = caller.role === 'pep' && caller.delegated === undefined ? caller.actor! : actorParam(c);
    // An approver reads what it is asked to approve (§17): an execution one of whose decisions needed its group.
    return c.json(await sidecar.getExecution(actor, executionIdParam(c), caller.role === 'approver' ? caller.principal! : undefined));
  });
  app.post('/v1/executions/:id/outcome', roles('pep'), async (c) => {
    const id = executionIdParam(c);
    const text = await readJsonText(c, o.maxBodyBytes);
    // A delegated pep reports for the actor its end user's identity_token names (docs/protocol.md §13).
    return c.json(await sidecar.outcome(await delegatedCaller(c.get('caller'), text, auth.jwt), id, text));
  });
  app.post('/v1/executions/:id/reconcile', roles('reconciler'), async (c) => {
    const id = executionIdParam(c);
    const actor = actorParam(c);
    return c.json(await sidecar.reconcile(actor, id, await readJsonText(c, o.maxBodyBytes), c.get('caller')));
  });
  app.post('/v1/executions/:id/confirm', roles('reconciler'), async (c) => {
    const id = executionIdParam(c);
    const actor = actorParam(c);
    return c.json(await sidecar.confirm(actor, id, await readJsonText(c, o.maxBodyBytes), c.get('caller')));
  });
  app.post('/v1/executions/:id/events', roles('pep'), async (c) => {
    const id = executionIdParam(c);
    const text = await readJsonText(c, o.maxBodyBytes);
    return c.json(await sidecar.events(await delegatedCaller(c.get('caller'), text, auth.jwt), id, text));
  });

  // ── tool lists (docs/protocol.md §15): nothing is ledgered ──
  app.post('/v1/tools/visible', roles('pep'), async (c) => {
    const text = await readJsonText(c, o.maxBodyBytes);
    return c.json(visibleTools(sidecar.engine, sidecar.entities, await delegatedCaller(c.get('caller'), text, auth.jwt), text));
  });

  // ── AuthZEN Authorization API 1.0 (docs/protocol.md §10) ──
  registerAuthzenRoutes(app, {
    core: sidecar.core,
    authenticate,
    readBody: (c) => readJsonText(c, o.maxBodyBytes),
    ...(o.publicOrigin ? { publicOrigin: o.publicOrigin } : {}),
    ...(o.publicUrl ? { publicUrl: o.publicUrl } : {}),
  });

  // ── approvals ──
  app.get('/v1/approvals/pending', roles('approver'), async (c) => c.json(await sidecar.pendingApprovals(c.get('caller'))));
  app.post('/v1/approvals', roles('approver'), async (c) => {
    return c.json(await sidecar.approve(c.get('caller'), await readJsonText(c, o.maxBodyBytes)), 201);
  });
  app.post('/v1/approvals/:id/revoke', roles('approver'), async (c) => {
    // No body is needed; one that is sent must still be a JSON object (its members are not read).
    const text = await readJsonText(c, o.maxBodyBytes, true);
    if (text.trim() !== '') {
      const body = toPlain(parseLossless(text));
      if (body === null || typeof body !== 'object' || Array.isArray(body))
        throw new WritError('INVALID_REQUEST', 'a revocation body, when sent, is a JSON object', { path: '' });
    }
    return c.json(await sidecar.revoke(c.get('caller'), c.req.param('id') ?? ''));
  });

  // ── trusted facts ──
  app.put('/v1/entities/:type/:id', roles('admin'), async (c) => {
    return c.json(await sidecar.putEntity(c.get('caller'), c.req.param('type') ?? '', c.req.param('id') ?? '', await readJsonText(c, o.maxBodyBytes)));
  });
  app.get('/v1/entities/:type/:id', roles('admin', 'auditor'), async (c) =>
    c.json(await sidecar.getEntity(c.req.param('type') ?? '', c.req.param('id') ?? '')),
  );

  // ── the ledger (auditor only) ──
  app.get('/v1/ledger/records', roles('auditor'), async (c) => {
    const q: { from: number; limit: number; kind?: string; actor?: string; execution_id?: string; task_id?: string; trace_id?: string } = {
      from: intParam(c, 'from', 0),
      // Past 1000 a page is capped (`next` goes on from there); an empty page is not a request.
      limit: Math.min(intParam(c, 'limit', 100), 1000),
    };
    if (q.limit < 1) throw new WritError('INVALID_REQUEST', 'query parameter limit must be from 1 to 1000');
    const kind = c.req.query('kind');
    if (kind) {
      // A misspelt kind would otherwise list nothing, indistinguishable from a ledger without such records.
      if (!(LEDGER_RECORD_KINDS as readonly string[]).includes(kind)) {
        throw new WritError('INVALID_REQUEST', `kind must be one of ${LEDGER_RECORD_KINDS.join(', ')}`);
      }
      q.kind = kind;
    }
    const actor = c.req.query('actor');
    if (actor) {
      const uid = parseUidKey(actor);
      if (!uid) throw new WritError('INVALID_REQUEST', 'actor must be Type::"id"');
      // The uid as the store keys it: `Agent::"a\u002db"` names the same actor as `Agent::"a-b"`.
      q.actor = uidKey(uid);
    }
    const execution = c.req.query('execution_id');
    if (execution) q.execution_id = execution;
    // Correlation (§17): the decisions of one task, or of one trace (the envelope's traceparent).
    const task = c.req.query('task_id');
    if (task) q.task_id = task;
    const trace = c.req.query('trace_id');
    if (trace) {
      if (!/^[0-9a-f]{32}$/.test(trace)) throw new WritError('INVALID_REQUEST', 'trace_id is 32 lower-case hex digits (the trace id of a traceparent)');
      q.trace_id = trace;
    }
    return c.json(await store.listRecords(q));
  });
  app.get('/v1/ledger/records/:seq', roles('auditor'), async (c) => {
    const raw = c.req.param('seq') ?? '';
    // A seq is a whole number (§8: a malformed path segment is 400); a well-formed one past the end is 404.
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw)))
      throw new WritError('INVALID_REQUEST', `a record seq is a whole number from 0, not ${JSON.stringify(raw)}`);
    const record = await store.getRecord(Number(raw));
    if (!record) throw new WritError('NOT_FOUND', `no record ${raw}`);
    return c.json(record);
  });
  app.get('/v1/ledger/checkpoint', roles('auditor'), async (c) => {
    const cp = await store.latestCheckpoint();
    if (!cp) throw new WritError('NOT_FOUND', 'no checkpoint has been written yet');
    return c.json(cp);
  });
  app.get('/v1/ledger/keys', roles('auditor'), async (c) => {
    const keys = await store.keys();
    const notes = o.notes;
    return c.json({ keys: notes ? keys.map((k) => ({ ...k, vkey: logVkey(notes.origin, k.public_key) })) : keys });
  });
  app.get('/v1/ledger/proofs/inclusion', roles('auditor'), async (c) => {
    const format = c.req.query('format');
    if (format !== undefined && format !== 'json' && format !== 'tlog-proof') throw new WritError('INVALID_REQUEST', 'format must be json or tlog-proof');
    if (format === 'tlog-proof') {
      if (!o.notes) throw new WritError('NOT_FOUND', 'this sidecar serves no signed notes');
      if (c.req.query('size') !== undefined) throw new WritError('INVALID_REQUEST', 'a tlog-proof is for the latest checkpoint: leave size out');
      return c.body(await tlogProofOf({ notes: o.notes, store }, intParam(c, 'seq')), 200, { 'content-type': NOTE_MEDIA_TYPE });
    }
    const seq = intParam(c, 'seq');
    const committed = await store.size();
    const size = intParam(c, 'size', committed);
    if (size > committed || seq >= size) throw new WritError('INVALID_REQUEST', `need seq < size <= ${committed}`);
    return c.json({ seq, size, leaf: (await store.getRecord(seq))!.hash, root: await store.root(size), path: await store.inclusionProof(seq, size) });
  });
  app.get('/v1/ledger/proofs/consistency', roles('auditor'), async (c) => {
    const from = intParam(c, 'from');
    const committed = await store.size();
    const to = intParam(c, 'to', committed);
    if (from < 1 || from > to || to > committed) throw new WritError('INVALID_REQUEST', `need 1 <= from <= to <= ${committed}`);
    return c.json({ from, to, from_root: await store.root(from), to_root: await store.root(to), path: await store.consistencyProof(from, to) });
  });
  app.get('/v1/ledger/export', roles('auditor'), async (c) => {
    const from = intParam(c, 'from', 0);
    const committed = await store.size();
    const to = intParam(c, 'to', committed);
    const source = store.exportLines(from, Math.min(to, committed));
    // LMDB gives a synchronous iterator (no await per line); a shared store pages asynchronously.
    const lines: Iterator<string> | AsyncIterator<string> = Symbol.asyncIterator in source ? source[Symbol.asyncIterator]() : source[Symbol.iterator]();
    const encoder = new TextEncoder();
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        // Batches of lines per chunk keep memory flat for exports of millions of records.
        let chunk = '';
        for (let i = 0; i < 512; i++) {
          const pending = lines.next();
          const next = pending instanceof Promise ? await pending : pending;
          if (next.done) {
            if (chunk) controller.enqueue(encoder.encode(chunk));
            controller.close();
            return;
          }
          chunk += `${next.value}\n`;
        }
        controller.enqueue(encoder.encode(chunk));
      },
    });
    return c.body(stream, 200, { 'content-type': 'application/x-ndjson' });
  });

  return app;
}

/** How long /readyz and /metrics wait for the store. */
const OPS_PROBE_MS = 2000;

/** The promise's value if it settles within `ms` and fulfils; `fallback` if it rejects or is slower. */
async function settleWithin<T, F>(p: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p.catch(() => fallback), new Promise<F>((resolve) => (timer = setTimeout(() => resolve(fallback), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
