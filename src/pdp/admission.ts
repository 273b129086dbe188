/**
 * The parts of a decision (POST /v1/decisions) that need no store: admitting the request text, the
 * decision record's fields and the answer's shape. One code path for the sidecar's own decide() and
 * for the HTTP front threads (src/front/), so a decision prepared on a front is the one the sidecar
 * would have made, field for field.
 */
import { readFileSync } from 'node:fs';
import { WritError } from '../errors.js';
import { admitValue, bindCall, envelopeDigestOfCanonical, memberOf, parseLosslessWithRootText, toPlain, type BoundCall, type Json } from '../binding/index.js';
import { relabelDepthStop } from '../binding/parse.js';
import type { AdmissionLimits } from '../binding/limits.js';
import { KnownJcs } from '../store/seal.js';
import { jcs } from '../util/canonical.js';
import { validateDecisionRequest, type DecisionEnvelope } from '../schemas/validate.js';
import type { DecisionInput, DecisionOutcome, ValidApproval } from '../policy/engine.js';
import type { EntitySource } from '../policy/entities.js';
import { VersionedMemo } from '../policy/memo.js';
import type { ApprovalView } from '../approvals/approvals.js';
import { callerFields, type Caller, type RecordCaller } from '../identity/caller.js';
import type { RecordIdentity } from '../identity/verify.js';
import type { Prior } from '../executions/prior.js';
import { sameUid, uidKey, type Uid } from '../util/uid.js';

export interface DecisionResponse {
  decision: DecisionOutcome['decision'];
  decision_id: string;
  execution_id: string;
  state: string;
  binding: string;
  envelope_digest: string;
  arguments: Json;
  policy_version: string;
  entities_version: string;
  reasons: string[];
  errors: DecisionOutcome['errors'];
  obligations: DecisionOutcome['obligations'];
  approval_used?: string;
  record: { seq: number; hash: string };
}

/** The execution table's key of an actor's execution id. */
export function executionKey(actor: Uid, executionId: string): string {
  return `${uidKey(actor)}\n${executionId}`;
}

/** A decision request admitted (docs/protocol.md §3): what evaluation and the record are built from. */
export interface AdmittedDecision {
  /** The envelope as the schema validated it. */
  envelope: DecisionEnvelope;
  actor: Uid;
  executionId: string;
  phase: 'propose' | 'execute';
  server: string;
  tool: string;
  bound: ReturnType<typeof bindCall>;
  /** JCS of the envelope (its digest's input; the record reuses it). */
  envelopeJcs: string;
  envDigest: string;
  /** executionKey(actor, executionId). */
  key: string;
  /** The caller's verified identity (docs/protocol.md §13), named by the records. */
  identity?: RecordIdentity;
  /** Who asked (docs/protocol.md §17), as the record names it. */
  caller: RecordCaller;
  /** The trace id of the envelope's `traceparent`, when it has one (§17 correlation). */
  traceId?: string;
}

/** The trace id of a W3C `traceparent` (its second field; the envelope schema has checked the form). */
export function traceIdOf(traceparent: unknown): string | undefined {
  return typeof traceparent === 'string' ? traceparent.split('-')[1] : undefined;
}

/**
 * Views derived from the exact source text of one member of a decision body, kept for the next body
 * that carries the same text: an agent doing the same job again sends its `action` and `envelope` byte
 * for byte, and only the execution id differs. A view is a function of that text alone — the lossless
 * parse, admission, JCS and the digests read nothing else — so a hit is exactly what the request would
 * have computed. Only views computed without error are kept; they are frozen, as requests share them.
 * Bounded like the decision memo (policy/memo.ts, least recently used out) and with its doorkeeper: a
 * text is kept the second time it is seen, so envelopes that never repeat (a fresh task_id each call)
 * never churn it; texts over MAX_MEMO_TEXT characters are not kept.
 */
class MemberTextMemo<V> {
  readonly #views: VersionedMemo<V>;
  constructor(capacity: number) {
    this.#views = new VersionedMemo<V>(capacity, { admitOnSecondSight: true });
  }

  get(text: string | undefined): V | undefined {
    return text === undefined ? undefined : this.#views.get(text, TEXT_VIEWS);
  }

