/**
 * Operations, without auth: `/healthz`, `/readyz`, `/metrics`, `/openapi.json`. The backend says how
 * ready it is (a running sidecar: its store; a replica waiting for its database: never).
 */
import type { Env, Hono } from 'hono';
import * as metrics from '../../metrics/metrics.js';
import { buildOpenApi } from '../../schemas/openapi.js';
import type { LedgerStore } from '../../store/types.js';

export interface Readiness {
  /** Whether the sidecar can serve, and the body `/readyz` answers (200 when ready, else 503). */
  probe(): Promise<{ ready: boolean; body: Record<string, unknown> }>;
  /** Brings the metrics that are read rather than counted up to date before a scrape. */
  beforeScrape?(): Promise<void>;
  /** The metrics text, when another thread holds them (an HTTP front asks the sidecar); else this thread's. */
  render?(): Promise<string>;
}

export function registerHealthRoutes<E extends Env>(app: Hono<E>, readiness: Readiness): void {
  app.get('/healthz', (c) => c.json({ ok: true }));
  app.get('/readyz', async (c) => {
    const { ready, body } = await readiness.probe();
    return c.json(body, ready ? 200 : 503);
  });
  app.get('/metrics', async (c) => {
    await readiness.beforeScrape?.();
    const text = readiness.render ? await readiness.render() : await metrics.renderMetrics();
    return c.body(text, 200, { 'content-type': metrics.metricsContentType });
  });
  const openapi = JSON.stringify(buildOpenApi());
  app.get('/openapi.json', (c) => c.body(openapi, 200, { 'content-type': 'application/json' }));
}

/** How long /readyz and /metrics wait for the store. */
const OPS_PROBE_MS = 2000;

/**
 * A running sidecar's readiness: its own (`ready`: not shutting down, the store writable) and its
 * store's size. Health checks and scrapes answer within OPS_PROBE_MS even when the store hangs (a
 * database frozen or cut off): a store that cannot answer that fast is not ready, and /metrics falls
 * back to the ledger size last known here, so monitoring keeps working exactly when it is needed.
 */
export function storeReadiness(o: { store: LedgerStore; policyVersion: () => string; ready: () => Promise<boolean> }): Readiness {
  const { store } = o;
  return {
    async probe() {
      const ready = await settleWithin(o.ready(), OPS_PROBE_MS, false);
      const size = ready ? await settleWithin(Promise.resolve(store.size()), OPS_PROBE_MS, undefined) : undefined;
      // Not ready (e.g. the database is down): the size last known here, without asking the store again.
      const ok = ready && size !== undefined;
      return { ready: ok, body: { ready: ok, policy_version: o.policyVersion(), ledger_size: size ?? store.knownSize() } };
    },
    async beforeScrape() {
      metrics.ledgerRecords.set((await settleWithin(Promise.resolve(store.size()), OPS_PROBE_MS, undefined)) ?? store.knownSize());
    },
  };
}

/** The promise's value if it settles within `ms` and fulfils; `fallback` if it rejects or is slower. */
async function settleWithin<T, F>(p: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p.catch(() => fallback), new Promise<F>((resolve) => (timer = setTimeout(() => resolve(fallback), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
