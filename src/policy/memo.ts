/**
 * An exact-input decision memo: Cedar is a pure function of (policy set, entities, request), and so
 * is PolicyEngine.evaluate of what it hands Cedar. An agent doing the same job again asks the same
 * question with a fresh execution_id; the memo answers it without converting the request into wasm
 * again.
 *
 * Exact, never approximate: the key is an injective text encoding of everything the engine's
 * evaluations read (see PolicyEngine.memoKeyOf): the preparsed set, principal, action, resource, the
 * narrowed context — `now` included whenever a kept policy reads it —, the ordered approvals with
 * their approvers, the entity slice's roots and the entities_version of the store the slice comes
 * from. A value the encoder cannot represent exactly (undefined, NaN, -0, a Date, …) makes the call
 * unmemoizable rather than approximately keyed.
 *
 * Bounded (least recently used out), one memo per engine (a reload builds a new engine, so the memo
 * goes with the old one), and emptied as soon as the entity store's version changes.
 */
import type { DecisionOutcome } from './engine.js';

/** An independent copy, so no caller can alter what the memo serves next. */
export function copyOutcome(o: DecisionOutcome): DecisionOutcome {
  const errors: DecisionOutcome['errors'] = [];
  for (const e of o.errors) errors.push(e.policy === undefined ? { message: e.message } : { policy: e.policy, message: e.message });
  const obligations: DecisionOutcome['obligations'] = [];
  for (const ob of o.obligations) obligations.push({ policy: ob.policy, approver_group: ob.approver_group });
  const out: DecisionOutcome = { decision: o.decision, reasons: o.reasons.slice(), errors, obligations };
  if (o.approval_used !== undefined) out.approval_used = o.approval_used;
  return out;
}

/**
 * Longest key kept (characters): a decision whose Cedar-visible inputs are bigger (large arguments the
 * policies read) is simply not memoized, so the memo's memory stays bounded by capacity × this.
 */
export const MAX_KEY_CHARS = 4096;

/**
 * True when JSON.stringify renders `value` exactly: only strings, booleans, null, finite numbers other
 * than -0, dense arrays and plain objects (no undefined members, Dates, class instances, bigints…).
 * For such values JSON.stringify is injective — equal texts mean structurally equal values, member
 * order included — which is what makes its text a safe key. A walk without building strings (the text
 * itself comes from the native JSON.stringify, several times faster than building it here).
 */
function isExactJson(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value) && !Object.is(value, -0);
    case 'object': {
      if (value === null) return true;
      if (depth > 64) return false;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) if (!(i in value) || !isExactJson(value[i], depth + 1)) return false;
        return true;
      }
      const proto: unknown = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return false;
      for (const key in value) {
        if (Object.hasOwn(value, key) && !isExactJson((value as Record<string, unknown>)[key], depth + 1)) return false;
      }
      return true;
    }
    default:
      // undefined, bigint, symbol, function: no exact JSON form.
      return false;
  }
}

/**
 * An injective text of a JSON-shaped value (equal texts ⇒ structurally equal values, member order
 * included); undefined when the value holds anything without an exact JSON form or its text would
 * exceed MAX_KEY_CHARS.
 */
export function memoKeyText(value: unknown): string | undefined {
  if (!isExactJson(value, 0)) return undefined;
  const text = JSON.stringify(value);
  return text.length > MAX_KEY_CHARS ? undefined : text;
}

/** FNV-1a over the UTF-16 code units, never 0 (0 marks an empty doorkeeper slot). */
function keyHash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0 || 1;
}

export interface MemoOptions {
  /**
   * Keep an answer only when its key was seen before (a doorkeeper, as in TinyLFU): a question asked
   * once is never kept, so a stream of distinct questions does not churn the memo — every kept entry
   * would otherwise live long enough to be promoted to V8's old generation and die there, which cost
   * 10–25 % of throughput on distinct decisions (bench/results/http-notes.md). A repeated question is
   * kept on its second answer and served from its third.
   */
  admitOnSecondSight?: boolean;
}

/**
 * A bounded memo of values made under one entities_version (emptied when the store moves on), with an
 * optional doorkeeper. Served values are handed out through `copy`, so no caller can alter the next.
 */
