/**
 * An HTTP front thread: one of several threads that accept the sidecar's connections on
 * the same port (SO_REUSEPORT), so HTTP parsing, admission, Cedar and the canonical text of a decision
 * record use every core, while the main thread stays the one ledger writer.
 *
 * A front decides nothing on its own authority. It takes the fast path only for the hot request — a
 * `POST /v1/decisions` from an authenticated `pep` with a declared JSON body — and there it admits the
 * text, evaluates it (same engine, same policy set, the entities as last sent by the sidecar, its own
 * decision memo) and hands the prepared record to the sidecar, which commits it only if the execution
 * id is still fresh and the policy set and entities are still the ones used (else it decides the text
 * again itself). The answer goes out only after the sidecar's durable commit. AuthZEN evaluations take
 * the same road. Every other request — other routes, any doubt — is answered by the sidecar's own app
 * (src/http/app.ts), served here over a backend whose services are calls by message to the sidecar
 * (backend-calls.ts), so every route, refusal and error answers exactly as it does without fronts.
 */
import type http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createPublicServer } from '../http/tls.js';
import type { ListenOptions } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import { isWritError, WritError } from '../errors.js';
import { Authenticator, bearerOf, TokenTable } from '../http/auth.js';
import type { Caller } from '../identity/caller.js';
import { CallerGate, callerKey, retryAfterOf } from '../http/fairness.js';
import { NO_STORE_HEADERS } from '../http/no-store.js';
import { socketCaller } from '../http/client-certs.js';
import { delegatedCaller } from '../identity/delegation.js';
import { JwtVerifier, looksLikeJwt } from '../identity/verify.js';
import { RelayedKeys } from '../identity/jwks-cache.js';
import { closeAfterAnswer } from '../http/linger.js';
import { isJsonMediaType } from '../http/media-type.js';
import { echoRequestId } from '../http/request-id.js';
import { cutSlowClients, refusedRequestTarget, reportUnroutedAnswersTo, singleHeader, UNROUTED, withoutDotSegments } from '../http/request-target.js';
import { closeGracefully } from '../http/graceful-close.js';
import { PolicyEngine } from '../policy/engine.js';
import { EvaluatorPool } from '../policy/evaluator-pool.js';
import { evaluationTally } from '../policy/memo.js';
import { StaticEntitySource, type EntitySource } from '../policy/entities.js';
import type { DecisionResponse, PendingDecisionResult, PendingDecision } from '../pdp/admission.js';
import { prepareDecision, frontDecisionAnswer, type FrontDecision } from './prepare.js';
import type { AuthzenAsk, FrontAsk, FrontStart, FromFront, SidecarAnswer, ToFront } from './protocol.js';
import type { BackendCall } from './backend-calls.js';
import { admitAuthzen, AUTHZEN_EVALUATION_PATH, AUTHZEN_EVALUATIONS_PATH, evaluateItems, requestInputOf, type PendingAuthzen } from '../authzen/request.js';
import { pdpNow } from '../pdp/admission.js';
import { presealAuthzenRecords } from '../authzen/records.js';
import { frontThreadsSupported } from './node-version.js';

/**
 * The link to the sidecar: a worker thread's port, or — a front process forked by node:cluster, where
 * Node has no SO_REUSEPORT — the process's IPC channel, whose first message is the start data.
 */
interface Link {
  post(message: FromFront): void;
  onMessage(listener: (m: ToFront) => void): void;
}
/**
 * A process's IPC messages that arrive before the front has installed its listener (it first builds its
 * engine from the start data): a message with no listener would be lost, so one listener is installed
 * at once, takes the start data, and holds what follows until `onMessage` (only one is installed).
 */
