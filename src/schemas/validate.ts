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

// RFC 3339 (shared with the policy engine's datetime conversion: src/util/rfc3339.ts)
export { isRfc3339, rfc3339ToDate } from '../util/rfc3339.js';
import { isRfc3339 } from '../util/rfc3339.js';
import type { Uid } from '../util/uid.js';

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

/** The rule a timestamp field follows, said once for every way a timestamp can fail (format, length, type). */
const TIMESTAMP_RULE = 'must be a strict RFC 3339 date-time with an offset (e.g. 2026-08-24T17:00:00+07:00 or 2026-08-24T10:00:00Z)';

function describe(e: ErrorObject): SchemaIssue {
  const params = e.params as Record<string, unknown>;
  // A timestamp that is too short (e.g. one without its offset) fails `minLength` before `format`:
  // name the rule, not the length.
  if (e.schemaPath.includes('/$defs/timestamp/') && e.keyword !== 'pattern') {
    return { path: e.instancePath, message: `${e.instancePath}: ${TIMESTAMP_RULE}` };
  }
  switch (e.keyword) {
    case 'enum': {
      const allowed = (params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ');
      return { path: e.instancePath, message: `${e.instancePath || '(body)'}: must be one of ${allowed}` };
    }
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
        return { path: e.instancePath, message: `${e.instancePath}: ${TIMESTAMP_RULE}` };
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
  if (pattern.startsWith('^(?!(?:true|false|if|')) return 'must be a Cedar type name (Name(::Name)*, no reserved identifier)';
  if (pattern.startsWith('^(?!\\.\\.?$)[A-Za-z0-9._:-]')) return 'must be 1–128 characters of A-Za-z0-9 . _ : -, and not . or ..';
  if (pattern === '^[^/]+$') return 'must not contain "/"';
  return `must match pattern ${pattern}`;
}

/** The first schema violation of `value` against a schema file, or null when it conforms. */
export function schemaIssue(file: SchemaFile, value: unknown): SchemaIssue | null {
  const fn = VALIDATORS.get(file)!;
  if (fn(value)) return null;
  return describe(fn.errors![0]!);
}

/**
 * The bodies the route schemas (schemas/*.json) admit, as the code after a validator reads them. Type
 * aliases, not interfaces, where the body is handed on as plain JSON (`Record<string, unknown>`).
 */

/** schemas/envelope.json (docs/protocol.md §2). */
export type DecisionEnvelope = {
  task_id: string;
  purpose: string;
  requester: Uid;
  actor: Uid;
  subject: Uid;
  authoritative_event?: string;
  execute_after?: string;
  evidence_refs?: string[];
  supersedes?: string | null;
  traceparent?: string;
};
/** schemas/decision-request.json: POST /v1/decisions. */
export type DecisionRequest = {
  execution_id: string;
  phase: 'propose' | 'execute';
  envelope: DecisionEnvelope;
  identity_token?: string;
  action: { server: string; tool: string; arguments: Record<string, unknown> };
};
/** schemas/tools-visible-request.json: POST /v1/tools/visible (§15). */
export type ToolsVisibleRequest = {
  envelope: DecisionEnvelope;
  server: string;
  tools: string[];
  identity_token?: string;
};
/** schemas/events-request.json: POST /v1/executions/{id}/events (§17); each event's data is admitted after. */
export type EventsRequest = {
  events: Array<{ type: string; data: unknown }>;
  identity_token?: string;
};
/** The members an AuthZEN request (schemas/authzen-evaluation(s)-request.json) may carry, each an object. */
type AuthzenMembers = {
  [k: string]: unknown;
  subject?: Record<string, unknown>;
  action?: Record<string, unknown>;
  resource?: Record<string, unknown>;
  context?: Record<string, unknown>;
};
/** schemas/authzen-evaluations-request.json: POST /access/v1/evaluations, the shape only (each item is checked with its defaults). */
export type AuthzenEvaluationsRequest = AuthzenMembers & {
  evaluations?: AuthzenMembers[];
  options?: { evaluations_semantic?: 'execute_all' | 'deny_on_first_deny' | 'permit_on_first_permit'; [k: string]: unknown };
  [k: string]: unknown;
};
export interface ApprovalRequest {
  actor: Uid;
  execution_id: string;
  binding: string;
  envelope_digest: string;
  expires_at: string;
}
export interface OutcomeRequest {
  status: 'committed' | 'rejected' | 'unknown';
  confirmation?: 'tool_reported' | 'system_of_record';
  result_digest?: string;
  downstream_ref?: string;
  detail?: string;
  identity_token?: string;
}
export interface ReconcileRequest {
  resolution: 'committed' | 'absent';
  evidence_ref: string;
}
export interface ConfirmRequest {
  evidence_ref: string;
  downstream_ref?: string;
}
export interface EntityUpsert {
  attrs: Record<string, unknown>;
  parents: unknown[];
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
export function validateDecisionRequest(body: unknown): asserts body is DecisionRequest {
  check(decisionFn, body, (path) => (path === '/envelope' || path.startsWith('/envelope/') ? 'ENVELOPE_INVALID' : 'INVALID_REQUEST'));
}

const toolsVisibleFn = VALIDATORS.get('tools-visible-request.json')!;

/** Body of POST /v1/tools/visible (§15). ENVELOPE_INVALID for the envelope, else INVALID_REQUEST. */
export function validateToolsVisibleRequest(body: unknown): asserts body is ToolsVisibleRequest {
  check(toolsVisibleFn, body, (path) => (path === '/envelope' || path.startsWith('/envelope/') ? 'ENVELOPE_INVALID' : 'INVALID_REQUEST'));
}

/** Body of POST /v1/approvals. INVALID_REQUEST. (Past / too distant expires_at is checked at runtime.) */
export function validateApprovalRequest(body: unknown): asserts body is ApprovalRequest {
  check(approvalFn, body, invalidRequest);
}

/** Body of POST /v1/executions/{id}/outcome. INVALID_REQUEST. */
export function validateOutcomeRequest(body: unknown): asserts body is OutcomeRequest {
  check(outcomeFn, body, invalidRequest);
}

/** Body of POST /v1/executions/{id}/reconcile. INVALID_REQUEST (resolution must be committed|absent). */
export function validateReconcileRequest(body: unknown): asserts body is ReconcileRequest {
  check(reconcileFn, body, invalidRequest);
}

/** Body of POST /v1/executions/{id}/confirm (§17). INVALID_REQUEST. */
export function validateConfirmRequest(body: unknown): asserts body is ConfirmRequest {
  check(VALIDATORS.get('confirm-request.json')!, body, invalidRequest);
}

/** Body of POST /v1/executions/{id}/events (§17), before each event's data is admitted. INVALID_REQUEST. */
export function validateEventsRequest(body: unknown): asserts body is EventsRequest {
  check(VALIDATORS.get('events-request.json')!, body, invalidRequest);
}

/** Body of PUT /v1/entities/{type}/{id}: `{attrs: object, parents: [uid]}`. INVALID_REQUEST. */
export function validateEntityUpsert(body: unknown): asserts body is EntityUpsert {
  check(entityUpsertFn, body, invalidRequest);
}

const authzenEvaluationFn = VALIDATORS.get('authzen-evaluation-request.json')!;
const authzenEvaluationsFn = VALIDATORS.get('authzen-evaluations-request.json')!;

/** One AuthZEN evaluation (docs/protocol.md §10), or a batch item with its defaults filled in. The first issue, or null. */
export function authzenEvaluationIssue(body: unknown): SchemaIssue | null {
  return authzenEvaluationFn(body) ? null : describe(authzenEvaluationFn.errors![0]!);
}

/** Body of POST /access/v1/evaluations (shape only: each item is checked with its defaults). INVALID_REQUEST. */
export function validateAuthzenEvaluations(body: unknown): asserts body is AuthzenEvaluationsRequest {
  check(authzenEvaluationsFn, body, invalidRequest);
}
