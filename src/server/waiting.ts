/**
 * A replica started while its database is unreachable (docs/protocol.md §9). Exiting would leave a
 * supervisor restarting it in a loop, and a load balancer would see a port that refuses connections.
 * Instead it answers on its listen address as a running replica whose database is down does —
 * `/healthz` 200, `/readyz` 503, `/metrics`, and what needs no database: the auditor console's page
 * (its data calls are then refused), AuthZEN discovery and `/openapi.json`; what a running replica
 * refuses before reading the database (unknown route 404, other method 405, token 401, role 403) is
 * refused alike, and every other request 503 STORE_UNAVAILABLE (nothing is decided, nothing is
 * allowed) — and keeps trying; once the database answers it starts for
 * real on the same address. A database that answers but refuses (bad password, no such database) is a
 * configuration error: that still ends the start at once.
 */
import type { Server } from 'node:http';
import { createPublicServer, type TlsMaterial } from '../http/tls.js';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import { answerClientError, refuseRequestTarget, requestTargetProblem } from '../http/request-target.js';
import { echoRequestId } from '../http/request-id.js';
import { bearerOf, requireRole, TokenTable } from '../http/auth.js';
import { looksLikeJwt } from '../identity/verify.js';
import type { Role } from '../config/config.js';
import { buildOpenApi } from '../schemas/openapi.js';
import type { TokenSpec } from '../config/config.js';
import { registerConsoleRoutes } from '../console/routes.js';
import { registerAuthzenDiscovery } from '../authzen/routes.js';
import type { AddressInfo, ListenOptions } from 'node:net';
import { probePort } from '../front/probe-port.js';
import { isWritError, WritError } from '../errors.js';
import * as metrics from '../metrics/metrics.js';
import type { LedgerStore } from '../store/types.js';
import { parseListen } from '../config/config.js';

/** The start was stopped (SIGTERM/SIGINT) while it waited for the database. */
export class StartStopped extends Error {}

/** Connection-level failures, which a database coming back cures (node errnos and SQLSTATEs). */
const TRANSIENT_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'EPIPE']);
const TRANSIENT_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);

/** Whether a failure to open the store is the database being unreachable (or not up yet), not a refusal. */
export function isUnreachableDatabase(e: unknown): boolean {
  if (!isWritError(e) || e.code !== 'STORE_UNAVAILABLE') return false;
  const cause = (e as { cause?: unknown }).cause as { code?: unknown; message?: unknown } | undefined;
  const code = typeof cause?.code === 'string' ? cause.code : undefined;
  if (code !== undefined) return TRANSIENT_ERRNOS.has(code) || TRANSIENT_SQLSTATES.has(code) || code.startsWith('08');
  // The driver's own connect timeout and a connection cut mid-handshake carry no code.
  return /timeout|terminated|closed/i.test(typeof cause?.message === 'string' ? cause.message : e.message);
}

export interface WaitOptions {
  /** HOST:PORT from the config; port 0 takes a free one, and the real start then uses that one. */
  listen: string;
  log: (line: string) => void;
  stopRequested: () => boolean;
  retryMs?: number;
  /** The config's tokens: the console's sign-in check works while waiting. */
  tokens?: TokenSpec[];
  /** The config's `public_url`, which AuthZEN discovery names when set. */
  publicUrl?: string;
  /**
   * Bind with SO_REUSEPORT (after an exclusive probe, so the port is nobody else's), so that HTTP front
   * threads can bind beside the waiting listener before it closes: no moment without a listener.
   */
  sharePort?: boolean;
  /** The config's TLS material: the waiting listener speaks HTTPS on the public port like the sidecar after it. */
  tls?: TlsMaterial;
}

/**
 * Opens the store; while the database is unreachable, serves the answers above on the listen address
 * and retries. Returns the store and the listen address to start on (the port actually bound).
 */
export async function openStoreWhenReachable(
  open: () => Promise<LedgerStore>,
  o: WaitOptions,
): Promise<{ store: LedgerStore; listen: string; stopWaiting: () => Promise<void>; waited: boolean }> {
  try {
    return { store: await open(), listen: o.listen, stopWaiting: async () => undefined, waited: false };
  } catch (e) {
    if (!isUnreachableDatabase(e)) throw e;
    const waiting = await listenWhileWaiting(o);
    const address = waiting.address() as AddressInfo;
    const listen = `${o.listen.slice(0, o.listen.lastIndexOf(':'))}:${address.port}`;
    o.log(`writ serve: the database is unreachable (${(e as Error).message}); waiting for it on ${urlOf(address, o.tls)}, answering 503 meanwhile`);
    let handedOver = false;
    try {
      for (;;) {
        await pause(o.retryMs ?? 1000, o.stopRequested);
        if (o.stopRequested()) throw new StartStopped('stopped while waiting for the database');
        try {
          const store = await open();
          o.log('writ serve: the database answers; starting');
          handedOver = true;
          // The waiting listener keeps the address (answering 503) until the real one is about to bind
          // it, so that the start's own work leaves no window of refused connections.
          let stopped: Promise<void> | undefined;
          return { store, listen, stopWaiting: () => (stopped ??= stopListening(waiting)), waited: true };
        } catch (again) {
          if (!isUnreachableDatabase(again)) throw again;
        }
      }
    } finally {
      if (!handedOver) await closeNow(waiting);
    }
  }
}