let startReceived: ((data: FrontStart) => void) | undefined;
let processListener: ((m: ToFront) => void) | undefined;
const heldMessages: ToFront[] = [];
if (!parentPort) {
  process.on('message', (m: ToFront | { type: 'start'; data: FrontStart }) => {
    if (startReceived !== undefined) {
      if ((m as { type?: string })?.type !== 'start') return; // nothing else is sent before the start data
      const resolve = startReceived;
      startReceived = undefined;
      resolve((m as { data: FrontStart }).data);
    } else if (processListener !== undefined) processListener(m as ToFront);
    else heldMessages.push(m as ToFront);
  });
}
const link: Link = parentPort
  ? { post: (m) => parentPort!.postMessage(m), onMessage: (l) => parentPort!.on('message', l) }
  : {
      post: (m) => process.send!(m),
      onMessage: (l) => {
        processListener = l;
        for (const m of heldMessages.splice(0)) l(m);
      },
    };
if (!parentPort) {
  process.on('disconnect', () => process.exit(0)); // the sidecar is gone: so is this front
  // A terminal's Ctrl-C (or a group-wide SIGTERM) reaches every process of the group: a front process
  // leaves its shutdown to the sidecar, which first lets it answer what it holds (the `close` message).
  process.on('SIGINT', () => undefined);
  process.on('SIGTERM', () => undefined);
}
// A process asks for its start data once it listens for it: IPC messages sent before a listener exists are lost.
const start: FrontStart = parentPort
  ? (workerData as FrontStart)
  : await new Promise<FrontStart>((resolve) => {
      startReceived = resolve;
      process.send!({ type: 'hello' });
    });
// Each front verifies JWT callers itself, with a key cache of its own (as each replica does).
// Each front verifies JWT callers itself; their keys come from the sidecar's one cache, so an issuer is
// fetched from at most once per 30 s for the whole process, however many fronts ask.
const relayedKeys = new RelayedKeys(async (issuer, kid) => {
  const a = await ask({ jwks: { issuer, kid } });
  if ('error' in a) throw new Error((a.error.body as { error?: { message?: string } })?.error?.message ?? 'the keys cannot be had');
  if (!('jwks' in a.ok)) unreachable();
  return a.ok.jwks;
});
const auth = new Authenticator(
  new TokenTable(start.tokens),
  start.jwtIssuers.length > 0 ? new JwtVerifier(start.jwtIssuers, { keys: relayedKeys }) : undefined,
);
const utf8 = new TextDecoder('utf-8', { fatal: true });

let engine = new PolicyEngine(start.policy, { memoSize: start.memoSize });
// Cedar misses run beside the front (memo hits are answered here, before any hop): the front's own
// event loop is then left to HTTP, admission and the record's canonical text.
const evaluator = new EvaluatorPool(start.evaluatorThreads, { deadlineMs: start.fairness.evaluationDeadlineMs });
/** Callers' shares of this front's work (src/http/fairness.ts); the sidecar's own app holds its own. */
const gate = new CallerGate({ maxInFlight: start.fairness.callerMaxInFlight, maxInFlightBytes: start.fairness.callerMaxInFlightBytes });
evaluator.register(engine, start.policy);
let entities = entitySourceOf(start.entities.version, start.entities.list);

function entitySourceOf(version: string, list: FrontStart['entities']['list']): EntitySource {
  const source = new StaticEntitySource(list);
  // The sidecar's version of the same set (computed the same way); carried, not recomputed.
  return { get: (key: string) => source.get(key), version };
}

// ── the sidecar, across the thread boundary ──────────────────────────────────────────────────────

let nextAskId = 0;
/** Asks waiting for the sidecar, oldest first (a Map keeps insertion order), with when each was made. */
const waiting = new Map<number, { resolve(a: SidecarAnswer): void; at: number; call: boolean }>();

/**
 * An ask the sidecar has not answered within ASK_DEADLINE_MS is answered 503 STORE_UNAVAILABLE here. The
 * ledger writer commits on its own thread and fsyncs there, so a disk that hangs in fsync holds that
 * thread — and its own write timeout (10 s) cannot fire. The request is then refused (fail closed), with
 * the same meaning as a write timeout: whether it was recorded is known only from a later read.
 */
