/**
 * Admission limits (docs/protocol.md §8, fairness): how wide a request body may be before any policy
 * work is spent on it. A PEP forwards an agent's tool-call arguments as they are, and an agent can be
 * prompt-injected into sending 96,000 tiny members in one megabyte: Cedar's cost grows with the
 * context it is given (about 13 µs a member when a policy reads the arguments), and every admitted
 * member is kept in the ledger for good. The limits refuse such a body whole, with the JSON pointer of
 * the first member (in document order) past a limit, after the lossless parse and before admission,
 * Cedar views or evaluation.
 */
import { WritError } from '../errors.js';
import { jsonPointer, LosslessNumber, type LosslessValue } from './parse.js';

export interface AdmissionLimits {
  /** Members of any one object. */
  object_members: number;
  /** Elements of any one array. */
  array_elements: number;
  /** Members and elements of the whole body, counted together. */
  total_members: number;
  /** UTF-16 code units of any one string, member names included. */
  string_length: number;
}

/**
 * The defaults, and why (docs/operators.md "Admission limits"): a real tool call has tens of members,
 * not thousands. 4,096 members in all keeps the worst evaluation near 50 ms of CPU, so a caller with a
 * few of them in flight cannot hold another caller's decision back by a second; 1,024 per object or
 * array leaves room for a list of ids or rows; 65,536 characters per string admits a document-sized
 * argument (a file body to write) — a deployment that forwards larger ones raises it.
 */
export const DEFAULT_ADMISSION_LIMITS: Readonly<AdmissionLimits> = Object.freeze({
  object_members: 1024,
  array_elements: 1024,
  total_members: 4096,
  string_length: 65_536,
});

export const ADMISSION_LIMIT_KEYS = Object.keys(DEFAULT_ADMISSION_LIMITS) as ReadonlyArray<keyof AdmissionLimits>;

/**
 * Throws LIMIT_EXCEEDED at the first member past a limit, walking the body in document order (the order
 * admission reads it, src/binding/admit.ts); `base` prefixes the pointer. Pure, linear in the body.
 */
export function checkAdmissionLimits(value: LosslessValue, limits: AdmissionLimits, base = ''): void {
  new LimitWalk(limits, base).visit(value, 0);
}

class LimitWalk {
  private readonly trail: Array<string | number> = [];
  private total = 0;
  constructor(private readonly limits: AdmissionLimits, private readonly base: string) {}

  private refuse(what: string, depth: number): never {
    throw new WritError('LIMIT_EXCEEDED', `${what} (an admission limit of this sidecar)`, { path: jsonPointer(this.trail, depth, this.base) });
  }

  /** Counts one member or element, now at trail[depth]. */
  private count(depth: number): void {
    if (++this.total > this.limits.total_members) this.refuse(`more than ${this.limits.total_members} members and elements in the whole body`, depth + 1);
  }

  /** `depth` = number of containers enclosing `v`. */
  visit(v: LosslessValue, depth: number): void {
    if (typeof v === 'string') {
      if (v.length > this.limits.string_length) this.refuse(`a string longer than ${this.limits.string_length} characters`, depth);
      return;
    }
    if (v === null || typeof v !== 'object' || v instanceof LosslessNumber) return;
    const trail = this.trail;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        trail[depth] = i;
        if (i === this.limits.array_elements) this.refuse(`an array of more than ${this.limits.array_elements} elements`, depth + 1);
        this.count(depth);
        this.visit(v[i]!, depth + 1);
      }
      return;
    }
    const keys = Object.keys(v);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      trail[depth] = key;
      if (i === this.limits.object_members) this.refuse(`an object of more than ${this.limits.object_members} members`, depth + 1);
      if (key.length > this.limits.string_length) this.refuse(`a member name longer than ${this.limits.string_length} characters`, depth + 1);
      this.count(depth);
      this.visit(v[key]!, depth + 1);
    }
  }
}

/** The limits of a config value (`admission_limits`, partial), or the reason it is not one. */
export function admissionLimitsOf(value: unknown): AdmissionLimits | string {
  if (value === undefined) return { ...DEFAULT_ADMISSION_LIMITS };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'admission_limits must be an object';
  const out: AdmissionLimits = { ...DEFAULT_ADMISSION_LIMITS };
  for (const [k, v] of Object.entries(value)) {
    if (!(ADMISSION_LIMIT_KEYS as readonly string[]).includes(k)) return `admission_limits.${k} is not a limit (known: ${ADMISSION_LIMIT_KEYS.join(', ')})`;
    if (!Number.isSafeInteger(v) || (v as number) < 1) return `admission_limits.${k} must be a positive integer`;
    out[k as keyof AdmissionLimits] = v as number;
  }
  return out;
}