  keep(text: string | undefined, view: V): V {
    if (text !== undefined && text.length <= MAX_MEMO_TEXT) this.#views.set(text, TEXT_VIEWS, deepFreeze(view));
    return view;
  }
}
/** The memo's version: a member text's views never go stale. */
const TEXT_VIEWS = 'member-text';
const MAX_MEMO_TEXT = 8192;
const boundByActionText = new MemberTextMemo<BoundCall>(512);
const envelopeJcsByText = new MemberTextMemo<{ envelopeJcs: string; envDigest: string }>(512);

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value)) deepFreeze(member);
  }
  return value;
}

/**
 * Step 1 of a decision: lossless parse of the raw text, the admission limits over the whole body
 * (arguments and envelope alike), the envelope schema, the actor, the arguments.
 */
export function admitDecision(caller: Caller, text: string, limits: AdmissionLimits): AdmittedDecision {
  const parsed = parseWithDepthOutsideArguments(text, limits);
  const raw = parsed.value;
  const body: unknown = toPlain(raw);
  const filled = caller.requester !== undefined && fillDelegatedIdentity(body, caller);
  validateDecisionRequest(body);
  const envelope = body.envelope;
  const actor = caller.actor!;
  if (caller.requester !== undefined) checkDelegatedIdentity(envelope, caller);
  else if (body.identity_token !== undefined) {
    throw new WritError('INVALID_REQUEST', 'identity_token is sent only by a delegated pep (docs/protocol.md §13)', { path: '/identity_token' });
  }
  if (!sameUid(envelope.actor, actor)) {
    throw new WritError('ACTOR_MISMATCH', 'envelope.actor is not the actor bound to this token', { path: '/envelope/actor' });
  }
  const executionId = body.execution_id;
  const { server, tool } = body.action;
  // The schema has checked both members' shapes; what is derived from their text is computed once per text.
  const actionText = parsed.rootText('action');
  const bound =
    boundByActionText.get(actionText) ??
    boundByActionText.keep(actionText, bindCall(server, tool, admitValue(memberOf(memberOf(raw, 'action'), 'arguments')!, '/action/arguments')));
  // An envelope the delegated identity completed is not the text sent: its views come from the object.
  const envelopeText = filled ? undefined : parsed.rootText('envelope');
  const { envelopeJcs, envDigest } = envelopeJcsByText.get(envelopeText) ?? envelopeJcsByText.keep(envelopeText, envelopeViews(envelope));
  const admitted: AdmittedDecision = {
    envelope,
    actor,
    executionId,
    phase: body.phase,
    server,
    tool,
    bound,
    envelopeJcs,
    envDigest,
    key: executionKey(actor, executionId),
    ...callerFields(caller),
  };
  const traceId = traceIdOf(envelope.traceparent);
  if (traceId !== undefined) admitted.traceId = traceId;
  return admitted;
}

/**
 * A delegated request's envelope names the requester and actor its identity token names (docs/protocol.md
 * §13): omitted ones are filled in (true when any was). Runs before the schema, which requires both.
 */
export function fillDelegatedIdentity(body: unknown, caller: Caller): boolean {
  if (!isJsonObject(body)) return false;
  const envelope = body.envelope;
  if (!isJsonObject(envelope)) return false;
  let filled = false;
  if (envelope.requester === undefined) {
    envelope.requester = { ...caller.requester! };
    filled = true;
  }
  if (envelope.actor === undefined) {
    envelope.actor = { ...caller.actor! };
    filled = true;
  }
  return filled;
}

/** A JSON object (not null, not an array): a body or envelope before its schema check. */
function isJsonObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** 403 IDENTITY_MISMATCH when the envelope names someone other than the identity token does. */
export function checkDelegatedIdentity(envelope: Pick<DecisionEnvelope, 'requester' | 'actor'>, caller: Caller): void {
  if (!sameUid(envelope.requester, caller.requester!)) {
    throw new WritError('IDENTITY_MISMATCH', 'envelope.requester is not the subject of the identity token', { path: '/envelope/requester' });
  }
  if (!sameUid(envelope.actor, caller.actor!)) {
    throw new WritError('IDENTITY_MISMATCH', 'envelope.actor is not the actor the identity token names', { path: '/envelope/actor' });
  }
}