const ASK_DEADLINE_MS = 15_000;
setInterval(() => {
  const now = performance.now();
  for (const [id, w] of waiting) {
    if (now - w.at < ASK_DEADLINE_MS) break;
    waiting.delete(id);
    const refusal = new WritError(
      'STORE_UNAVAILABLE',
      `the ledger writer did not answer within ${ASK_DEADLINE_MS / 1000} s; whether the request was recorded is unknown until a later read`,
    );
    w.resolve({ id, error: { status: refusal.status, body: refusal.toBody() } });
    // A refusal the client got; its request is counted by route when the writer gets to it (a call's by the app that made it).
    if (!w.call) post({ type: 'refused', status: refusal.status, code: refusal.code, message: refusal.message });
  }
}, 1000).unref();
let outbox: FrontAsk[] = [];

function post(message: FromFront): void {
  link.post(message);
}

/**
 * Asks travel in small batches: at the end of the event-loop turn, or as soon as ASK_BATCH are ready.
 * A whole turn's worth (up to every open connection's request) held back until the last is prepared
 * would keep the writer idle meanwhile; small batches let the writer commit while the front prepares.
 */
const ASK_BATCH = 8;
function ask(
  a:
    | { pending: PendingDecision }
    | { decide: { caller: Caller; text: string } }
    | { authzen: AuthzenAsk }
    | { call: BackendCall }
    | { jwks: { issuer: string; kid: string } },
): Promise<SidecarAnswer> {
  const id = nextAskId++;
  if (outbox.length === 0) setImmediate(flush);
  outbox.push({ id, ...a });
  const answer = new Promise<SidecarAnswer>((resolve) => waiting.set(id, { resolve, at: performance.now(), call: 'call' in a }));
  if (outbox.length >= ASK_BATCH) flush();
  return answer;
}

function flush(): void {
  if (outbox.length === 0) return;
  const batch = outbox;
  outbox = [];
  // Every evaluation behind this batch happened before it was posted: the tally is current with it.
  post({ type: 'asks', batch, tally: { ...evaluationTally } });
}

link.onMessage((m: ToFront) => {
  switch (m.type) {
    case 'answers':
      for (const a of m.batch) {
        const w = waiting.get(a.id);
        waiting.delete(a.id);
        w?.resolve(a);
      }
      return;
    case 'policy':
      engine = new PolicyEngine(m.bundle, { memoSize: start.memoSize });
      evaluator.register(engine, m.bundle);
      return;
    case 'entities':
      entities = entitySourceOf(m.version, m.list);
      return;
    case 'listen':
      listen();
      return;
    case 'close':
      closeServer();
      return;
  }
});

// ── HTTP ─────────────────────────────────────────────────────────────────────────────────────────

/** Every answer a front writes itself is to a `/v1/` or `/access/v1/` request: never cached (src/http/no-store.ts). */
function sendJson(res: ServerResponse, status: number, body: unknown, headers?: http.OutgoingHttpHeaders): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...NO_STORE_HEADERS, ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * The sidecar could not be reached or failed unexpectedly: the same refusal its own HTTP layer gives.
 * `route`: the route the front was answering, for the metrics (src/front/protocol.ts `refused`).
 */
function sendUnavailable(res: ServerResponse, route: string | undefined): void {
  const refusal = new WritError('STORE_UNAVAILABLE', 'the sidecar could not complete the request', { status: 503 });
  sendJson(res, refusal.status, refusal.toBody());
  post({ type: 'refused', route, status: refusal.status, code: refusal.code, message: refusal.message });
}

// Refusals answered before any route (request-target.ts) are counted by the sidecar, which serves /metrics.
reportUnroutedAnswersTo((status, code, message) => post({ type: 'refused', route: UNROUTED, status, code, message }));

