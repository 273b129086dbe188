/**
 * What the app counts of its answers: by default on this thread's metrics (src/http/answer-metrics.ts); an
 * HTTP front relays its counts to the sidecar, which serves /metrics.
 */
import type { MiddlewareHandler } from 'hono';
import type { WritError } from '../errors.js';
import { countAnswer, countRefusal } from './answer-metrics.js';

export interface AnswerCounts {
  /** An answer, by the route pattern that gave it. */
  answer(route: string, status: number): void;
  /** A refusal with an error code; `logged`: its cause was already written to stderr. */
  refusal(e: Pick<WritError, 'code' | 'message'>, opts?: { logged?: boolean }): void;
}

export const COUNTED_HERE: AnswerCounts = { answer: countAnswer, refusal: countRefusal };

/**
 * Every answer is counted by the route pattern that answered it (`/v1/executions/:id`), not its path,
 * so the series stay few; a path no route knows is `unmatched`.
 */
export function countAnswersByRoute(counts: AnswerCounts): MiddlewareHandler {
  return async (c, next) => {
    await next();
    const routes = c.req.matchedRoutes;
    let route = 'unmatched';
    for (let i = routes.length - 1; i >= 0; i--) {
      if (routes[i]!.method !== 'ALL') {
        route = routes[i]!.path;
        break;
      }
    }
    counts.answer(route, c.res.status);
  };
}
