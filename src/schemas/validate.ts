/**
 * Request validation against the JSON Schemas in `schemas/` (draft 2020-12), compiled once at module
 * load with ajv. Each validator throws a WritError carrying the contract's code and `path`, the JSON
 * pointer (RFC 6901, relative to the body root) of the first failing member:
 *  - a missing required field points at the field (`/envelope/task_id`), not its parent;
 *  - an unknown field points at the unknown field (`/action/extra`);
 *  - anything else points at the offending value (`/envelope/requester/type`).
 * ajv runs with `allErrors: false`, so validation stops at the first error (the hot path of a
 * decision pays for one pass over the envelope and nothing else; arguments are only type-checked here,
 * their admission is writ-bind/1's job).
 */
import Ajv2020Module from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { WritError, type ErrorCode } from '../errors.js';
import { loadSchemas, SCHEMA_ID_BASE, type SchemaFile } from './load.js';

// ---------------------------------------------------------------------------------------------
// RFC 3339
// ---------------------------------------------------------------------------------------------

/*
 * Strict RFC 3339 §5.6 `date-time`:
 *   YYYY-MM-DD "T" HH:MM:SS [ "." 1*9DIGIT ] ( "Z" / ("+" / "-") HH:MM )
 * Decisions (documented in the README and in schemas/defs.json):
 *  - the offset is mandatory (`Z` or ±HH:MM with the colon); `-00:00` is accepted and means UTC;
 *  - `T` and `Z` must be upper case (RFC 3339 §5.6 lets a specification require this; Cedar's
 *    datetime() also requires it), and no space separator;
 *  - the date and time must exist: month 01–12, the day within that month (leap years per the
 *    Gregorian rules), hour 00–23, minute 00–59, second 00–59, offset hour 00–23, minute 00–59;
 *  - leap seconds (`:60`) are refused: neither JS Date nor Cedar can represent them;
 *  - 1 to 9 fractional digits; beyond milliseconds they are accepted and truncated by rfc3339ToDate.
 */
function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

interface Rfc3339Parts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  millis: number;
  offsetMinutes: number;
}

/** The value of `n` ASCII digits of `s` from `at`, or -1 when one of them is not a digit. */
function digits(s: string, at: number, n: number): number {
  let v = 0;
  for (let i = at; i < at + n; i++) {
    const c = s.charCodeAt(i) - 48;
    if (!(c >= 0 && c <= 9)) return -1; // also NaN past the end
    v = v * 10 + c;
  }
  return v;
}

