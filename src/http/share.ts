/**
 * The limits middleware: every request that evaluates policy enters its caller's share
 * (src/http/fairness.ts) before its body is read, and leaves it once answered. Unauthenticated
 * requests pass on to their route, which refuses them.
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { Caller } from '../identity/caller.js';
import { type CallerGate, callerKey } from './fairness.js';

export function callerShare(gate: CallerGate, authenticate: (c: Context) => Promise<Caller[]>, maxBodyBytes: number): MiddlewareHandler {
  return async (c, next) => {
    let caller: Caller | undefined;
    try {
      caller = (await authenticate(c))[0];
    } catch {
      return next();
    }
    if (caller === undefined) return next();
    const declared = Number(c.req.header('content-length') ?? NaN);
    // A body without a declared length may be as large as the limit allows: it weighs that much.
    const bytes = Number.isSafeInteger(declared) && declared >= 0 ? Math.min(declared, maxBodyBytes) : maxBodyBytes;
    const leave = gate.enter(callerKey(caller), bytes);
    try {
      await next();
    } finally {
      leave();
    }
  };
}