/**
 * Refusals a front answers itself, as the sidecar would, rather than handing the text over to be judged
 * again: a body past the admission limits (parsing it once more on the ledger writer's thread is the
 * cost the limit exists to avoid) and an evaluation past its deadline (evaluating it again there would
 * be worse). Both are decided by the same settings as the sidecar's (FrontStart.fairness).
 */
const ANSWERED_HERE = new Set(['LIMIT_EXCEEDED', 'EVALUATION_TIMEOUT', 'RATE_LIMITED']);

function refuseHere(res: ServerResponse, route: string, e: WritError): void {
  const retryAfter = retryAfterOf(e);
  sendJson(res, e.status, e.toBody(), retryAfter === undefined ? undefined : { 'retry-after': retryAfter });
  post({ type: 'refused', route, status: e.status, code: e.code, message: e.message });
}

/** The refusal a front answers itself (ANSWERED_HERE), else undefined. */
function answeredHere(e: unknown): WritError | undefined {
  return isWritError(e) && ANSWERED_HERE.has(e.code) ? e : undefined;
}

function sendAnswer(res: ServerResponse, a: SidecarAnswer, build: (ok: PendingDecisionResult) => DecisionResponse): void {
  if ('error' in a) sendJson(res, a.error.status, a.error.body);
  else if ('authzen' in a.ok || 'called' in a.ok || 'jwks' in a.ok) unreachable();
  else sendJson(res, 200, build(a.ok));
}

/**
 * The caller a request's one Authorization header names as a static token, or undefined: none, an
 * unknown token, or the header sent twice (then the sidecar, which sees both, refuses it — never act on
 * the first alone).
 */
function knownCaller(req: IncomingMessage): Caller | undefined {
  try {
    return auth.staticCaller(singleHeader(req, 'authorization'));
  } catch {
    return undefined;
  }
}

/**
 * True when the request may authenticate otherwise than by a static token: a JWT the front can verify,
 * or no Authorization header on a connection whose client certificate named a caller.
 */
function mayVerify(req: IncomingMessage): boolean {
  let header: string | undefined;
  try {
    header = singleHeader(req, 'authorization');
  } catch {
    return false;
  }
  if (header === undefined) return socketCaller(req.socket) !== undefined;
  const token = bearerOf(header);
  return auth.jwt !== undefined && token !== undefined && looksLikeJwt(token);
}

/**
 * Every role the request's credential holds, or undefined when it fails (the sidecar, passed the
 * request, then refuses it with its own answer: a 401 with its challenge, a 503).
 */
async function verifiedCallers(req: IncomingMessage): Promise<Caller[] | undefined> {
  try {
    return await auth.authenticate(singleHeader(req, 'authorization'), socketCaller(req.socket));
  } catch {
    return undefined;
  }
}

/** The caller of a fast-path decision: a pep bound to an actor, or delegated (the actor comes per request). */
function pepCaller(callers: readonly Caller[] | undefined): Caller | undefined {
  return callers?.find((c) => c.role === 'pep' && (c.actor !== undefined || c.delegated !== undefined));
}

/** The caller of an AuthZEN evaluation the sidecar may answer by message: an `evaluator` or a `pep` (src/authzen/routes.ts). */
function authzenCaller(callers: readonly Caller[] | undefined): Caller | undefined {
  return callers?.find((c) => c.role === 'evaluator' || (c.role === 'pep' && c.delegated === undefined));
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.on('error', reject);
    // A client gone before its body ended: nothing to decide, nobody to answer.
    req.on('close', () => {
      if (!req.complete) reject(new Error('the client closed the connection before the body ended'));
    });
  });
}

/**
 * The body of a fast-path request as text; undefined when it has been dealt with otherwise: a client
 * gone before its body ended is dropped, a body that is not UTF-8 is refused as the app refuses it.
 */