/** Nesting that deep in the envelope is ENVELOPE_INVALID, elsewhere outside the arguments INVALID_REQUEST. */
function parseWithDepthOutsideArguments(text: string, limits: AdmissionLimits): ReturnType<typeof parseLosslessWithRootText> {
  try {
    return parseLosslessWithRootText(text, undefined, limits);
  } catch (e) {
    throw relabelDepthStop(e, (path) =>
      path === '/envelope' || path.startsWith('/envelope/')
        ? 'ENVELOPE_INVALID'
        : path === '/action/arguments' || path.startsWith('/action/arguments/')
          ? undefined
          : 'INVALID_REQUEST',
    );
  }
}

function envelopeViews(envelope: Record<string, unknown>): { envelopeJcs: string; envDigest: string } {
  const envelopeJcs = jcs(envelope);
  return { envelopeJcs, envDigest: envelopeDigestOfCanonical(envelopeJcs) };
}

/** What an evaluation of an admitted decision reads beyond the request: the store's and the clock's. */
export interface EvaluationFacts {
  now: Date;
  /** Valid approvals only, earliest first (none for a fresh execution). */
  approvals: ValidApproval[];
  /** The state of the execution the envelope supersedes, when it names one (undefined: none). */
  supersedes?: DecisionInput['supersedes'];
  prior: Prior;
  entities: EntitySource;
}

/**
 * The evaluator's input for an admitted decision: one literal for the writer's own decisions
 * (decisions.ts) and the fronts' (front/prepare.ts), so a front evaluates exactly what the writer would.
 * Members in one order whatever the path, so the evaluator sees one object shape.
 */
export function evaluationInputOf(a: AdmittedDecision, f: EvaluationFacts): DecisionInput {
  return {
    actor: a.actor,
    server: a.server,
    tool: a.tool,
    subject: a.envelope.subject,
    envelope: a.envelope,
    phase: a.phase,
    binding: a.bound.binding,
    cedarArguments: a.bound.cedar,
    now: f.now,
    approvals: f.approvals,
    ...(f.supersedes ? { supersedes: f.supersedes } : {}),
    prior: f.prior,
    entities: f.entities,
  };
}

/** What a decision record says beyond the admitted request (docs/protocol.md §6). */
export interface DecisionRecordFacts {
  decisionId: string;
  outcome: DecisionOutcome;
  views: ApprovalView[];
  policyVersion: string;
  entitiesVersion: string;
  now: Date;
  state: string;
  /** The `prior` counts the evaluation saw (§17); left out only by a front thread, whose writer adds them (withPrior). */
  prior?: Prior;
}

/**
 * The fields of a `decision` record, in the order the sidecar has always built them, for sealing: the
 * envelope and arguments carry the JCS text admission already computed (KnownJcs), not re-canonicalised.
 */
export function decisionRecordFields(a: AdmittedDecision, f: DecisionRecordFacts): { kind: string } & Record<string, unknown> {
  const { outcome } = f;
  const fields: { kind: string } & Record<string, unknown> = {
    kind: 'decision',
    decision_id: f.decisionId,
    execution_id: a.executionId,
    actor: a.actor,
    phase: a.phase,
    envelope: new KnownJcs(a.envelopeJcs),
    envelope_digest: a.envDigest,
    server: a.server,
    tool: a.tool,
    arguments: new KnownJcs(a.bound.canonical),
    binding: a.bound.binding,
    decision: outcome.decision,
    reasons: outcome.reasons,
    errors: outcome.errors,
    obligations: outcome.obligations,
    approvals: f.views,
    policy_version: f.policyVersion,
    entities_version: f.entitiesVersion,
    now: f.now.toISOString(),
    state: f.state,
    caller: a.caller,
  };
  if (f.prior !== undefined) fields.prior = f.prior;
  if (a.traceId !== undefined) fields.trace_id = a.traceId;
  if (outcome.approval_used !== undefined) fields.approval_used = outcome.approval_used;
  if (a.identity !== undefined) fields.identity = a.identity;
  return fields;
}

