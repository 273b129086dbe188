/**
 * The contract's error shape (docs/protocol.md §8) on every answer the app gives: a route's WritError,
 * anything unexpected (a 503 refusal, never an allow and never a bare 500 page), an unknown route (404)
 * and a known path asked with another method (405 with `Allow`).
 */
import type { Context, Env, Hono } from 'hono';
import { WritError, isWritError } from '../errors.js';
import * as log from '../log/log.js';
import type { AnswerCounts } from './count-answers.js';
import { clientWentAway } from './body.js';
import { retryAfterOf } from './fairness.js';
import { allowedMethods } from './paths.js';

export function errorResponse(c: Context, e: WritError): Response {
  // RFC 6750 §3: a 401 names the scheme the client must use, and why a token sent was refused.
  if (e.status === 401) c.header('WWW-Authenticate', (e.details as { wwwAuthenticate?: string } | undefined)?.wwwAuthenticate ?? 'Bearer');
  const retryAfter = retryAfterOf(e);
  if (retryAfter !== undefined) c.header('Retry-After', retryAfter);
  return c.json(e.toBody(), e.status as 400);
}

/**
 * Installs the app's onError and notFound. `unexpected`: the refusal an unexpected error is answered
 * with (the app's backend says what it could not do).
 */
export function answerErrorsInShape<E extends Env>(app: Hono<E>, unexpected: () => WritError, counts: AnswerCounts): void {
  app.onError((err, c) => {
    if (isWritError(err)) {
      counts.refusal(err);
      return errorResponse(c, err);
    }
    // A client gone before its body ended is not unexpected: nobody will read the answer, and nothing to log.
    if (!clientWentAway(err)) log.error(`writ: unexpected error on ${c.req.method} ${c.req.path}: ${(err)?.stack ?? err}`);
    const refusal = unexpected();
    counts.refusal(refusal, { logged: true });
    return errorResponse(c, refusal);
  });
  app.notFound((c) => {
    // A known path asked with a method it does not answer is 405 with `Allow`, not 404.
    const allow = allowedMethods(app.routes, c.req.path);
    // A route that answers this method but has nothing at this path (a console file that does not exist) is 404.
    if (allow.length && !allow.includes(c.req.method)) {
      const e = new WritError('METHOD_NOT_ALLOWED', `${c.req.path} answers ${allow.join(', ')}, not ${c.req.method}`);
      counts.refusal(e);
      return c.json(e.toBody(), 405, { allow: allow.join(', ') });
    }
    const e = new WritError('NOT_FOUND', `no route ${c.req.method} ${c.req.path}`);
    counts.refusal(e);
    return errorResponse(c, e);
  });
}