async function readText(req: IncomingMessage, res: ServerResponse, route: string): Promise<string | undefined> {
  let bytes: Buffer;
  try {
    bytes = await readBody(req);
  } catch {
    res.destroy();
    return undefined;
  }
  try {
    return utf8.decode(bytes);
  } catch {
    refuseHere(res, route, new WritError('INVALID_JSON', 'the body is not valid UTF-8'));
    return undefined;
  }
}

async function decide(req: IncomingMessage, res: ServerResponse, pep: Caller): Promise<void> {
  const text = await readText(req, res, '/v1/decisions');
  if (text === undefined) return;
  const startedAt = performance.timeOrigin + performance.now();
  let caller: Caller;
  try {
    caller = await delegatedCaller(pep, text, auth.jwt);
  } catch (e) {
    if (!(e instanceof WritError)) throw e;
    // The end user's identity token failed a check (or its issuer's keys cannot be had): the sidecar's refusal, said here.
    const challenge = (e.details as { wwwAuthenticate?: string } | undefined)?.wwwAuthenticate ?? (e.status === 401 ? 'Bearer' : undefined);
    sendJson(res, e.status, e.toBody(), challenge ? { 'www-authenticate': challenge } : undefined);
    post({ type: 'refused', route: '/v1/decisions', status: e.status, code: e.code, message: e.message });
    return;
  }
  let prepared: FrontDecision | undefined;
  try {
    prepared = await prepareDecision(
      { engine, entities, clockFile: start.clockFile, limits: start.fairness.limits, evaluate: (e, input) => evaluator.evaluate(e, input) },
      caller,
      text,
      startedAt,
    );
  } catch (e) {
    const refusal = answeredHere(e);
    if (refusal !== undefined) return refuseHere(res, '/v1/decisions', refusal);
    prepared = undefined; // the sidecar decides it, and refuses it with the right code
  }
  if (prepared === undefined) {
    const a = await ask({ decide: { caller, text } });
    sendAnswer(res, a, (ok) => ('response' in ok ? ok.response : unreachable()));
    return;
  }
  const made = prepared;
  const a = await ask({ pending: made.ask });
  sendAnswer(res, a, (ok) => frontDecisionAnswer(made, ok));
}

function unreachable(): never {
  throw new Error('the sidecar answered with another kind of answer than was asked');
}

/**
 * An AuthZEN evaluation (docs/protocol.md §10): the sidecar evaluates and records it exactly as its own
 * route does (AuthzenService), handed the body by message (X-Request-ID is echoed by `handle`).
 */
async function authzen(req: IncomingMessage, res: ServerResponse, caller: Caller, batch: boolean): Promise<void> {
  const text = await readText(req, res, batch ? AUTHZEN_EVALUATIONS_PATH : AUTHZEN_EVALUATION_PATH);
  if (text === undefined) return;
  // Evaluated here, on this front's policy set, entities and evaluator threads; the sidecar only records
  // it (or evaluates it again if either moved). Any doubt — a refusal, an error — and the sidecar does it
  // all, so the answer is its own.
  let pending: PendingAuthzen | undefined;
  try {
    const request = admitAuthzen(caller, text, batch, start.fairness.limits);
    // This request's policy set and entities, whatever the sidecar sends meanwhile.
    const usedEngine = engine;
    const usedEntities = entities;
    const now = pdpNow(start.clockFile);
    const outcomes = await evaluateItems(request, (item) => evaluator.evaluateRequest(usedEngine, requestInputOf(item, usedEntities)));
    const evaluated = { policyVersion: usedEngine.policyVersion, entitiesVersion: usedEntities.version, now: now.toISOString() };
    // The records are canonicalised here too: the sidecar's one ledger writer only joins, hashes and commits them.
    pending = { single: request.single, outcomes, records: presealAuthzenRecords(request, outcomes, caller, evaluated), ...evaluated };
  } catch (e) {
    const refusal = answeredHere(e);
    if (refusal !== undefined) return refuseHere(res, batch ? AUTHZEN_EVALUATIONS_PATH : AUTHZEN_EVALUATION_PATH, refusal);
    pending = undefined;
  }
  const a = await ask({ authzen: { caller, text, batch, ...(pending ? { pending } : {}) } });
  if ('error' in a) sendJson(res, a.error.status, a.error.body);
  else if ('authzen' in a.ok) sendJson(res, 200, a.ok.authzen);
  else unreachable();
}

