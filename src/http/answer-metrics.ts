/**
 * What every answered request leaves behind, whichever thread answered it: `writ_http_requests_total`
 * by route pattern and status, `writ_refusals_total` by code (4xx and 5xx alike), and — for a request
 * refused because the store could not take its write (a full disk, a database gone) — a line on stderr,
 * at most one per STORE_LOG_EVERY_MS with the count of those left unsaid, so an operator sees the cause
 * without reading /readyz and a failing disk cannot flood the log.
 */
import type { WritError } from '../errors.js';
import * as metrics from '../metrics/metrics.js';
import { reportUnroutedAnswersTo, UNROUTED } from './request-target.js';
import * as log from '../log/log.js';

const STORE_LOG_EVERY_MS = 10_000;
let lastStoreLineAt = -Infinity;
let unsaid = 0;

export function countAnswer(route: string, status: number): void {
  metrics.countHttpAnswer(route, status);
}

/** A refusal answered with an error code; `logged`: its cause was already written to stderr. */
export function countRefusal(e: Pick<WritError, 'code' | 'message'>, opts: { logged?: boolean } = {}): void {
  metrics.refusalsTotal.inc({ code: e.code });
  if (e.code !== 'STORE_UNAVAILABLE' || opts.logged) return;
  const now = performance.now();
  if (now - lastStoreLineAt < STORE_LOG_EVERY_MS) {
    unsaid++;
    return;
  }
  const more = unsaid > 0 ? ` (and ${unsaid} more refused since the last such line)` : '';
  lastStoreLineAt = now;
  unsaid = 0;
  log.warn(`writ: refused with STORE_UNAVAILABLE: ${e.message.replace(/\s+/g, ' ')}${more}`);
}

/**
 * From now on, refusals answered on this thread before any route (src/http/request-target.ts) are counted
 * here, under the route label `unrouted`. Called by the process that serves /metrics; a front thread
 * posts its own to it instead.
 */
export function countUnroutedAnswers(): void {
  reportUnroutedAnswersTo((status, code, message) => {
    countAnswer(UNROUTED, status);
    countRefusal({ code, message });
  });
}