/**
 * A front-built decision record's presealed members (built without `prior`, which only the writer can
 * count) with `prior` added. In JCS order "prior" falls after the assigned "prev" and before every other
 * member of that gap (a decision record's only other one is "reasons"), so it leads parts[2].
 */
export function withPriorMember(parts: readonly string[], prior: Prior): string[] {
  const out = [...parts];
  const member = `"prior":${jcs(prior)}`;
  out[2] = out[2] ? `${member},${out[2]}` : member;
  return out;
}

/**
 * The members of a decision record the store indexes it by (kind, actor, execution id, task id, trace
 * id: store/layout.ts indexTermsOf), for an append whose record is given presealed — the envelope is
 * sealed from its JCS text, which the indexes cannot read.
 */
export function decisionIndexFields(d: { actor: Uid; executionId: string; taskId: string; traceId?: string }): { kind: string } & Record<string, unknown> {
  return {
    kind: 'decision',
    actor: d.actor,
    execution_id: d.executionId,
    envelope: { task_id: d.taskId },
    ...(d.traceId !== undefined ? { trace_id: d.traceId } : {}),
  };
}

/** The answer to a decision once its record is durable. */
export function decisionResponseOf(
  a: { executionId: string; bound: { binding: string; arguments: Json }; envDigest: string },
  f: { decisionId: string; outcome: DecisionOutcome; policyVersion: string; entitiesVersion: string; state: string },
  record: { seq: number; hash: string },
): DecisionResponse {
  const { outcome } = f;
  const response: DecisionResponse = {
    decision: outcome.decision,
    decision_id: f.decisionId,
    execution_id: a.executionId,
    state: f.state,
    binding: a.bound.binding,
    envelope_digest: a.envDigest,
    arguments: a.bound.arguments,
    policy_version: f.policyVersion,
    entities_version: f.entitiesVersion,
    reasons: outcome.reasons,
    errors: outcome.errors,
    obligations: outcome.obligations,
    record: { seq: record.seq, hash: record.hash },
  };
  if (outcome.approval_used !== undefined) response.approval_used = outcome.approval_used;
  return response;
}

/** The PDP clock; `clock_file` (tests only) pins it. */
export function pdpNow(clockFile: string | null): Date {
  if (clockFile) {
    try {
      const t = Date.parse(readFileSync(clockFile, 'utf8').trim());
      if (!Number.isNaN(t)) return new Date(t);
    } catch {
      /* fall through to the real clock */
    }
  }
  return new Date();
}

/**
 * A decision an HTTP front thread (src/front/) admitted and evaluated for a fresh execution id (no
 * `supersedes`), to be committed by the sidecar that owns the store. The sidecar commits it only if
 * what the front assumed still holds under the store's write (no execution under `key`, the same
 * policy set and entities); otherwise it decides `text` again itself, from scratch.
 */
export interface PendingDecision {
  caller: Caller;
  /** The request text, for deciding it again. */
  text: string;
  key: string;
  actor: Uid;
  executionId: string;
  phase: 'propose' | 'execute';
  server: string;
  tool: string;
  subject: Uid;
  binding: string;
  envDigest: string;
  decision: DecisionOutcome['decision'];
  state: string;
  policyVersion: string;
  entitiesVersion: string;
  /** The whole record's members but `prior` as canonical text (src/store/seal.ts presealMembers, computed
   *  on the front; the writer adds `prior` (withPriorMember), joins and hashes). */
  parts: string[];
  /** The envelope's task_id and trace id: the writer indexes the record by them (§17 correlation). */
  taskId: string;
  traceId?: string;
  /** The approver groups the decision's obligations name (an approval_required decision waits for them). */
  approverGroups: string[];
  /** Whether the policies can observe `context.prior`: the front evaluated with none, which must still hold. */
  readsPrior: boolean;
  /** The PDP time the front evaluated at (ISO), when the execution enters its state. */
  now: string;
  /** performance.timeOrigin + performance.now() when the request was read, for the latency metric. */
  startedAt: number;
}

/** What the sidecar answers a prepared decision with: its record, or the whole answer decided again. */
export type PendingDecisionResult = { record: { seq: number; hash: string } } | { response: DecisionResponse };