const AUTHZEN_PATHS = new Map([
  [AUTHZEN_EVALUATION_PATH, false],
  [AUTHZEN_EVALUATIONS_PATH, true],
]);

/** A declared JSON body within the limit: what the fast paths read themselves (else the sidecar refuses it). */
function declaredJson(req: IncomingMessage): boolean {
  const declared = Number(req.headers['content-length'] ?? NaN);
  const type = singleHeader(req, 'content-type');
  return Number.isSafeInteger(declared) && declared >= 0 && declared <= start.maxBodyBytes && isJsonMediaType(type);
}

/**
 * Enters the caller's share for a request this front evaluates, left when its answer is done; false
 * when the caller is over its share: answered 429 here, before its body is read (and the connection
 * closed after the answer, as the body that follows goes nowhere).
 */
function enterShare(req: IncomingMessage, res: ServerResponse, caller: Caller, route: string): boolean {
  let leave: () => void;
  try {
    leave = gate.enter(callerKey(caller), Number(req.headers['content-length']));
  } catch (e) {
    if (!isWritError(e)) throw e;
    closeAfterAnswer({ incoming: req, outgoing: res });
    refuseHere(res, route, e);
    return false;
  }
  res.once('close', leave);
  return true;
}

// ── the sidecar's app, for every request off the fast path ─────────────────────────────────────────

/**
 * The app, loaded once this front listens: its modules (Hono, every route) are not on the fast path, so
 * they do not delay the start; a request off the fast path that comes first waits for them.
 */
let app: Promise<(req: IncomingMessage, res: ServerResponse) => void> | undefined;
function loadApp(): Promise<(req: IncomingMessage, res: ServerResponse) => void> {
  app ??= (async () => {
    const [{ buildApp }, { appRequestListener }, { callingBackend, refusalOf }] = await Promise.all([
      import('../http/app.js'),
      import('../http/listener.js'),
      import('./backend-calls.js'),
    ]);
    /** A call of the app's backend, by message on the same link as the fast path's asks. */
    const callSidecar = async (call: BackendCall): Promise<unknown> => {
      const a = await ask({ call });
      if ('error' in a) throw refusalOf(a.error.status, a.error.body);
      if (!('called' in a.ok)) unreachable();
      return a.ok.called;
    };
    const built = buildApp({
      backend: callingBackend(callSidecar, start.app.notesOrigin),
      auth,
      maxBodyBytes: start.maxBodyBytes,
      fairness: start.fairness,
      // One share per caller on this front, whichever way its request goes.
      gate,
      publicOrigin: () => `${start.tls ? 'https' : 'http'}://${publicHost}`,
      ...(start.app.publicUrl ? { publicUrl: start.app.publicUrl } : {}),
      publicTiles: start.app.publicTiles,
      // The sidecar serves /metrics: what the app answers here is counted there.
      counts: {
        answer: (route, status) => post({ type: 'answered', route, status }),
        refusal: (e, opts) =>
          post({ type: 'refused', status: (e as WritError).status ?? 0, code: e.code, message: e.message, ...(opts?.logged ? { logged: true } : {}) }),
      },
    });
    return appRequestListener(built.fetch);
  })();
  return app;
}

