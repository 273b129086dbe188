/**
 * A replica started while its database is unreachable (docs/protocol.md §9). Exiting would leave a
 * supervisor restarting it in a loop, and a load balancer would see a port that refuses connections.
 * Instead it answers on its listen address as a running replica whose database is down does —
 * `/healthz` 200, `/readyz` 503, `/metrics`, and what needs no database: the auditor console's page
 * (its data calls are then refused), AuthZEN discovery and `/openapi.json`; what a running replica
 * refuses before reading the database (unknown route 404, other method 405, token 401, role 403) is
 * refused alike, and every other request 503 STORE_UNAVAILABLE (nothing is decided, nothing is
 * allowed): the sidecar's own app over an unavailable backend — and keeps trying; once the database answers it starts for
 * real on the same address. A database that answers but refuses (bad password, no such database) is a
 * configuration error: that still ends the start at once.
 */
import type { Server } from 'node:http';
import type { AddressInfo, ListenOptions } from 'node:net';
import type { TlsMaterial } from '../http/tls.js';
import { bearerOf, TokenTable } from '../http/auth.js';
import { buildApp } from '../http/app.js';
import type { FairnessSettings } from '../http/fairness.js';
import { appServer } from '../http/listener.js';
import { looksLikeJwt } from '../identity/verify.js';
import type { TokenSpec } from '../config/config.js';
import { probePort } from '../front/probe-port.js';
import { isWritError, WritError } from '../errors.js';
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
  /** The config's body limit, callers' shares and `public_tiles`, as the running app applies them. */
  maxBodyBytes: number;
  fairness: FairnessSettings;
  publicTiles?: boolean;
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

/**
 * The waiting replica's app: the sidecar's own (src/http/app.ts) over an unavailable backend, so every
 * route answers as a running replica's would up to the point where it needs the database, and there
 * with 503 STORE_UNAVAILABLE.
 */
export function waitingApp(o: WaitOptions, origin: () => string | undefined) {
  const refusal = () => new WritError('STORE_UNAVAILABLE', 'the database is unreachable; this replica is waiting for it');
  const tokens = new TokenTable(o.tokens ?? []);
  return buildApp({
    backend: { refusal },
    auth: {
      // A JWT is verified only by a running replica (its keys are fetched then): until then it is 503 as any request that would go on.
      authenticate: async (header) => {
        const bearer = bearerOf(header);
        if (bearer !== undefined && looksLikeJwt(bearer) && tokens.find(header) === undefined) throw refusal();
        return [tokens.authenticate(header)];
      },
    },
    maxBodyBytes: o.maxBodyBytes,
    fairness: o.fairness,
    publicOrigin: origin,
    ...(o.publicUrl ? { publicUrl: o.publicUrl } : {}),
    publicTiles: o.publicTiles ?? false,
  });
}

/** The waiting listener's URL as its log line and AuthZEN discovery name it. */
function urlOf(address: AddressInfo, tls: TlsMaterial | undefined): string {
  return `${tls ? 'https' : 'http'}://${address.address.includes(':') ? `[${address.address}]` : address.address}:${address.port}`;
}

async function listenWhileWaiting(o: WaitOptions): Promise<Server> {
  const { host, port } = parseListen(o.listen);
  let origin: string | undefined;
  const server = appServer(waitingApp(o, () => origin).fetch, { tls: o.tls, hostname: host, closeEveryConnection: true });
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
