/**
 * `GET /openapi.json`: an OpenAPI 3.1 document built from the same JSON Schema files the request
 * validators enforce (components.schemas hold them, keyed by each schema's `title`). Cross-file
 * `$ref`s (`defs.json#/$defs/uid`, `envelope.json`) and in-file ones (`#/$defs/x`) are rewritten to
 * document pointers (`#/components/schemas/Defs/$defs/uid`), and `$id`/`$schema` are dropped, so
 * tools that do not resolve `$id` still follow every reference.
 * Each route names the roles it admits in `x-writ-roles` (and in its description); routes without
 * auth have `security: []`.
 */
import { MAX_PAGE_LIMIT } from '../authzen/search.js';
import { STATUS_BY_CODE, type ErrorCode } from '../errors.js';
import { LEDGER_RECORD_KINDS, loadSchemas, type JsonSchema, type SchemaFile } from './load.js';

type Obj = Record<string, unknown>;
type Role = 'pep' | 'approver' | 'auditor' | 'reconciler' | 'admin' | 'evaluator';

const REF_PREFIX = '#/components/schemas/';

function componentName(file: SchemaFile, schema: JsonSchema): string {
  const title = schema.title;
  if (typeof title !== 'string' || !/^[A-Za-z][A-Za-z0-9]*$/.test(title)) throw new Error(`writ: schemas/${file} needs a component-safe title`);
  return title;
}

function rewriteRefs(node: unknown, self: string, names: ReadonlyMap<string, string>): unknown {
  if (Array.isArray(node)) return node.map((n) => rewriteRefs(n, self, names));
  if (node === null || typeof node !== 'object') return node;
  const out: Obj = {};
  for (const [k, v] of Object.entries(node as Obj)) {
    if (k === '$id' || k === '$schema') continue;
    if (k === '$ref' && typeof v === 'string') {
      const hash = v.indexOf('#');
      const file = hash < 0 ? v : v.slice(0, hash);
      const fragment = hash < 0 ? '' : v.slice(hash + 1);
      const target = file === '' ? self : names.get(file);
      if (target === undefined) throw new Error(`writ: unresolvable $ref ${v} in ${self}`);
      out[k] = REF_PREFIX + target + fragment;
      continue;
    }
    out[k] = rewriteRefs(v, self, names);
  }
  return out;
}

const ref = (name: string): Obj => ({ $ref: REF_PREFIX + name });
const json = (schema: Obj): Obj => ({ 'application/json': { schema } });

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad request',
  401: 'Missing or unknown bearer token',
  403: 'Forbidden',
  404: 'Not found',
  409: 'Conflict with the execution state',
  413: 'Body larger than 1 MiB',
  415: 'Body is not application/json',
  429: "Over the caller's share of concurrent work (Retry-After)",
  503: 'Fail closed: store or policy unavailable',
};