/** The waiting replica's routes: those that need no database, and 503 for the rest. */
function waitingApp(o: WaitOptions, origin: () => string | undefined): Hono {
  const app = new Hono();
  const refuse = () => new WritError('STORE_UNAVAILABLE', 'the database is unreachable; this replica is waiting for it');
  app.onError((err) => {
    const e = isWritError(err) ? err : refuse();
    return Response.json(e.toBody(), { status: e.status });
  });
  // Every answer closes its connection, so that a client's next request reaches the real start.
  app.use('*', async (c, next) => {
    await next();
    c.res.headers.set('connection', 'close');
  });
  app.get('/healthz', (c) => c.json({ ok: true }));
  app.get('/readyz', (c) => c.json({ ready: false }, 503));
  app.get('/metrics', async (c) => c.body(await metrics.renderMetrics(), 200, { 'content-type': metrics.metricsContentType }));
  const tokens = new TokenTable(o.tokens ?? []);
  registerConsoleRoutes(app, { tokens });
  registerAuthzenDiscovery(app, { publicOrigin: origin, ...(o.publicUrl ? { publicUrl: o.publicUrl } : {}) });
  const openapi = buildOpenApi();
  app.get('/openapi.json', (c) => c.json(openapi));
  // What a running replica would refuse before it reads the database is refused the same way here:
  // an unknown route 404, a known path with another method 405, a missing or unknown token 401, a
  // role the route does not admit 403. Only a request a running replica would go on with is 503.
  const routes = apiRoutes(openapi);
  app.all('*', (c) => {
    const path = c.req.path;
    const method = c.req.method === 'HEAD' ? 'GET' : c.req.method;
    const atPath = routes.filter((r) => r.path.test(path));
    const route = atPath.find((r) => r.method === method);
    if (!route) {
      if (atPath.length === 0) throw new WritError('NOT_FOUND', `no route ${c.req.method} ${path}`);
      const allow = atPath.map((r) => r.method).join(', ');
      const e = new WritError('METHOD_NOT_ALLOWED', `${path} answers ${allow}, not ${c.req.method}`);
      return c.json(e.toBody(), 405, { allow });
    }
    // A JWT is verified only by a running replica (its keys are fetched then): until then it is 503 as any request that would go on.
    const bearer = bearerOf(c.req.header('authorization'));
    if (route.roles && !(bearer !== undefined && looksLikeJwt(bearer) && tokens.find(c.req.header('authorization')) === undefined)) {
      requireRole(tokens.authenticate(c.req.header('authorization')), route.roles);
    }
    throw refuse();
  });
  // A console file that does not exist: 404, as a running replica answers.
  app.notFound((c) => {
    const e = new WritError('NOT_FOUND', `no route ${c.req.method} ${c.req.path}`);
    return Response.json(e.toBody(), { status: e.status });
  });
  return app;
}

/** The API's routes, from its OpenAPI document: method, a matcher of the path, the roles admitted (null: no auth). */
function apiRoutes(openapi: Record<string, unknown>): Array<{ method: string; path: RegExp; roles: readonly Role[] | null }> {
  const routes: Array<{ method: string; path: RegExp; roles: readonly Role[] | null }> = [];
  for (const [template, ops] of Object.entries(openapi.paths as Record<string, Record<string, Record<string, unknown>>>)) {
    const path = new RegExp(
      '^' +
        template
          .split(/\{[^}]+\}/)
          .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
          .join('[^/]+') +
        '$',
    );
    for (const [method, op] of Object.entries(ops)) {
      routes.push({ method: method.toUpperCase(), path, roles: (op['x-writ-roles'] as Role[] | undefined) ?? null });
    }
  }
  return routes;
}

/** The waiting listener's URL as its log line and AuthZEN discovery name it. */
function urlOf(address: AddressInfo, tls: TlsMaterial | undefined): string {
  return `${tls ? 'https' : 'http'}://${address.address.includes(':') ? `[${address.address}]` : address.address}:${address.port}`;
}

async function listenWhileWaiting(o: WaitOptions): Promise<Server> {
  const { host, port } = parseListen(o.listen);
  let origin: string | undefined;
  const listener = getRequestListener(waitingApp(o, () => origin).fetch);
  // No Host on HTTP/1.1 is refused by requestTargetProblem in the §8 shape, not by Node's bare 400.
  const server = createPublicServer(o.tls, { requireHostHeader: false }, (req, res) => {
    echoRequestId(req, res);
    const problem = requestTargetProblem(req);
    if (problem !== undefined) {
      req.resume();
      res.setHeader('connection', 'close');
      return refuseRequestTarget(res, problem);
    }
    void listener(req, res);
  });
  server.on('clientError', answerClientError);
  const bound = o.sharePort ? await probePort(host, port) : port;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port: bound, ...(o.sharePort ? { reusePort: true } : {}) } as ListenOptions, () => resolve());
  });
  const address = server.address() as AddressInfo;
  origin = urlOf(address, o.tls);
  return server;
}

/**
 * Frees the address at once (libuv closes a listening socket's descriptor inside the close call) and
 * lets the connections it holds finish their answers, which carry `connection: close` (cut after 2 s).
 * The real listener may bind as soon as this resolves.
 */
function stopListening(server: Server): Promise<void> {
  server.close();
  server.closeIdleConnections();
  const cut = setTimeout(() => server.closeAllConnections(), 2000);
  cut.unref();
  server.once('close', () => clearTimeout(cut));
  return Promise.resolve();
}

function closeNow(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** Sleeps `ms`, waking early when a stop is requested. */
async function pause(ms: number, stopRequested: () => boolean): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end && !stopRequested()) await new Promise((r) => setTimeout(r, Math.min(100, end - Date.now())));
}