// Hand-rolled rather than a regex: this runs on the decision hot path (execute_after) and is ~5x
// faster than an equivalent capture-group regex.
function parseRfc3339(s: string): Rfc3339Parts | undefined {
  if (typeof s !== 'string') return undefined;
  const len = s.length;
  // Shortest: 2026-08-24T10:00:00Z (20); longest: 9 fractional digits and ±HH:MM (35).
  if (len < 20 || len > 35) return undefined;
  if (s.charCodeAt(4) !== 45 /* - */ || s.charCodeAt(7) !== 45 || s.charCodeAt(10) !== 84 /* T */) return undefined;
  if (s.charCodeAt(13) !== 58 /* : */ || s.charCodeAt(16) !== 58) return undefined;
  const year = digits(s, 0, 4);
  const month = digits(s, 5, 2);
  const day = digits(s, 8, 2);
  const hour = digits(s, 11, 2);
  const minute = digits(s, 14, 2);
  const second = digits(s, 17, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return undefined;
  let i = 19;
  let millis = 0;
  if (s.charCodeAt(i) === 46 /* . */) {
    const from = ++i;
    while (i < len && i - from < 10) {
      const c = s.charCodeAt(i) - 48;
      if (!(c >= 0 && c <= 9)) break;
      if (i - from < 3) millis += c * (i - from === 0 ? 100 : i - from === 1 ? 10 : 1);
      i++;
    }
    const n = i - from;
    if (n < 1 || n > 9) return undefined;
  }
  let offsetMinutes = 0;
  const z = s.charCodeAt(i);
  if (z === 90 /* Z */) {
    if (i + 1 !== len) return undefined;
  } else if (z === 43 /* + */ || z === 45 /* - */) {
    if (i + 6 !== len || s.charCodeAt(i + 3) !== 58) return undefined;
    const oh = digits(s, i + 1, 2);
    const om = digits(s, i + 4, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return undefined;
    offsetMinutes = (z === 45 ? -1 : 1) * (oh * 60 + om);
  } else {
    return undefined;
  }
  return { year, month, day, hour, minute, second, millis, offsetMinutes };
}

/** True when `s` is a strict RFC 3339 date-time with an offset and a real calendar date and time. */
export function isRfc3339(s: string): boolean {
  return parseRfc3339(s) !== undefined;
}

/**
 * The instant a strict RFC 3339 date-time denotes (fractional digits beyond milliseconds are
 * truncated). Throws WritError INVALID_REQUEST when `s` is not one (see isRfc3339).
 */
export function rfc3339ToDate(s: string): Date {
  const p = parseRfc3339(s);
  if (!p) throw new WritError('INVALID_REQUEST', 'not a strict RFC 3339 date-time with an offset');
  const d = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC maps years 0–99 to 1900–1999.
  d.setUTCFullYear(p.year, p.month - 1, p.day);
  d.setUTCHours(p.hour, p.minute, p.second, p.millis);
  return new Date(d.getTime() - p.offsetMinutes * 60_000);
}

// ---------------------------------------------------------------------------------------------
// ajv
// ---------------------------------------------------------------------------------------------

// ajv and ajv-formats are CommonJS with `exports.default`; under NodeNext the default import is the
// module object, so take `.default` when present.
type AjvCtor = typeof import('ajv/dist/2020.js').default;
type AddFormats = typeof import('ajv-formats').default;
const Ajv2020 = ((Ajv2020Module as unknown as { default?: AjvCtor }).default ?? Ajv2020Module) as AjvCtor;
const addFormats = ((addFormatsModule as unknown as { default?: AddFormats }).default ?? addFormatsModule) as AddFormats;

const ajv = new Ajv2020({
  allErrors: false,
  strict: true,
  allowUnionTypes: true,
  validateFormats: true,
  // Every pattern in schemas/ is ASCII-only, so the `u` flag buys nothing and costs time.
  unicodeRegExp: false,
  // minLength/maxLength count UTF-16 code units (String#length), not code points: this bounds
  // memory just as well and saves a per-character scan of every string (~2 µs of ~3 µs per decision
  // body). ajv flags the option as deprecated; that one warning is dropped below.
  unicode: false,
  logger: {
    log: (...args: unknown[]) => console.log(...args),
    warn: (...args: unknown[]) => {
      if (!String(args[0]).startsWith('DEPRECATED: option unicode')) console.warn(...args);
    },
    error: (...args: unknown[]) => console.error(...args),
  },
});
addFormats(ajv);
// Replace ajv-formats' lenient date-time (it accepts lower case, a space separator and +HHMM) with
// the strict one above.
ajv.addFormat('date-time', { type: 'string', validate: isRfc3339 });
for (const schema of loadSchemas().values()) ajv.addSchema(schema);

function compiled(file: SchemaFile): ValidateFunction {
  const fn = ajv.getSchema(SCHEMA_ID_BASE + file);
  if (!fn) throw new Error(`writ: schema ${file} did not compile`);
  return fn;
}

/** One compiled validator per schema file, built eagerly at module load. */
const VALIDATORS = new Map<SchemaFile, ValidateFunction>();
for (const file of loadSchemas().keys()) VALIDATORS.set(file, compiled(file));

function escapePointer(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

export interface SchemaIssue {
  /** JSON pointer of the first failing member, relative to the validated value's root. */
  path: string;
  message: string;
}

function describe(e: ErrorObject): SchemaIssue {
  const params = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required': {
      const path = `${e.instancePath}/${escapePointer(String(params.missingProperty))}`;
      return { path, message: `${path}: required field is missing` };
    }
    case 'additionalProperties': {
      const path = `${e.instancePath}/${escapePointer(String(params.additionalProperty))}`;
      return { path, message: `${path}: unknown field` };
    }
    case 'format':
      if (params.format === 'date-time') {
        return { path: e.instancePath, message: `${e.instancePath}: must be a strict RFC 3339 date-time with an offset (e.g. 2026-08-24T17:00:00+07:00)` };
      }
      break;
    case 'pattern':
      return { path: e.instancePath, message: `${e.instancePath}: ${describePattern(String(params.pattern))}` };
    case 'not':
      return { path: e.instancePath, message: `${e.instancePath}: is not an acceptable value` };
    default:
      break;
  }
  return { path: e.instancePath, message: `${e.instancePath || '(body)'}: ${e.message ?? 'is invalid'}` };
}

function describePattern(pattern: string): string {
  if (pattern.startsWith('^[A-Za-z_][A-Za-z0-9_]*(::')) return 'must be a Cedar type name (Name(::Name)*)';
  if (pattern.startsWith('^[A-Za-z0-9._:-]')) return 'must be 1–128 characters of A-Za-z0-9 . _ : -';
  return `must match pattern ${pattern}`;
}

/** The first schema violation of `value` against a schema file, or null when it conforms. */
export function schemaIssue(file: SchemaFile, value: unknown): SchemaIssue | null {
  const fn = VALIDATORS.get(file)!;
  if (fn(value)) return null;
  return describe(fn.errors![0]!);
}

function check(fn: ValidateFunction, body: unknown, code: (path: string) => ErrorCode): void {
  if (fn(body)) return;
  const issue = describe(fn.errors![0]!);
  throw new WritError(code(issue.path), issue.message, { path: issue.path });
}

const decisionFn = VALIDATORS.get('decision-request.json')!;
const approvalFn = VALIDATORS.get('approval-request.json')!;
const outcomeFn = VALIDATORS.get('outcome-request.json')!;
const reconcileFn = VALIDATORS.get('reconcile-request.json')!;
const entityUpsertFn = VALIDATORS.get('entity-upsert.json')!;

const invalidRequest = (): ErrorCode => 'INVALID_REQUEST';

/**
 * Body of POST /v1/decisions. Any failure at or under `/envelope` (including a missing or non-object
 * envelope) is ENVELOPE_INVALID; everything else (missing execution_id, bad phase, action not an
 * object, unknown top-level fields, a body that is not an object) is INVALID_REQUEST.
 */
export function validateDecisionRequest(body: unknown): void {
  check(decisionFn, body, (path) =>
    path === '/envelope' || path.startsWith('/envelope/') ? 'ENVELOPE_INVALID' : 'INVALID_REQUEST',
  );
}

/** Body of POST /v1/approvals. INVALID_REQUEST. (Past / too distant expires_at is checked at runtime.) */
export function validateApprovalRequest(body: unknown): void {
  check(approvalFn, body, invalidRequest);
}

/** Body of POST /v1/executions/{id}/outcome. INVALID_REQUEST. */
export function validateOutcomeRequest(body: unknown): void {
  check(outcomeFn, body, invalidRequest);
}

/** Body of POST /v1/executions/{id}/reconcile. INVALID_REQUEST (resolution must be committed|absent). */
export function validateReconcileRequest(body: unknown): void {
  check(reconcileFn, body, invalidRequest);
}

/** Body of PUT /v1/entities/{type}/{id}: `{attrs: object, parents: [uid]}`. INVALID_REQUEST. */
export function validateEntityUpsert(body: unknown): void {
  check(entityUpsertFn, body, invalidRequest);
}