function serveApp(req: IncomingMessage, res: ServerResponse): void {
  // An HTTP/1.0 request may come without Host: the app then takes the address this front listens on.
  if (req.headers.host === undefined) req.headers.host = publicHost;
  loadApp().then(
    (listener) => listener(req, res),
    () => sendUnavailable(res, UNROUTED),
  );
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  // The same request-line judgement as the sidecar's own listener (src/http/listener.ts).
  if (refusedRequestTarget(req, res)) return;
  // Echoed on every answer of this front, as the sidecar's app does on its own (src/http/request-id.ts).
  echoRequestId(req, res);
  const url = withoutDotSegments(req.url ?? '/');
  // Only a decision or an AuthZEN evaluation may take a fast path: anything else goes to the app at once.
  if (req.method !== 'POST' || (url !== '/v1/decisions' && !AUTHZEN_PATHS.has(url))) {
    serveApp(req, res);
    return;
  }
  const known = knownCaller(req);
  // A static token is looked up at once; a JWT or a client certificate is verified first (its keys may
  // have to be fetched), the request's body waiting in its stream meanwhile.
  if (known === undefined && mayVerify(req)) {
    verifiedCallers(req).then(
      (callers) => route(req, res, url, callers),
      () => route(req, res, url, undefined),
    );
    return;
  }
  route(req, res, url, known === undefined ? undefined : [known]);
}

/** Where a request goes once its callers are known (undefined: none could be authenticated). */
function route(req: IncomingMessage, res: ServerResponse, url: string, callers: Caller[] | undefined): void {
  if (req.method === 'POST' && url === '/v1/decisions') {
    const caller = declaredJson(req) ? pepCaller(callers) : undefined;
    if (caller !== undefined) {
      if (!enterShare(req, res, caller, url)) return;
      decide(req, res, caller).catch(() => {
        if (!res.headersSent) sendUnavailable(res, url);
      });
      return;
    }
  }
  const batch = req.method === 'POST' ? AUTHZEN_PATHS.get(url) : undefined;
  if (batch !== undefined) {
    const caller = declaredJson(req) ? authzenCaller(callers) : undefined;
    if (caller !== undefined) {
      if (!enterShare(req, res, caller, url)) return;
      authzen(req, res, caller, batch).catch(() => {
        if (!res.headersSent) sendUnavailable(res, url);
      });
      return;
    }
  }
  serveApp(req, res);
}

// No Host on HTTP/1.1 is refused by requestTargetProblem in the §8 shape, not by Node's bare 400.
// HTTPS when the config names TLS files: the fronts own the public port, so they terminate TLS.
const server = createPublicServer(start.tls, { requireHostHeader: false }, handle);
// The same limits as the sidecar's listener.
cutSlowClients(server);
server.on('error', (e) => post({ type: 'failed', message: e.message }));
// Threads share the port by SO_REUSEPORT where Node has it (a lone front thread on an older Node has the
// port to itself); cluster processes share it through the sidecar's handle.
const listenOptions = parentPort && frontThreadsSupported() ? { host: start.host, port: start.port, reusePort: true } : { host: start.host, port: start.port };
/** `host:port` this front listens on, as a Host header names it. */
let publicHost = `${start.host.includes(':') ? `[${start.host}]` : start.host}:${start.port}`;
let closing = false;
function listen(): void {
  if (server.listening || closing) return;
  server.listen(listenOptions as ListenOptions, () => {
    const addr = server.address();
    const port = typeof addr === 'object' && addr ? addr.port : start.port;
    publicHost = `${start.host.includes(':') ? `[${start.host}]` : start.host}:${port}`;
    post({ type: 'listening', port });
    void loadApp();
  });
}
// Held (a replica that waited for its database still answers on the port): loaded now, listening on `listen`.
if (start.holdListen) post({ type: 'ready' });
else listen();

function closeServer(): void {
  if (closing) return;
  closing = true;
  void closeGracefully(server).then(() => {
    flush();
    void evaluator.close().finally(() => post({ type: 'closed' }));
  });
}
