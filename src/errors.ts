/**
 * The one error type of writ. Every refusal anywhere (admission, auth, state machine, store) is a
 * WritError with a stable code; the HTTP layer turns it into `{"error":{code,message,path?}}` with the
 * status from STATUS_BY_CODE, and the CLI prints the same shape. Codes are part of the contract
 * (docs/protocol.md §3, §4, §5, §8): never rename one.
 */
export const STATUS_BY_CODE = {
  INVALID_JSON: 400,
  ENVELOPE_INVALID: 400,
  INVALID_REQUEST: 400,
  BINDING_DUPLICATE_KEY: 400,
  BINDING_LONE_SURROGATE: 400,
  BINDING_UNSAFE_INTEGER: 400,
  BINDING_LOSSY_NUMBER: 400,
  BINDING_UNREPRESENTABLE: 400,
  BINDING_TOO_DEEP: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN_ROLE: 403,
  ACTOR_MISMATCH: 403,
  IDENTITY_MISMATCH: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  EXECUTION_NOT_FOUND: 404,
  EXECUTION_CONFLICT: 409,
  EXECUTION_IN_FLIGHT: 409,
  EXECUTION_TERMINAL: 409,
  EXECUTION_SUPERSEDED: 409,
  EXECUTION_NOT_INVOKING: 409,
  EXECUTION_NOT_UNKNOWN: 409,
  APPROVAL_STALE: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  STORE_UNAVAILABLE: 503,
  POLICY_UNAVAILABLE: 503,
  IDENTITY_UNAVAILABLE: 503,
  // Non-HTTP codes (CLI, startup, PEP)
  POLICY_INVALID: 400,
  STORE_LOCKED: 503,
  STORE_CORRUPT: 503,
  WITNESS_MISMATCH: 503,
  MISSING_CONTEXT: 400,
  PDP_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof STATUS_BY_CODE;

export class WritError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly path?: string;
  readonly details?: unknown;

  constructor(code: ErrorCode, message: string, opts: { path?: string; status?: number; details?: unknown; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'WritError';
    this.code = code;
    this.status = opts.status ?? STATUS_BY_CODE[code];
    if (opts.path !== undefined) this.path = opts.path;
    if (opts.details !== undefined) this.details = opts.details;
  }

  /** The contract's error body. */
  toBody(): { error: { code: string; message: string; path?: string } } {
    const error: { code: string; message: string; path?: string } = { code: this.code, message: this.message };
    if (this.path !== undefined) error.path = this.path;
    return { error };
  }
}

export function isWritError(e: unknown): e is WritError {
  return e instanceof WritError;
}
