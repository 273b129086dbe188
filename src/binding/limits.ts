/**
 * Admission limits (docs/protocol.md §8, fairness): how wide a request body may be before any policy
 * work is spent on it. A PEP forwards an agent's tool-call arguments as they are, and an agent can be
 * prompt-injected into sending 96,000 tiny members in one megabyte: Cedar's cost grows with the
 * context it is given (about 13 µs a member when a policy reads the arguments), and every admitted
 * member is kept in the ledger for good. The lossless parser (parse.ts) enforces them as it reads: such
 * a body is refused whole, LIMIT_EXCEEDED with the JSON pointer of the first member (in document order)
 * past a limit, having parsed no further than that, before admission, Cedar views or evaluation.
 */

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
