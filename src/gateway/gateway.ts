/**
 * Starts and stops `writ gateway` (docs/protocol.md §14): the listener (HTTPS with `tls_cert_file` /
 * `tls_key_file`, as writ serve), the JWT verifier of §13, the PDP client, and — on stop (SIGTERM) — a
 * graceful end: new POSTs are refused 503, the calls in flight finish and their outcomes are posted
 * (bounded by `shutdown_grace_ms`), then sessions end (upstream sessions deleted, children stopped).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { JwtVerifier } from '../identity/verify.js';
import { PdpClient } from '../pep/client.js';
import { createPublicServer, readTlsMaterial } from '../http/tls.js';
import { gatewayApp, type GatewayState } from './app.js';
import type { GatewayConfig } from './config.js';
import { gatewayMetrics } from './metrics.js';

export interface RunningGateway {
  /** The address it listens on, e.g. `http://127.0.0.1:8710`. */
  url: string;
  state: GatewayState;
  stop(): Promise<void>;
}

export async function startGateway(cfg: GatewayConfig, o: { log?: (line: string) => void; pdpTimeoutMs?: number } = {}): Promise<RunningGateway> {
  const log = o.log ?? ((l: string) => void process.stderr.write(l.endsWith('\n') ? l : `${l}\n`));
  const verifier = new JwtVerifier(cfg.issuers);
  const pdp = new PdpClient({ url: cfg.pdp.url, token: cfg.pdp.token, ...(o.pdpTimeoutMs ? { timeoutMs: o.pdpTimeoutMs } : {}) });
  const state: GatewayState = { sessions: new Map(), channels: new Map(), stopping: false };
  const app = gatewayApp({ cfg, verifier, pdp, metrics: gatewayMetrics(), log }, state);
  const tls = cfg.tls ? readTlsMaterial(cfg.tls.certFile, cfg.tls.keyFile) : undefined;
  // Hono's listener answers its own errors (500); the promise it returns only says the answer was sent.
  const listener = getRequestListener(app.fetch);
  const server: Server = createPublicServer(tls, {}, (req, res) => void listener(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(cfg.port, cfg.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  let stopped: Promise<void> | undefined;
  return {
    url: `${tls ? 'https' : 'http'}://${host}:${addr.port}`,
    state,
    stop() {
      stopped ??= (async () => {
        state.stopping = true;
        const all = [...state.sessions.values(), ...state.channels.values()];
        let timer: NodeJS.Timeout | undefined;
        const grace = new Promise<'timeout'>((res) => (timer = setTimeout(() => res('timeout'), cfg.shutdownGraceMs)));
        const drained = await Promise.race([Promise.all(all.map((s) => s.drain())).then(() => 'drained' as const), grace]);
        if (drained === 'timeout') log(`writ gateway: calls still in flight after ${cfg.shutdownGraceMs} ms; closing anyway (their executions stay invoking)`);
        const left = (await Promise.all(all.map((s) => s.settleLate(2_000)))).reduce((a, b) => a + b, 0);
        if (left) log(`writ gateway: ${left} late PDP answer(s) still awaited at exit`);
        clearTimeout(timer);
        await Promise.all(all.map((s) => s.close()));
        state.sessions.clear();
        state.channels.clear();
        await new Promise<void>((res) => {
          server.close(() => res());
          server.closeAllConnections();
        });
      })();
      return stopped;
    },
  };
}