/** Error responses of one operation: status → the codes it can carry there. */
function errorResponses(codes: readonly ErrorCode[]): Obj {
  const byStatus = new Map<number, string[]>();
  for (const code of codes) {
    const status = STATUS_BY_CODE[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Obj = {};
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    out[String(status)] = {
      description: `${STATUS_TEXT[status] ?? 'Error'}: ${list.join(', ')}`,
      content: json(ref('Error')),
    };
  }
  return out;
}

/**
 * The refusals a route gives for what it is, in the order its error responses list them: `auth` for a
 * route that admits roles, `body` for one that reads a JSON body, and the others where the route names
 * them in `refusals`. A route's own refusals (`codes`) follow.
 */
const REFUSALS = {
  auth: ['UNAUTHENTICATED', 'FORBIDDEN_ROLE', 'STORE_UNAVAILABLE', 'IDENTITY_UNAVAILABLE'],
  body: ['INVALID_JSON', 'INVALID_REQUEST', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'],
  /** A body that carries the typed envelope (docs/protocol.md §2). */
  envelope: ['ENVELOPE_INVALID'],
  /** A body read by the lossless parser (writ-bind/1, docs/protocol.md §3.1). */
  binding: ['BINDING_DUPLICATE_KEY', 'BINDING_LONE_SURROGATE', 'BINDING_UNSAFE_INTEGER', 'BINDING_LOSSY_NUMBER', 'BINDING_UNREPRESENTABLE', 'BINDING_TOO_DEEP'],
  /** A route that evaluates policy within the caller's share (docs/protocol.md §8.1). */
  fairness: ['LIMIT_EXCEEDED', 'RATE_LIMITED', 'EVALUATION_TIMEOUT'],
} as const satisfies Record<string, readonly ErrorCode[]>;

type Refusal = Exclude<keyof typeof REFUSALS, 'auth' | 'body'>;

interface OpSpec {
  operationId: string;
  summary: string;
  roles: readonly Role[] | null;
  description?: string;
  parameters?: Obj[];
  /** The request body: a component's name, or an inline schema (`optional` when the route takes none as well). */
  body?: string | { schema: Obj; optional?: true };
  ok: { status: number; description: string; content?: Obj };
  /** What else the route is, beyond its roles and body. */
  refusals?: readonly Refusal[];
  /** The refusals of this route alone. */
  codes?: readonly ErrorCode[];
  tags: string[];
}

function operation(spec: OpSpec): Obj {
  const op: Obj = { operationId: spec.operationId, summary: spec.summary, tags: spec.tags };
  const roleText = spec.roles === null ? 'No authentication.' : `Roles: ${spec.roles.join(', ')} (bearer token).`;
  op.description = spec.description ? `${spec.description}\n\n${roleText}` : roleText;
  if (spec.roles === null) {
    op.security = [];
  } else {
    op.security = [{ bearerAuth: [] }];
    op['x-writ-roles'] = [...spec.roles];
  }
  if (spec.parameters) op.parameters = spec.parameters;
  if (spec.body) {
    const { schema, optional } = typeof spec.body === 'string' ? { schema: ref(spec.body), optional: undefined } : spec.body;
    op.requestBody = { required: !optional, content: json(schema) };
  }
  const kinds: (keyof typeof REFUSALS)[] = [
    ...(spec.roles === null ? [] : ['auth' as const]),
    ...(spec.body ? ['body' as const] : []),
    ...(spec.refusals ?? []),
  ];
  const codes = [...kinds.flatMap((kind) => REFUSALS[kind]), ...(spec.codes ?? [])];
  op.responses = {
    [String(spec.ok.status)]: { description: spec.ok.description, ...(spec.ok.content ? { content: spec.ok.content } : {}) },
    ...errorResponses([...new Set(codes)]),
  };
  return op;
}

const pathParam = (name: string, schema: Obj, description: string): Obj => ({ name, in: 'path', required: true, schema, description });
const queryParam = (name: string, schema: Obj, description: string, required = false): Obj => ({ name, in: 'query', required, schema, description });

const EXECUTION_ID = pathParam('id', ref('Defs/$defs/executionId'), 'The execution id.');
const ACTOR_QUERY = (required: boolean, who: string): Obj =>
  queryParam(
    'actor',
    { type: 'string', examples: ['Agent::"offboarding-agent-prod"'] },
    `The execution's actor in Cedar syntax Type::"id", URL-encoded. ${who}`,
    required,
  );
const SEQ_SCHEMA = ref('Defs/$defs/seq');

/** State change answers (outcome, reconcile, revoke): not fixed by the contract beyond these fields. */
const TRANSITION: Obj = {
  type: 'object',
  description: 'The execution after the transition and the ledger record that made it durable.',
  properties: {
    execution_id: ref('Defs/$defs/executionId'),
    state: ref('Defs/$defs/executionState'),
    record: ref('Defs/$defs/recordRef'),
  },
};

/**
 * POST /access/v1/search/{kind} (docs/protocol.md §15). A subject search is refused to a pep token by
 * role; the others only with another actor as subject.
 */
function searchOperation(kind: 'subject' | 'resource' | 'action'): Obj {
  const found =
    kind === 'action'
      ? { required: ['name'], properties: { name: { type: 'string' } } }
      : { required: ['type', 'id'], properties: { type: { type: 'string' }, id: { type: 'string' } } };
  const pep =
    kind === 'subject' ? 'a pep token may not search subjects (403 FORBIDDEN_ROLE)' : 'a pep token only with its own actor as subject (403 ACTOR_MISMATCH)';
  const open = kind === 'action' ? 'it names no `action`' : `\`${kind}.type\` is the type searched; its \`id\`, when sent, is ignored`;
  return operation({
    operationId: `authzenSearch${kind[0]!.toUpperCase()}${kind.slice(1)}`,
    tags: ['authzen'],
    summary: `AuthZEN search: the ${kind}s for which the evaluation would be true`,
    description:
      `AuthZEN 1.0 §8 (docs/protocol.md §15): an evaluation with its ${kind} left open; answers \`{results, page: {next_token}}\` in a stable order ` +
      '(`next_token` "" when done; `page: {limit?, token?}` in the request pages). Each page is one ledger record (kind decision, api authzen, ' +
      `\`search\`, \`results\`). Role evaluator; ${pep}.`,
    roles: ['evaluator', 'pep'],
    body: {
      schema: {
        type: 'object',
        description: `An evaluation (AuthzenEvaluationRequest) with its ${kind} left open (${open}), and \`page\` to ask for a page.`,
        properties: {
          page: {
            type: 'object',
            additionalProperties: false,
            properties: {
              limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE_LIMIT },
              token: { type: 'string', description: 'A `next_token` of this search.' },
            },
          },
        },
      },
    },
    ok: {
      status: 200,
      description: 'One page of results.',
      content: json({
        type: 'object',
        required: ['results', 'page'],
        properties: {
          results: { type: 'array', items: { type: 'object', ...found } },
          page: { type: 'object', required: ['next_token'], properties: { next_token: { type: 'string' } } },
        },
      }),
    },
    refusals: ['binding'],
    codes: kind === 'subject' ? [] : ['ACTOR_MISMATCH'],
  });
}

/** The OpenAPI 3.1 document of writ's HTTP API (a fresh object on every call). */
export function buildOpenApi(): Obj {
  const schemas = loadSchemas();
  const names = new Map<string, string>();
  for (const [file, schema] of schemas) names.set(file, componentName(file, schema));
  const components: Obj = {};
  for (const [file, schema] of schemas) {
    const name = names.get(file)!;
    components[name] = rewriteRefs(schema, name, names);
  }

  const paths: Obj = {
    '/v1/decisions': {
      post: operation({
        operationId: 'decide',
        tags: ['decisions'],
        summary: 'Ask for a decision on one tool call (propose or execute)',
        description:
          'Evaluates the policies over the typed envelope and the admitted arguments, reserves or advances the execution, and answers only after the ' +
          'ledger record is durable. `envelope.actor` must equal the actor bound to the token.',
        roles: ['pep'],
        body: 'DecisionRequest',
        ok: { status: 200, description: 'The decision (allow, deny or approval_required).', content: json(ref('DecisionResponse')) },
        refusals: ['envelope', 'binding', 'fairness'],
        codes: [
          'ACTOR_MISMATCH',
          'IDENTITY_MISMATCH',
          'EXECUTION_NOT_FOUND',
          'EXECUTION_CONFLICT',
          'EXECUTION_IN_FLIGHT',
          'EXECUTION_TERMINAL',
          'EXECUTION_SUPERSEDED',
          'POLICY_UNAVAILABLE',
        ],
      }),
    },
    '/access/v1/evaluation': {
      post: operation({
        operationId: 'authzenEvaluation',
        tags: ['authzen'],
        summary: 'AuthZEN Authorization API 1.0: one access evaluation',
        description:
          'Cedar request: principal = <subject.type>::"<subject.id>", action = Action::"<action.name>", resource = <resource.type>::"<resource.id>", ' +
          'context = the admitted `context` with `action.properties` under `context.action`; `properties` are per-request attributes under the stored ' +
          'ones (stored wins). `decision` is true only for allow; approval_required is false with `context.obligations`. Each evaluation is a ledger ' +
          'record (kind `decision`, `api: "authzen"`), durable before the answer. A pep token may ask only about its own actor as subject (403 ' +
          'ACTOR_MISMATCH).',
        roles: ['evaluator', 'pep'],
        body: 'AuthzenEvaluationRequest',
        ok: { status: 200, description: 'The decision.', content: json(ref('AuthzenEvaluationResponse')) },
        refusals: ['binding', 'fairness'],
        codes: ['ACTOR_MISMATCH'],
      }),
    },
    '/access/v1/evaluations': {
      post: operation({
        operationId: 'authzenEvaluations',
        tags: ['authzen'],
        summary: 'AuthZEN Authorization API 1.0: a batch of access evaluations',
        description:
          'Top-level subject/action/resource/context are defaults for each item (an item member replaces the default). `options.evaluations_semantic`: ' +
          'execute_all (default), deny_on_first_deny, permit_on_first_permit (evaluation stops after the deciding item; skipped items are neither ' +
          'evaluated nor recorded). Without `evaluations` (or with an empty array) the answer is that of /access/v1/evaluation. A malformed item fails ' +
          'the whole batch (400, `path` into the item, e.g. /evaluations/1/resource/id); a pep token asking about another subject in any item fails it ' +
          'with 403. All records of a batch are written in one durable commit.',
        roles: ['evaluator', 'pep'],
        body: 'AuthzenEvaluationsRequest',
        ok: {
          status: 200,
          description: 'The decisions, in item order (or one decision when the body has no or an empty `evaluations`).',
          content: json({ oneOf: [ref('AuthzenEvaluationsResponse'), ref('AuthzenEvaluationResponse')] }),
        },
        refusals: ['binding', 'fairness'],
        codes: ['ACTOR_MISMATCH'],
      }),
    },
    '/access/v1/search/subject': { post: searchOperation('subject') },
    '/access/v1/search/resource': { post: searchOperation('resource') },
    '/access/v1/search/action': { post: searchOperation('action') },
    '/.well-known/authzen-configuration': {
      get: operation({
        operationId: 'authzenConfiguration',
        tags: ['authzen'],
        summary: 'AuthZEN PDP metadata',
        description: "Absolute URLs of this sidecar, built from the request's Host.",
        roles: null,
        ok: { status: 200, description: 'The PDP metadata.', content: json(ref('AuthzenConfiguration')) },
      }),
    },
    '/v1/executions/{id}': {
      get: operation({
        operationId: 'getExecution',
        tags: ['executions'],
        summary: 'Read an execution, its approvals and its ledger records',
        description:
          'A pep reads its own executions; an auditor names the actor with `?actor=`; so does an approver, for an execution one of whose decisions ' +
          'required approval by a group it is in (any other: 404).',
        roles: ['pep', 'auditor', 'approver'],
        parameters: [EXECUTION_ID, ACTOR_QUERY(false, 'Required for auditor; a pep reads its own actor.')],
        ok: { status: 200, description: 'The execution.', content: json(ref('Execution')) },
        codes: ['INVALID_REQUEST', 'EXECUTION_NOT_FOUND'],
      }),
    },
    '/v1/executions/{id}/outcome': {
      post: operation({
        operationId: 'reportOutcome',
        tags: ['executions'],
        summary: 'Report the outcome of an invoked tool call',
        description: 'Only from `invoking`; the terminal state and its ledger record are written in one transaction.',
        roles: ['pep'],
        parameters: [EXECUTION_ID],
        body: 'OutcomeRequest',
        ok: { status: 200, description: 'The execution is terminal.', content: json(TRANSITION) },
        codes: ['EXECUTION_NOT_FOUND', 'EXECUTION_NOT_INVOKING', 'EXECUTION_TERMINAL'],
      }),
    },
    '/v1/executions/{id}/reconcile': {
      post: operation({
        operationId: 'reconcile',
        tags: ['executions'],
        summary: 'Resolve an execution whose outcome is unknown',
        description:
          'From `unknown`, or from `invoking` once it has been invoking for `stuck_after_s` (else 409); moves it to `reconciled` with resolution ' +
          'committed or absent.',
        roles: ['reconciler'],
        parameters: [EXECUTION_ID, ACTOR_QUERY(true, 'Required.')],
        body: 'ReconcileRequest',
        ok: { status: 200, description: 'The execution is reconciled.', content: json(TRANSITION) },
        codes: ['EXECUTION_NOT_FOUND', 'EXECUTION_NOT_UNKNOWN', 'EXECUTION_TERMINAL'],
      }),
    },
    '/v1/tools/visible': {
      post: operation({
        operationId: 'visibleTools',
        tags: ['decisions'],
        summary: "Which of a server's tools this actor could be allowed (or need approval) to call for this requester and subject",
        description:
          'For tool lists (docs/protocol.md §15). A tool is left out only when the policies in force deny every call of it whatever its arguments and ' +
          'the rest of the context (Cedar partial evaluation). Nothing is ledgered; a call of a left-out tool is still decided as any call. A pep token ' +
          'may ask only for its own actor (403 ACTOR_MISMATCH).',
        roles: ['pep'],
        body: 'ToolsVisibleRequest',
        ok: {
          status: 200,
          description: 'The visible tools, in the order asked, and the policy version they were judged under.',
          content: json({
            type: 'object',
            required: ['visible', 'policy_version'],
            properties: { visible: { type: 'array', items: { type: 'string' } }, policy_version: { type: 'string' } },
          }),
        },
        refusals: ['envelope'],
        codes: ['ACTOR_MISMATCH'],
      }),
    },
    '/v1/executions': {
      get: operation({
        operationId: 'reconciliationQueue',
        tags: ['executions'],
        summary: 'The reconciliation queue: executions unknown or invoking, oldest first',
        roles: ['reconciler', 'auditor'],
        parameters: [
          queryParam('state', { type: 'string', enum: ['unknown', 'invoking'] }, 'Required.'),
          queryParam('older_than_s', { type: 'integer', minimum: 0 }, 'Only those in that state for at least this many seconds.'),
          queryParam('limit', { type: 'integer', minimum: 1, maximum: 1000 }, 'Page size (100).'),
          queryParam('from', { type: 'string' }, 'The `next` of the page before.'),
        ],
        ok: {
          status: 200,
          description: '`since`: when the execution entered that state.',
          content: json({
            type: 'object',
            required: ['executions', 'next'],
            properties: {
              executions: { type: 'array', items: { type: 'object', required: ['execution_id', 'actor', 'state', 'binding', 'server', 'tool', 'since'] } },
              next: { type: ['string', 'null'] },
            },
          }),
        },
        codes: ['INVALID_REQUEST'],
      }),
    },
    '/v1/executions/{id}/confirm': {
      post: operation({
        operationId: 'confirmExecution',
        tags: ['executions'],
        summary: 'The system of record confirms a committed outcome the tool reported (once)',
        roles: ['reconciler'],
        parameters: [EXECUTION_ID, ACTOR_QUERY(true, 'Required.')],
        body: 'ConfirmRequest',
        ok: { status: 200, description: 'A `confirmation` record was written.', content: json(TRANSITION) },
        codes: ['EXECUTION_NOT_FOUND', 'EXECUTION_NOT_CONFIRMABLE'],
      }),
    },
    '/v1/executions/{id}/events': {
      post: operation({
        operationId: 'sealEvents',
        tags: ['executions'],
        summary: 'Seal what the tool did inside the call, one `event` record each (only while invoking)',
        roles: ['pep'],
        parameters: [EXECUTION_ID],
        body: 'EventsRequest',
        ok: {
          status: 200,
          description: 'The records, in order.',
          content: json({
            type: 'object',
            properties: { execution_id: { type: 'string' }, state: { type: 'string' }, records: { type: 'array', items: ref('Defs/$defs/recordRef') } },
          }),
        },
        refusals: ['binding'],
        codes: ['EXECUTION_NOT_FOUND', 'EXECUTION_NOT_INVOKING'],
      }),
    },
    '/v1/approvals/pending': {
      get: operation({
        operationId: 'pendingApprovals',
        tags: ['approvals'],
        summary: 'What waits for this approver: proposed executions whose latest decision needs one of its groups',
        description: 'Newest decision first; `action.arguments` exactly as admitted (what the tool would receive).',
        roles: ['approver'],
        ok: {
          status: 200,
          description: 'The pending executions.',
          content: json({ type: 'object', required: ['pending'], properties: { pending: { type: 'array', items: { type: 'object' } } } }),
        },
      }),
    },
    '/v1/approvals': {
      post: operation({
        operationId: 'approve',
        tags: ['approvals'],
        summary: 'Approve one proposed execution, bound to its binding and envelope digest',
        description:
          "The approver is the token's principal. The approval also binds the digest of the subject entity's record now; a changed fact invalidates it.",
        roles: ['approver'],
        body: 'ApprovalRequest',
        ok: { status: 201, description: 'The approval was recorded.', content: json(ref('ApprovalResponse')) },
        codes: ['EXECUTION_NOT_FOUND', 'APPROVAL_STALE'],
      }),
    },
    '/v1/approvals/{id}/revoke': {
      post: operation({
        operationId: 'revokeApproval',
        tags: ['approvals'],
        summary: 'Revoke an approval (only the approver who gave it)',
        roles: ['approver'],
        parameters: [pathParam('id', { type: 'string', minLength: 1 }, 'The approval id.')],
        body: { schema: { type: 'object', description: 'None is needed; one that is sent is a JSON object, its members not read.' }, optional: true },
        ok: {
          status: 200,
          description: 'The approval is revoked.',
          content: json({ type: 'object', properties: { approval_id: { type: 'string' }, record: ref('Defs/$defs/recordRef') } }),
        },
        codes: ['NOT_FOUND'],
      }),
    },
    '/v1/entities/{type}/{id}': {
      parameters: [
        pathParam('type', ref('Defs/$defs/cedarTypeName'), 'The Cedar entity type, e.g. Employee or Org::Team.'),
        pathParam('id', { type: 'string', maxLength: 1024 }, 'The entity id (URL-encoded).'),
      ],
      put: operation({
        operationId: 'upsertEntity',
        tags: ['entities'],
        summary: 'Create or replace a trusted entity',
        description: 'Ledgered as kind `entity`; moves `entities_version`; invalidates approvals bound to the old record.',
        roles: ['admin'],
        body: 'EntityUpsert',
        ok: { status: 200, description: 'The stored entity.', content: json(ref('Entity')) },
      }),
      get: operation({
        operationId: 'getEntity',
        tags: ['entities'],
        summary: 'Read a trusted entity',
        roles: ['admin', 'auditor'],
        ok: { status: 200, description: 'The entity.', content: json(ref('Entity')) },
        codes: ['INVALID_REQUEST', 'NOT_FOUND'],
      }),
    },
    '/v1/ledger/records': {
      get: operation({
        operationId: 'listRecords',
        tags: ['ledger'],
        summary: 'List ledger records in seq order',
        roles: ['auditor'],
        parameters: [
          queryParam('from', SEQ_SCHEMA, 'First seq (default 0).'),
          queryParam('limit', { type: 'integer', minimum: 1, maximum: 1000 }, 'Page size, at most 1000.'),
          queryParam('kind', { type: 'string', enum: [...LEDGER_RECORD_KINDS] }, 'Only records of this kind.'),
          queryParam('actor', { type: 'string' }, 'Only records of this actor, Type::"id" (URL-encoded).'),
          queryParam('execution_id', ref('Defs/$defs/executionId'), 'Only records naming this execution.'),
          queryParam('task_id', { type: 'string' }, 'Only the decision records of this envelope task_id.'),
          queryParam(
            'trace_id',
            { type: 'string', pattern: '^[0-9a-f]{32}$' },
            "Only the decision records of this trace (the envelope traceparent's trace id).",
          ),
        ],
        ok: {
          status: 200,
          description:
            'A page of records. Combined filters that match little may give a short page, even an empty one, with `next` set: follow `next` until it is null.',
          content: json(ref('RecordsPage')),
        },
        codes: ['INVALID_REQUEST'],
      }),
    },
    '/v1/ledger/records/{seq}': {
      get: operation({
        operationId: 'getRecord',
        tags: ['ledger'],
        summary: 'Read one ledger record',
        roles: ['auditor'],
        parameters: [pathParam('seq', SEQ_SCHEMA, 'The record seq.')],
        ok: { status: 200, description: 'The record.', content: json(ref('LedgerRecord')) },
        codes: ['INVALID_REQUEST', 'NOT_FOUND'],
      }),
    },
    '/v1/ledger/checkpoint': {
      get: operation({
        operationId: 'getCheckpoint',
        tags: ['ledger'],
        summary: 'The latest checkpoint record',
        roles: ['auditor'],
        ok: { status: 200, description: 'The latest signed checkpoint.', content: json(ref('Checkpoint')) },
        codes: ['NOT_FOUND'],
      }),
    },
    '/v1/ledger/keys': {
      get: operation({
        operationId: 'getKeys',
        tags: ['ledger'],
        summary: 'Every ledger signing key',
        roles: ['auditor'],
        ok: { status: 200, description: 'The keys.', content: json(ref('Keys')) },
      }),
    },
    '/v1/ledger/proofs/inclusion': {
      get: operation({
        operationId: 'getInclusionProof',
        tags: ['ledger'],
        summary: 'RFC 9162 inclusion proof of record `seq` in the tree of `size` records',
        description:
          'With `format=tlog-proof` (docs/protocol.md §16) the answer is a C2SP tlog-proof (text/plain) against the latest checkpoint note, and `size` ' +
          'is not given.',
        roles: ['auditor'],
        parameters: [
          queryParam('seq', SEQ_SCHEMA, 'The record.', true),
          queryParam('size', { type: 'integer', minimum: 1 }, 'The tree size (seq < size ≤ ledger size).', true),
          queryParam('format', { type: 'string', enum: ['json', 'tlog-proof'] }, 'json (default) or tlog-proof.'),
        ],
        ok: { status: 200, description: 'The audit path.', content: json(ref('Proof')) },
        codes: ['INVALID_REQUEST'],
      }),
    },
    '/v1/ledger/proofs/consistency': {
      get: operation({
        operationId: 'getConsistencyProof',
        tags: ['ledger'],
        summary: 'RFC 9162 consistency proof between tree sizes `from` and `to`',
        roles: ['auditor'],
        parameters: [
          queryParam('from', { type: 'integer', minimum: 1 }, 'The earlier tree size.', true),
          queryParam('to', { type: 'integer', minimum: 1 }, 'The later tree size (from ≤ to ≤ ledger size).', true),
        ],
        ok: { status: 200, description: 'The consistency path.', content: json(ref('Proof')) },
        codes: ['INVALID_REQUEST'],
      }),
    },
    '/ledger/checkpoint': {
      get: operation({
        operationId: 'getCheckpointNote',
        tags: ['ledger'],
        summary: 'The latest checkpoint as a C2SP signed note, with its witness cosignatures',
        description:
          'docs/protocol.md §16: origin (`log_origin`), size and base64 root of the latest checkpoint record, signed by the key in force (key name = ' +
          'origin), then one line per witness cosignature held.',
        roles: null,
        ok: { status: 200, description: 'The signed note (C2SP tlog-checkpoint).', content: { 'text/plain; charset=utf-8': { schema: { type: 'string' } } } },
        codes: ['NOT_FOUND', 'STORE_UNAVAILABLE'],
      }),
    },
    '/ledger/tile/{tile}': {
      get: operation({
        operationId: 'getTile',
        tags: ['ledger'],
        summary: 'A C2SP tlog-tiles tile or entry bundle (immutable)',
        description:
          'docs/protocol.md §16: `{tile}` is `<L>/<N>[.p/<W>]` or `entries/<N>[.p/<W>]` and spans several path segments (N as x001/x234/067). No ' +
          'authentication when `public_tiles` is true.',
        roles: ['auditor'],
        parameters: [pathParam('tile', { type: 'string', examples: ['0/x001/234', 'entries/000.p/17'] }, 'The tile path after /ledger/tile/.')],
        ok: {
          status: 200,
          description: 'The tile: W hashes of 32 bytes, or W uint16-length-prefixed entries.',
          content: { 'application/octet-stream': { schema: { type: 'string', contentEncoding: 'binary' } } },
        },
        codes: ['NOT_FOUND', 'INVALID_REQUEST'],
      }),
    },
    '/v1/ledger/export': {
      get: operation({
        operationId: 'exportLedger',
        tags: ['ledger'],
        summary: 'The whole ledger as JSON Lines',
        description: 'One line per record, its JCS text, in seq order: an export is byte-stable. `writ verify` checks it offline.',
        roles: ['auditor'],
        ok: {
          status: 200,
          description: 'JSON Lines, one LedgerRecord per line.',
          content: { 'application/x-ndjson': { schema: { type: 'string' }, 'x-writ-line-schema': ref('LedgerRecord') } },
        },
      }),
    },
    '/healthz': {
      get: operation({
        operationId: 'healthz',
        tags: ['operations'],
        summary: 'Liveness',
        roles: null,
        ok: { status: 200, description: 'The process is up.', content: json({ type: 'object' }) },
      }),
    },
    '/readyz': {
      get: operation({
        operationId: 'readyz',
        tags: ['operations'],
        summary: 'Readiness: policies loaded and store writable',
        roles: null,
        ok: { status: 200, description: 'Ready to decide.', content: json({ type: 'object' }) },
        codes: ['STORE_UNAVAILABLE', 'POLICY_UNAVAILABLE'],
      }),
    },
    '/metrics': {
      get: operation({
        operationId: 'metrics',
        tags: ['operations'],
        summary: 'Prometheus metrics (text exposition format)',
        roles: null,
        ok: { status: 200, description: 'Prometheus text.', content: { 'text/plain': { schema: { type: 'string' } } } },
      }),
    },
    '/openapi.json': {
      get: operation({
        operationId: 'openapi',
        tags: ['operations'],
        summary: 'This document',
        roles: null,
        ok: { status: 200, description: 'The OpenAPI 3.1 document.', content: json({ type: 'object' }) },
      }),
    },
  };

  return {
    openapi: '3.1.0',
    info: {
      title: 'writ',
      version: '1',
      summary: 'Policy-as-code authorization sidecar for MCP servers, on Cedar, with a verifiable ledger.',
      description:
        'Every error is `{"error": {"code", "message", "path"?}}`. Bodies are JSON (application/json), at most 1 MiB. Roles are bound to bearer tokens ' +
        'and are disjoint: each route names the roles it admits in `x-writ-roles`.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    tags: ['decisions', 'executions', 'approvals', 'entities', 'ledger', 'authzen', 'operations'].map((name) => ({ name })),
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description: 'A token from the config file; its role (pep, approver, auditor, reconciler, admin, evaluator) decides which routes it may call.',
        },
      },
    },
  };
}