export class VersionedMemo<V> {
  private readonly entries = new Map<string, V>();
  /** The entities_version the entries were made under. */
  private entitiesVersion: string | undefined;
  /** Hashes of keys answered once and not kept (admitOnSecondSight): one per slot, overwritten freely. */
  private readonly seenOnce: Uint32Array | undefined;
  hits = 0;
  misses = 0;

  /** `capacity` 0 keeps nothing. */
  constructor(
    readonly capacity: number,
    options: MemoOptions = {},
    private readonly copy: (value: V) => V = (value) => value,
  ) {
    if (options.admitOnSecondSight && capacity > 0) {
      let slots = 64;
      while (slots < capacity * 2) slots *= 2;
      this.seenOnce = new Uint32Array(slots);
    }
  }

  get size(): number {
    return this.entries.size;
  }

  /** Empties the memo when the entity store moved on (any entity change). */
  private follow(entitiesVersion: string): void {
    if (this.entitiesVersion !== entitiesVersion) {
      this.entries.clear();
      this.entitiesVersion = entitiesVersion;
    }
  }

  get(key: string, entitiesVersion: string): V | undefined {
    this.follow(entitiesVersion);
    const hit = this.entries.get(key);
    if (hit === undefined) {
      this.misses++;
      return undefined;
    }
    // Least recently used out: a hit moves to the back of the insertion order.
    this.entries.delete(key);
    this.entries.set(key, hit);
    this.hits++;
    return this.copy(hit);
  }

  /** Keeps `outcome` for `key`, unless it was decided under entities the store has since left. */
  set(key: string, entitiesVersion: string, outcome: V): void {
    // Only under the version the last lookup saw: a late answer for entities since replaced is dropped.
    if (this.capacity <= 0 || this.entitiesVersion !== entitiesVersion) return;
    if (!this.entries.has(key) && !this.seenBefore(key)) return;
    this.keep(key, outcome);
  }

  /** Keeps `value` for `key` past the doorkeeper (the caller asked seenBefore itself), under the version last looked up. */
  admit(key: string, entitiesVersion: string, value: V): void {
    if (this.capacity <= 0 || this.entitiesVersion !== entitiesVersion) return;
    this.keep(key, value);
  }

  private keep(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, this.copy(value));
    while (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }

  /**
   * The doorkeeper (admitOnSecondSight): true when `key` was seen before (and forgets it), false on
   * first sight (remembered by its hash only). Always true without a doorkeeper.
   */
  seenBefore(key: string): boolean {
    if (this.seenOnce === undefined) return true;
    const h = keyHash(key);
    const slot = h & (this.seenOnce.length - 1);
    if (this.seenOnce[slot] !== h) {
      this.seenOnce[slot] = h;
      return false;
    }
    this.seenOnce[slot] = 0;
    return true;
  }

  clear(): void {
    this.entries.clear();
  }
}

/**
 * How this thread's decisions were answered without a full Cedar call, summed over every engine it has
 * had (policy reloads replace engines): decision-memo lookups that hit or missed, and misses that a
 * residual program answered (residual.ts). A thread-wide tally rather than one per engine, so a reload
 * never loses counts; the sidecar sums its own and each HTTP front's for `/metrics`.
 */
export interface EvaluationTally {
  memoHits: number;
  memoMisses: number;
  residualAnswers: number;
}
/** A tally with nothing counted yet. */
export function emptyTally(): EvaluationTally {
  return { memoHits: 0, memoMisses: 0, residualAnswers: 0 };
}
export const evaluationTally: EvaluationTally = emptyTally();

/** Adds `t` into `sum` (sum is changed and returned). */
export function addTally(sum: EvaluationTally, t: EvaluationTally): EvaluationTally {
  sum.memoHits += t.memoHits;
  sum.memoMisses += t.memoMisses;
  sum.residualAnswers += t.residualAnswers;
  return sum;
}

/** The exact-input decision memo: outcomes, copied in and out; its lookups counted in evaluationTally. */
export class DecisionMemo extends VersionedMemo<DecisionOutcome> {
  constructor(capacity: number, options: MemoOptions = {}) {
    super(capacity, options, copyOutcome);
  }

  override get(key: string, entitiesVersion: string): DecisionOutcome | undefined {
    const outcome = super.get(key, entitiesVersion);
    if (outcome === undefined) evaluationTally.memoMisses++;
    else evaluationTally.memoHits++;
    return outcome;
  }
}
