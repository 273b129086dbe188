/**
 * A caller's share of concurrent work (docs/protocol.md §8, fairness). Every door that evaluates policy
 * — the sidecar's own app and each HTTP front — holds one CallerGate: a decision or AuthZEN evaluation
 * enters it before its body is read and leaves it when its answer is sent. A caller that already has
 * `maxInFlight` requests in flight, or whose requests in flight hold `maxInFlightBytes` of body between
 * them, is answered 429 RATE_LIMITED with Retry-After at once: its heavy requests wait on each other
 * (at its own PEP), never in front of another caller's. Bytes are the weight because they are known
 * before any parsing and bound what admission and evaluation can cost (src/binding/limits.ts); a
 * single request is always let in when its caller has nothing else in flight, so a body the size
 * limit admits is never refused for its size alone.
 */
import { WritError } from '../errors.js';
import type { AdmissionLimits } from '../binding/limits.js';
import type { WritConfig } from '../config/config.js';
import type { Caller } from '../identity/caller.js';

/** What every door needs to admit fairly: the config's limits and shares, carried to the fronts as is. */
export interface FairnessSettings {
  limits: AdmissionLimits;
  callerMaxInFlight: number;
  callerMaxInFlightBytes: number;
  evaluationDeadlineMs: number;
}

export function fairnessOf(config: WritConfig): FairnessSettings {
  return {
    limits: config.admission_limits,
    callerMaxInFlight: config.caller_max_in_flight,
    callerMaxInFlightBytes: config.caller_max_in_flight_bytes,
    evaluationDeadlineMs: config.evaluation_deadline_ms,
  };
}

/** Seconds a refused caller is told to wait: its requests in flight finish well within one. */
export const RETRY_AFTER_S = 1;

/** The Retry-After header a refusal carries, if any. */
export function retryAfterOf(e: Pick<WritError, 'code'>): string | undefined {
  return e.code === 'RATE_LIMITED' ? String(RETRY_AFTER_S) : undefined;
}

const callerIds = new WeakMap<Caller, string>();
let nextCallerId = 0;

/**
 * Who a request's share is counted for. A verified identity (JWT or client certificate: a JWT's issuer and
 * subject, a client certificate's subject), when the Caller carries one, names it — a JWT caller is a
 * fresh Caller per request, the same workload every time. Otherwise the caller is its token: the
 * TokenTable makes one Caller per configured token, so the object itself names it (two tokens for the
 * same actor are two callers).
 */
export function callerKey(caller: Caller): string {
  const identity = (caller as { identity?: unknown }).identity;
  if (typeof identity === 'string' && identity !== '') return `identity:${identity}`;
  if (identity !== null && typeof identity === 'object') {
    const { method, iss, sub } = identity as { method?: unknown; iss?: unknown; sub?: unknown };
    if (typeof sub === 'string') return `identity:${String(method)}\n${typeof iss === 'string' ? iss : ''}\n${sub}`;
  }
  let id = callerIds.get(caller);
  if (id === undefined) callerIds.set(caller, (id = `token:${nextCallerId++}`));
  return id;
}

interface Share {
  count: number;
  bytes: number;
}

export class CallerGate {
  readonly #shares = new Map<string, Share>();
  constructor(private readonly o: { maxInFlight: number; maxInFlightBytes: number }) {}

  /**
   * Lets one request of `bytes` body in for `key`, or throws RATE_LIMITED. Returns the function that lets
   * it out again (once, whatever how often it is called).
   */
  enter(key: string, bytes: number): () => void {
    let share = this.#shares.get(key);
    if (share !== undefined && (share.count >= this.o.maxInFlight || share.bytes + bytes > this.o.maxInFlightBytes)) {
      throw new WritError(
        'RATE_LIMITED',
        `this caller already has ${share.count} request(s) of ${share.bytes} bytes in flight (its share: ${this.o.maxInFlight} requests, ${this.o.maxInFlightBytes} bytes); retry after ${RETRY_AFTER_S} s`,
      );
    }
    if (share === undefined) this.#shares.set(key, (share = { count: 0, bytes: 0 }));
    share.count++;
    share.bytes += bytes;
    const held = share;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      held.count--;
      held.bytes -= bytes;
      if (held.count === 0 && this.#shares.get(key) === held) this.#shares.delete(key);
    };
  }

  /** Requests `key` has in flight (tests, metrics). */
  inFlight(key: string): number {
    return this.#shares.get(key)?.count ?? 0;
  }
}
