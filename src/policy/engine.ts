/**
 * The decision function of docs/protocol.md §2: the admitted envelope and the binding's Cedar view of the
 * arguments become one Cedar request (principal = actor, action = `Action::"<server>/<tool>"`,
 * resource = subject), evaluated once per valid approval and once without an approver, with
 * `approval_required` derived from `@requires_approval` forbids.
 *
 * Fail closed: anything that goes wrong while deciding — a context that cannot be built, a request
 * or entity that fails schema validation, an engine failure, or an evaluation error inside any policy
 * — yields `deny` with `errors`, never `allow` (docs/protocol.md §4). Note that Cedar by itself would
 * merely skip a policy whose condition errors, so a forbid that errors (e.g. on a missing attribute)
 * would silently not apply; writ refuses to allow on such a partial evaluation.
 */
import { applyWasmInlineGuard } from './wasm-inline-guard.js';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { WritError } from '../errors.js';
import { sha256Hex } from '../util/canonical.js';
import { type Uid, uidKey } from '../util/uid.js';
import { cedarDatetime } from './datetime.js';
import { type EntityJson, type EntitySource, entitySlice, uidFromJson } from './entities.js';
import type { PolicyBundle } from './load.js';
import { DecisionMemo, VersionedMemo, evaluationTally, memoKeyText } from './memo.js';
import { type ContextShape, type ResidualProgram, type Satisfied, contextShapeOf, residualProgramOf, satisfiedBy } from './residual.js';
import { namesMember, visibilityContexts } from './visibility.js';
import { attributeReadsOf, contextReadsOf, entityLiteralsOf, mayApplyToAction, resourceReadOf } from './relevance.js';
import type { CedarValue } from '../binding/index.js';
import type { Prior } from '../executions/prior.js';

const NO_PRIOR: Prior = Object.freeze({ committed: 0, unknown: 0, invoking: 0, proposed_allowed: 0 });

export interface ValidApproval {
  approval_id: string;
  approver: Uid;
  approved_at: string;
  expires_at: string;
}

export interface DecisionInput {
  actor: Uid;
  server: string;
  tool: string;
  subject: Uid;
  /** The admitted §2 envelope as plain JSON (requester, task_id, purpose, execute_after?, …). */
  envelope: Record<string, unknown>;
  phase: 'propose' | 'execute';
  binding: string;
  /** The binding module's Cedar view of the arguments. */
  cedarArguments: CedarValue;
  now: Date;
  /** Already filtered to valid ones by the caller; evaluated earliest approved_at first. */
  approvals: ValidApproval[];
  supersedes?: { execution_id: string; state: string; resolution?: 'committed' | 'absent' };
  /** Other executions of this actor with this binding, by state (docs/protocol.md §17); absent: none. */
  prior?: Prior;
  /** The trusted store. */
  entities: EntitySource;
}

export interface DecisionOutcome {
  decision: 'allow' | 'deny' | 'approval_required';
  reasons: string[];
  errors: Array<{ policy?: string; message: string }>;
  obligations: Array<{ policy: string; approver_group: string }>;
  /** The approval_id of the approval whose evaluation allowed. */
  approval_used?: string;
}

// Node 20's and 22's V8 abort when a caller that inlined a JS→Wasm call is deoptimized inside cedar-wasm's
// glue; the guard flag is set here, on import, before any Cedar call — only on a Node that needs it
// (found by scripts/wasm-inline-check.mjs; see wasm-inline-guard.ts).
applyWasmInlineGuard();

type CedarEntityRef = { __entity: { type: string; id: string } };

function entityRef(uid: Uid): CedarEntityRef {
  return { __entity: { type: uid.type, id: uid.id } };
}

function requesterOf(envelope: Record<string, unknown>): Uid {
  const uid = uidFromJson(envelope.requester);
  if (typeof uid === 'string') throw new WritError('INVALID_REQUEST', `envelope.requester: ${uid}`);
  return uid;
}

function optionalString(envelope: Record<string, unknown>, field: string): string | undefined {
  const value = envelope[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new WritError('INVALID_REQUEST', `envelope.${field}: expected a string`);
  return value;
}

function requiredString(envelope: Record<string, unknown>, field: string): string {
  const value = optionalString(envelope, field);
  if (value === undefined) throw new WritError('INVALID_REQUEST', `envelope.${field}: required`);
  return value;
}

/**
 * Earliest approved_at first. Approvals given within one millisecond keep the order they come in, which
 * is the order they were given (an execution lists its approvals as they are ledgered, and replay reads
 * them back in that order): the approval recorded as used never depends on a random approval id.
 */
function byApprovalTime(a: ValidApproval, b: ValidApproval): number {
  const dt = Date.parse(a.approved_at) - Date.parse(b.approved_at);
  return Number.isNaN(dt) ? 0 : dt;
}

/**
 * The hot path below avoids builtins that call back into JS (sort comparators, map, every): under
 * Node 20's V8 a lazy deopt of such a frame around the cedar-wasm call intermittently aborted the
 * process (Deoptimizer::DoComputeBuiltinContinuation, "unreachable code"). Plain loops avoid that
 * frame kind altogether.
 */
function sortedByApprovalTime(approvals: ValidApproval[]): ValidApproval[] {
  const out: ValidApproval[] = [];
  for (const a of approvals) {
    let i = out.length;
    while (i > 0 && byApprovalTime(out[i - 1]!, a) > 0) i--;
    out.splice(i, 0, a);
  }
  return out;
}

/**
 * The entities a decision starts its slice from: actor, subject, requester and every approver (their
 * ancestors follow). Exported so a caller evaluating elsewhere (the evaluator threads) ships the same
 * slice. Throws WritError on a malformed requester.
 */
export function entityRootsOf(input: Pick<DecisionInput, 'actor' | 'subject' | 'envelope' | 'approvals'>): Uid[] {
  const roots = [input.actor, input.subject, requesterOf(input.envelope)];
  for (const a of input.approvals) roots.push(a.approver);
  return roots;
}

/** The Cedar context of docs/protocol.md §2 (pure; throws WritError on an envelope it cannot map). */
export function buildCedarContext(input: DecisionInput, approver?: ValidApproval): Record<string, unknown> {
  const env = input.envelope;
  const evidence = env.evidence_refs;
  if (evidence !== undefined && evidence !== null) {
    if (!Array.isArray(evidence)) throw new WritError('INVALID_REQUEST', 'envelope.evidence_refs: expected an array of strings');
    for (const ref of evidence) {
      if (typeof ref !== 'string') throw new WritError('INVALID_REQUEST', 'envelope.evidence_refs: expected an array of strings');
    }
  }
  const approvals: Array<Record<string, unknown>> = [];
  for (const a of sortedByApprovalTime(input.approvals)) {
    approvals.push({ approver: entityRef(a.approver), approved_at: cedarDatetime(a.approved_at), expires_at: cedarDatetime(a.expires_at) });
  }
  const context: Record<string, unknown> = {
    requester: entityRef(requesterOf(env)),
    task_id: requiredString(env, 'task_id'),
    purpose: requiredString(env, 'purpose'),
    phase: input.phase,
    server: input.server,
    tool: input.tool,
    binding: input.binding,
    arguments: input.cedarArguments,
    evidence_refs: (evidence as string[] | undefined | null) ?? [],
    now: cedarDatetime(input.now),
    approvals,
  };
  const executeAfter = optionalString(env, 'execute_after');
  if (executeAfter !== undefined) context.execute_after = cedarDatetime(executeAfter);
  const event = optionalString(env, 'authoritative_event');
  if (event !== undefined) context.authoritative_event = event;
  if (approver) context.approver = entityRef(approver.approver);
  const { committed, unknown, invoking, proposed_allowed } = input.prior ?? NO_PRIOR;
  context.prior = { committed, unknown, invoking, proposed_allowed };
  if (input.supersedes) {
    const { execution_id, state, resolution } = input.supersedes;
    context.supersedes = resolution === undefined ? { execution_id, state } : { execution_id, state, resolution };
  }
  return context;
}

/** A Cedar request given directly (AuthZEN, docs/protocol.md §10): no envelope, no approvals. */
export interface RequestInput {
  principal: Uid;
  /** The id of the Cedar action: Action::"<action>". */
  action: string;
  resource: Uid;
  /** The Cedar context, already in Cedar JSON form (the binding's Cedar view). */
  context: Record<string, unknown>;
  /**
   * Entities for this evaluation only (built by the caller, e.g. stored attributes over request
   * properties): each replaces the stored entity of its uid in the slice. Never stored.
   */
  requestEntities: EntityJson[];
  /** The trusted store. */
  entities: EntitySource;
}

/**
 * A decision without approvals (a fresh execution's) as the exact Cedar inputs: its action, the context
 * narrowed to what the kept policies read, and the entity slice with only the attributes they read. Built
 * once, beside the memo key, and evaluated as is: an evaluator thread rebuilds none of it.
 */
export interface CedarCall {
  actionId: string;
  principal: Uid;
  resource: Uid;
  context: Record<string, unknown>;
  entities: EntityJson[];
}

/** A decision without approvals, planned once (PolicyEngine.planCall): its memo key, its Cedar call, its residual outcome. */
export interface CallPlan {
  /** Its exact-input memo key; undefined when the memo is off or the input cannot be keyed exactly. */
  memoKey: string | undefined;
  /** Its exact Cedar inputs (the entity slice is cut on the first call). */
  call: () => CedarCall;
  /** Its outcome from a residual program, or undefined when Cedar must evaluate it (residual.ts). */
  residual: () => DecisionOutcome | undefined;
}

/** Tool-visibility answers an engine keeps (mayBeCalled): a tools/list of 100 tools for 100 callers fits. */
const VISIBILITY_ANSWERS = 10_000;

/** AuthZEN search reductions an engine keeps (searchProgram; each at most MAX_PROGRAM_CHARS of conditions). */
const SEARCH_PROGRAMS = 64;

/** Residual programs an engine keeps (one per decision shape; each at most MAX_PROGRAM_CHARS of conditions). */
const RESIDUAL_PROGRAMS = 256;

/** The principal, action and resource Cedar is asked about. */
interface CedarTarget {
  principal: Uid;
  actionId: string;
  resource: Uid;
}

/**
 * The entities a RequestInput needs: principal and resource (the request's own version of an entity
 * when it has one) and their stored ancestors. Exported so the evaluator threads ship the same slice.
 */
function requestEntitySlice(input: Pick<RequestInput, 'principal' | 'action' | 'resource' | 'requestEntities' | 'entities'>, plan: ActionPlan): EntityJson[] {
  const roots = [input.principal, input.resource, { type: 'Action', id: input.action }, ...plan.entityRoots];
  if (input.requestEntities.length === 0) return entitySlice(input.entities, roots, plan.entityAttributes);
  const own = new Map<string, EntityJson>();
  for (const e of input.requestEntities) own.set(uidKey(e.uid), e);
  const source = input.entities;
  const layered: EntitySource = {
    get version() {
      return source.version;
    },
    get: (key) => own.get(key) ?? source.get(key),
  };
  return entitySlice(layered, roots, plan.entityAttributes);
}

/** The slice of a decision: its own roots, the action, and the entities the kept policies name. */
function decisionEntitySlice(input: DecisionInput, plan: ActionPlan): EntityJson[] {
  const roots = [...entityRootsOf(input), { type: 'Action', id: `${input.server}/${input.tool}` }, ...plan.entityRoots];
  return entitySlice(input.entities, roots, plan.entityAttributes);
}

/**
 * The resource as a memo or residual key names it. When no kept policy can observe more of the
 * resource than its type (its scope is `resource` or `resource is T`, and no condition names
 * `resource`), the trusted store holds no entity of its uid, and the request itself brings none (an
 * AuthZEN request's `properties` for it, or for a principal of the same uid; MCP decisions bring
 * none) — so it adds nothing to the slice — Cedar's answer is the same for every resource of that
 * type: the key names the type alone. An agent working through subjects the store does not know (a
 * new employee id on every call) then shares one answer instead of paying a Cedar call each. Any
 * other resource is keyed by its uid, as before.
 */
function resourceKeyOf(plan: ActionPlan, resource: Uid, entities: EntitySource, requestEntities: readonly EntityJson[] = []): unknown {
  if (!plan.resourceTypeOnly) return resource;
  const key = uidKey(resource);
  if (entities.get(key) !== undefined) return resource;
  for (const e of requestEntities) if (uidKey(e.uid) === key) return resource;
  return ['any resource of type', resource.type];
}

/**
 * The parts of a decision's key, in key order: everything its evaluations read — the kept set, actor,
 * server, tool, the resource as resourceKeyOf names it, the requester, `context`, the approvals in
 * evaluation order with their approvers (approval_used names one) and the entities_version the slice is
 * cut from. For the memo `context` is the narrowed context; for a residual program it is the context's
 * shape (its strings and datetimes are what the program is evaluated on), the parts lead with
 * 'residual' and carry no approvals (a residual program answers only decisions without any: planCall).
 * Both keys are built here, so an input a decision reads cannot be keyed in one and missed in the other.
 */
function decisionKeyParts(kind: 'memo' | 'residual', plan: ActionPlan, input: DecisionInput, context: unknown): unknown[] {
  // Both keys have nine parts, filled in order into a literal of that length, packed and sized exactly (push
  // would grow a larger store; new Array(9) is holey, which JSON.stringify encodes on its slow path): this
  // runs on every decision.
  const parts: unknown[] = [null, null, null, null, null, null, null, null, null];
  let i = 0;
  if (kind === 'residual') parts[i++] = 'residual';
  parts[i++] = plan.setId;
  parts[i++] = input.actor;
  parts[i++] = input.server;
  parts[i++] = input.tool;
  parts[i++] = resourceKeyOf(plan, input.subject, input.entities);
  parts[i++] = requesterOf(input.envelope);
  parts[i++] = context;
  if (kind === 'memo') {
    const approvals: unknown[] = [];
    for (const a of sortedByApprovalTime(input.approvals)) approvals.push([a.approval_id, a.approver]);
    parts[i++] = approvals;
  }
  parts[i] = input.entities.version;
  return parts;
}

/** One Cedar evaluation, already reduced to what writ needs. */
interface Evaluation {
  /** Cedar allowed and nothing errored. */
  allowed: boolean;
  cedarDecision: 'allow' | 'deny' | 'failed';
  /** Cedar's determining policies, in load order. */
  determining: string[];
  errors: Array<{ policy?: string; message: string }>;
}

/** What one action is evaluated against (see PolicyEngine.planFor). */
interface ActionPlan {
  setId: string;
  /** The policies that may apply, in load order. */
  policyIds: string[];
  /** The context attributes to hand Cedar; undefined = all of them. */
  contextKeys: string[] | undefined;
  /** The entity attributes to hand Cedar; undefined = all of them. */
  entityAttributes: ReadonlySet<string> | undefined;
  /** The entities the kept policies name literally: roots of every slice (entitySlice). */
  entityRoots: Uid[];
  /** No kept policy can observe more of the resource than its type (relevance.ts readsResource); never with a schema. */
  resourceTypeOnly: boolean;
  /** Preparsed "this set minus these requires_approval forbids" ids, by excluded-id key. */
  reducedSetIds: Map<string, string>;
}

/** Each entity with only the attributes in `keep`; the slice itself when keep is undefined. */
function withAttributes(entities: EntityJson[], keep: ReadonlySet<string> | undefined): EntityJson[] {
  if (keep === undefined) return entities;
  const out: EntityJson[] = [];
  for (const e of entities) {
    const attrs: Record<string, unknown> = {};
    for (const name in e.attrs) if (keep.has(name) && Object.hasOwn(e.attrs, name)) attrs[name] = e.attrs[name];
    out.push({ uid: e.uid, attrs, parents: e.parents });
  }
  return out;
}

/**
 * The slice without its entities that carry nothing (no attributes, no parents, no tags); undefined
 * when there is none to leave out, or when a left-out uid appears twice (Cedar refuses that slice: it
 * must see it).
 */
function withoutEmptyEntities(entities: EntityJson[]): EntityJson[] | undefined {
  let lean: EntityJson[] | undefined;
  for (let i = 0; i < entities.length; i++) {
    const e = entities[i]!;
    if (!isEmptyEntity(e)) {
      lean?.push(e);
      continue;
    }
    for (let j = 0; j < entities.length; j++) {
      const other = entities[j]!;
      if (j !== i && other.uid.type === e.uid.type && other.uid.id === e.uid.id) return undefined;
    }
    lean ??= entities.slice(0, i);
  }
  return lean;
}

function isEmptyEntity(e: EntityJson): boolean {
  if (e.parents.length > 0) return false;
  if ((e as { tags?: unknown }).tags !== undefined) return false;
  for (const name in e.attrs) if (Object.hasOwn(e.attrs, name)) return false;
  return true;
}

/** The context restricted to `keys` (those present); the context itself when keys is undefined. */
function narrowed(context: Record<string, unknown>, keys: string[] | undefined): Record<string, unknown> {
  if (keys === undefined) return context;
  const out: Record<string, unknown> = {};
  for (const key of keys) if (Object.hasOwn(context, key)) out[key] = context[key];
  return out;
}

/** Lives as long as the wasm module: preparsed sets are cached there under these ids. */
let engineCounter = 0;

export class PolicyEngine {
  readonly policyVersion: string;
  /** Unique per engine in this process (the same policy version may be loaded twice). */
  readonly engineId: string;
  private readonly bundle: PolicyBundle;
  private readonly fullSetId: string;
  private readonly schemaName: string | undefined;
  private readonly loadOrder: Map<string, number>;
  private readonly narrowRequests: boolean;
  /** Actions named by some policy's `action == …` scope: each gets its own plan. */
  private readonly namedActions: Set<string>;
  private readonly plansByAction = new Map<string, ActionPlan>();
  /** One plan per distinct kept-policy set, so actions that keep the same policies share a preparse. */
  private readonly plansByPolicies = new Map<string, ActionPlan>();
  /** Exact-input answers (memo.ts); undefined when disabled (the default, and in evaluator threads). */
  readonly memo: DecisionMemo | undefined;
  /**
   * Residual programs (residual.ts) by the key of everything a decision's evaluations read except its
   * context strings and datetimes; 'unusable' when Cedar's reduction cannot be evaluated outside Cedar.
   * On with the memo.
   */
  private readonly residuals: VersionedMemo<ResidualProgram | 'unusable'> | undefined;
  /** performance.now() before which no new partial evaluation starts (see residualOutcome). */
  private partialNotBefore = 0;
  /** After a partial evaluation of d ms, none starts for d × this. */
  private readonly partialPause: number;
  /** Decisions this engine answered from a residual program (also counted thread-wide in evaluationTally, for /metrics). */
  residualAnswers = 0;
  /** mayBeCalled's answers, by actor, requester, subject, server and tool, under one entities version. */
  private readonly visibility = new VersionedMemo<boolean>(VISIBILITY_ANSWERS);
  /** searchProgram's reductions, by request, under one entities version. */
  private readonly searchPrograms = new VersionedMemo<ResidualProgram | 'none allowed' | 'unusable'>(SEARCH_PROGRAMS);

  /**
   * `narrowRequests: false` hands Cedar the whole policy set and context on every call — the
   * reference behaviour the narrowing is tested against, and a switch for anyone debugging it.
   * `partialEvaluationShare` bounds the time spent making residual programs (default 1/20; see
   * residualOutcome).
   */
  constructor(bundle: PolicyBundle, options: { narrowRequests?: boolean; memoSize?: number; partialEvaluationShare?: number } = {}) {
    this.bundle = bundle;
    this.narrowRequests = options.narrowRequests ?? true;
    this.memo = (options.memoSize ?? 0) > 0 ? new DecisionMemo(options.memoSize!, { admitOnSecondSight: true }) : undefined;
    this.residuals = this.memo !== undefined && this.narrowRequests ? new VersionedMemo(RESIDUAL_PROGRAMS, { admitOnSecondSight: true }) : undefined;
    const share = options.partialEvaluationShare ?? 1 / 20;
    this.partialPause = share > 0 && share <= 1 ? 1 / share - 1 : 19;
    this.policyVersion = bundle.policyVersion;
    this.loadOrder = new Map(bundle.ids.map((id, i) => [id, i]));
    // A fresh prefix per engine: a hot reload must never evaluate against another engine's set.
    const prefix = `writ#${++engineCounter}:${bundle.policyVersion}`;
    this.engineId = prefix;
    this.fullSetId = `${prefix}:full`;
    this.namedActions = new Set();
    for (const info of bundle.info.values()) {
      if (info.relevance.action.kind === 'equals') this.namedActions.add(info.relevance.action.actionId);
    }
    this.preparse(this.fullSetId, bundle.policies);
    if (bundle.schema !== undefined) {
      this.schemaName = `${prefix}:schema`;
      const result = cedar.preparseSchema(this.schemaName, bundle.schema);
      if (result.type === 'failure') {
        throw new WritError('POLICY_INVALID', `schema: ${result.errors.map((e) => e.message).join('; ')}`);
      }
    } else {
      this.schemaName = undefined;
    }
  }

  private preparse(setId: string, policies: Record<string, string>): void {
    const result = cedar.preparsePolicySet(setId, { staticPolicies: policies });
    if (result.type === 'failure') {
      throw new WritError('POLICY_INVALID', result.errors.map((e) => e.message).join('; '), {
        details: result.errors.map((e) => e.message),
      });
    }
  }

  private inLoadOrder(ids: string[]): string[] {
    const out: string[] = [];
    for (const id of ids) {
      const rank = this.loadOrder.get(id) ?? 0;
      let i = out.length;
      while (i > 0 && (this.loadOrder.get(out[i - 1]!) ?? 0) > rank) i--;
      out.splice(i, 0, id);
    }
    return out;
  }

  /**
   * One Cedar evaluation. Without a schema, entities that carry nothing (no attributes left after
   * narrowing, no parents) are first left out: converting each across the wasm boundary is most of a
   * call's cost, and Cedar treats such an entity and an absent one alike — `has` is false, `in` holds
   * only for itself, `is` and `==` read the uid — except that reading an attribute of it errors with
   * another message ("does not exist" rather than "does not have the attribute"). So an evaluation that
   * errored nowhere is the answer, and any other is evaluated again on the whole slice, whose errors
   * are the ones recorded. (A schema validates entities, where absent and empty differ: no shortcut; and
   * `narrowRequests: false`, the reference behaviour, hands Cedar the whole slice.)
   */
  private evaluateSet(setId: string, target: CedarTarget, context: Record<string, unknown>, entities: EntityJson[]): Evaluation {
    if (this.narrowRequests && this.schemaName === undefined) {
      const lean = withoutEmptyEntities(entities);
      if (lean !== undefined) {
        const quick = this.evaluateOn(setId, target, context, lean);
        if (quick.cedarDecision !== 'failed' && quick.errors.length === 0) return quick;
      }
    }
    return this.evaluateOn(setId, target, context, entities);
  }

  private evaluateOn(setId: string, target: CedarTarget, context: Record<string, unknown>, entities: EntityJson[]): Evaluation {
    const call: cedar.StatefulAuthorizationCall = {
      principal: { type: target.principal.type, id: target.principal.id },
      action: { type: 'Action', id: target.actionId },
      resource: { type: target.resource.type, id: target.resource.id },
      context: context as cedar.Context,
      entities: entities as cedar.Entities,
      preparsedPolicySetId: setId,
    };
    if (this.schemaName !== undefined) {
      call.preparsedSchemaName = this.schemaName;
      call.validateRequest = true;
    }
    const answer = cedar.statefulIsAuthorized(call);
    const errors: Evaluation['errors'] = [];
    if (answer.type === 'failure') {
      for (const e of answer.errors) errors.push({ message: e.message });
      return { allowed: false, cedarDecision: 'failed', determining: [], errors };
    }
    const { decision, diagnostics } = answer.response;
    for (const e of diagnostics.errors) errors.push({ policy: e.policyId, message: e.error.message });
    // Cedar lists errors in no stable order (the same call twice can differ): load order makes the
    // recorded outcome a function of the request.
    if (errors.length > 1)
      errors.sort(
        (a, b) => (this.loadOrder.get(a.policy!) ?? 0) - (this.loadOrder.get(b.policy!) ?? 0) || (a.message < b.message ? -1 : a.message > b.message ? 1 : 0),
      );
    return { allowed: decision === 'allow' && errors.length === 0, cedarDecision: decision, determining: this.inLoadOrder(diagnostics.reason), errors };
  }

  /**
   * The plan for one action: the policies that may apply to it (preparsed once as their own set) and,
   * without a schema, the context and entity attributes they read. Actions no `==` scope names all
   * share the plan of the scope-less policies, so a caller inventing tool names cannot grow the cache.
   */
  private planFor(actionId: string): ActionPlan {
    const cacheKey = !this.narrowRequests ? '*' : this.namedActions.has(actionId) ? actionId : '';
    const cached = this.plansByAction.get(cacheKey);
    if (cached !== undefined) return cached;
    const kept: string[] = [];
    for (const id of this.bundle.ids) {
      if (!this.narrowRequests || mayApplyToAction(this.bundle.info.get(id)!.relevance, cacheKey)) kept.push(id);
    }
    const policiesKey = JSON.stringify(kept);
    let plan = this.plansByPolicies.get(policiesKey);
    if (plan === undefined) {
      const relevances = kept.map((id) => this.bundle.info.get(id)!.relevance);
      const reads = contextReadsOf(relevances);
      // With a schema, the request and the entities are validated against it: hand Cedar everything.
      const narrow = this.narrowRequests && this.schemaName === undefined;
      let setId = this.fullSetId;
      if (kept.length !== this.bundle.ids.length) {
        setId = `${this.engineId}:only:${sha256Hex(policiesKey)}`;
        this.preparse(setId, this.policiesOf(kept));
      }
      plan = {
        setId,
        policyIds: kept,
        contextKeys: narrow && reads !== 'all' ? [...reads] : undefined,
        entityAttributes: narrow ? attributeReadsOf(relevances) : undefined,
        entityRoots: entityLiteralsOf(relevances),
        resourceTypeOnly: narrow && !resourceReadOf(relevances),
        reducedSetIds: new Map(),
      };
      this.plansByPolicies.set(policiesKey, plan);
    }
    this.plansByAction.set(cacheKey, plan);
    return plan;
  }

  /** What Cedar is handed for an action: the policies kept, the context keys and entity attributes (undefined = all). */
  describePlan(actionId: string): { policyIds: string[]; contextKeys: string[] | undefined; entityAttributes: string[] | undefined } {
    const plan = this.planFor(actionId);
    return {
      policyIds: [...plan.policyIds],
      contextKeys: plan.contextKeys ? [...plan.contextKeys] : undefined,
      entityAttributes: plan.entityAttributes ? [...plan.entityAttributes] : undefined,
    };
  }

  private policiesOf(ids: string[]): Record<string, string> {
    const out: Record<string, string> = {};
    for (const id of ids) out[id] = this.bundle.policies[id]!;
    return out;
  }

  /** The preparsed id of the plan's set without `excluded`; parsed on first use, then cached. */
  private reducedSetId(plan: ActionPlan, excluded: string[]): string {
    const key = JSON.stringify([...excluded].sort());
    let setId = plan.reducedSetIds.get(key);
    if (setId === undefined) {
      const drop = new Set(excluded);
      const kept = plan.policyIds.filter((id) => !drop.has(id));
      setId = `${plan.setId}-without:${sha256Hex(key)}`;
      this.preparse(setId, this.policiesOf(kept));
      plan.reducedSetIds.set(key, setId);
    }
    return setId;
  }

  /**
   * Whether a decision on this action can observe `context.prior` (a kept policy names it, or reads the
   * context whole): only then must the writer check that the counts are still the ones evaluated.
   */
  readsPrior(server: string, tool: string): boolean {
    const keys = this.planFor(`${server}/${tool}`).contextKeys;
    return keys === undefined || keys.includes('prior');
  }

  /**
   * The memo key of a decision (memo.ts): everything evaluateOrThrow's evaluations read, as
   * decisionKeyParts lists it, with the narrowed context (`now` with it when a kept policy reads it).
   * Undefined when the memo is off or the input cannot be keyed exactly; throws where evaluateOrThrow
   * would (a malformed envelope).
   */
  memoKeyOf(input: DecisionInput): string | undefined {
    if (this.memo === undefined) return undefined;
    const plan = this.planFor(`${input.server}/${input.tool}`);
    return memoKeyText(decisionKeyParts('memo', plan, input, narrowed(buildCedarContext(input), plan.contextKeys)));
  }

  /**
   * A decision without approvals as its Cedar inputs (CedarCall), with its memo key (undefined when
   * the memo is off). The context and key are built at once; the entity slice only when asked for, so a
   * memo hit never cuts one. Throws where evaluateOrThrow would (a malformed envelope).
   */
  planCall(input: DecisionInput): CallPlan {
    if (input.approvals.length > 0) throw new TypeError('planCall: a decision with approvals is evaluated once per approval (evaluate)');
    const actionId = `${input.server}/${input.tool}`;
    const plan = this.planFor(actionId);
    // Built whole (its checks refuse a malformed envelope whatever the policies read), then narrowed.
    const context = narrowed(buildCedarContext(input), plan.contextKeys);
    const call = (): CedarCall => ({
      actionId,
      principal: input.actor,
      resource: input.subject,
      context,
      entities: withAttributes(decisionEntitySlice(input, plan), plan.entityAttributes),
    });
    return {
      memoKey: this.memo === undefined ? undefined : memoKeyText(decisionKeyParts('memo', plan, input, context)),
      call,
      residual: () => this.residualOutcome(plan, input, context, call),
    };
  }

  /**
   * The decision from a residual program (residual.ts), or undefined when Cedar itself must evaluate it.
   * The program's key (decisionKeyParts) is the memo key with every top-level context string and datetime left out (those
   * values are what the program is evaluated on); it is made by Cedar's partial evaluation the second time its key is seen —
   * a shape asked once never costs one — and partial evaluations (which parse the kept policies again)
   * take at most a share of the time (1/20 unless told): after one that took d ms, none starts for 19·d ms.
   */
  private residualOutcome(plan: ActionPlan, input: DecisionInput, context: Record<string, unknown>, call: () => CedarCall): DecisionOutcome | undefined {
    const residuals = this.residuals;
    if (residuals === undefined || this.schemaName !== undefined) return undefined;
    const shape = contextShapeOf(context);
    if (shape === undefined) return undefined;
    const key = memoKeyText(decisionKeyParts('residual', plan, input, shape.shape));
    if (key === undefined) return undefined;
    const version = input.entities.version;
    let program = residuals.get(key, version);
    if (program === undefined) {
      const started = performance.now();
      if (started < this.partialNotBefore || !residuals.seenBefore(key)) return undefined;
      program = this.residualProgram(plan, call(), shape) ?? 'unusable';
      const finished = performance.now();
      this.partialNotBefore = finished + this.partialPause * (finished - started);
      residuals.admit(key, version, program);
    }
    if (program === 'unusable') return undefined;
    const satisfied = satisfiedBy(program, shape.values);
    if (satisfied === undefined) return undefined;
    this.residualAnswers++;
    evaluationTally.residualAnswers++;
    return this.conclude((excluded) => residualEvaluation(satisfied, excluded));
  }

  /** Cedar's partial evaluation of the plan's policies with the context strings and datetimes unknown, as a program. */
  private residualProgram(plan: ActionPlan, call: CedarCall, shape: ContextShape): ResidualProgram | undefined {
    let answer: cedar.PartialAuthorizationAnswer;
    try {
      answer = cedar.isAuthorizedPartial({
        principal: { type: call.principal.type, id: call.principal.id },
        action: { type: 'Action', id: call.actionId },
        resource: { type: call.resource.type, id: call.resource.id },
        context: shape.partialContext as cedar.Context,
        entities: call.entities as cedar.Entities,
        policies: { staticPolicies: this.policiesOf(plan.policyIds) },
      });
    } catch {
      return undefined; // whatever went wrong, Cedar itself evaluates every call of this shape
    }
    if (answer.type !== 'residuals') return undefined;
    return residualProgramOf(answer.response, plan.policyIds);
  }

  /**
   * Cedar's partial evaluation of an AuthZEN request with its principal or its resource unknown (AuthZEN
   * search over that member, search-residual.ts): 'none allowed' when Cedar denies whatever the open
   * member is; else the residual program, evaluated on each candidate; undefined when it cannot be used
   * (a schema is in force — it shapes how entity attributes read and validates each request —, a policy
   * errored while being reduced, Cedar failed): every candidate is then evaluated one by one. The open
   * member's own uid and properties in `input` are ignored.
   */
  searchProgram(input: RequestInput, open: 'principal' | 'resource'): ResidualProgram | 'none allowed' | undefined {
    if (this.schemaName !== undefined) return undefined;
    const plan = this.planFor(input.action);
    const known = open === 'principal' ? input.resource : input.principal;
    const openKey = uidKey(open === 'principal' ? input.principal : input.resource);
    const requestEntities = input.requestEntities.filter((e) => uidKey(e.uid) !== openKey);
    // Every page of a search reduces the same request: kept per entities version.
    const key = memoKeyText(['search', open, plan.setId, known, input.action, input.context, requestEntities]);
    const kept = key === undefined ? undefined : this.searchPrograms.get(key, input.entities.version);
    if (kept !== undefined) return kept === 'unusable' ? undefined : kept;
    const program = this.searchProgramUncached(input, open, plan, known, requestEntities);
    if (key !== undefined) this.searchPrograms.admit(key, input.entities.version, program ?? 'unusable');
    return program;
  }

  private searchProgramUncached(
    input: RequestInput,
    open: 'principal' | 'resource',
    plan: ActionPlan,
    known: Uid,
    requestEntities: EntityJson[],
  ): ResidualProgram | 'none allowed' | undefined {
    const entities = requestEntitySlice({ ...input, principal: known, resource: known, requestEntities }, plan);
    let answer: cedar.PartialAuthorizationAnswer;
    try {
      answer = cedar.isAuthorizedPartial({
        principal: open === 'principal' ? null : { type: known.type, id: known.id },
        action: { type: 'Action', id: input.action },
        resource: open === 'resource' ? null : { type: known.type, id: known.id },
        context: input.context as cedar.Context,
        entities: entities as cedar.Entities,
        policies: { staticPolicies: this.policiesOf(plan.policyIds) },
      });
    } catch {
      return undefined;
    }
    if (answer.type !== 'residuals' || answer.response.errored.length > 0) return undefined;
    if (answer.response.decision === 'deny') return 'none allowed';
    return residualProgramOf(answer.response, plan.policyIds);
  }

  /**
   * The actions an AuthZEN action search chooses from (docs/protocol.md §15): those the schema in force
   * declares in its empty namespace (an AuthZEN action name `n` is `Action::"n"` there), else — without a
   * schema — those the policies name in an `action == …` scope. Sorted, each once.
   */
  actionNames(): string[] {
    const names = new Set<string>();
    const schemaText = this.bundle.schemaText;
    if (this.bundle.schema !== undefined && schemaText !== undefined) {
      const json = cedar.schemaToJson(this.bundle.schema);
      if (json.type === 'success') {
        for (const [ns, body] of Object.entries(json.json as Record<string, { actions?: Record<string, unknown> }>)) {
          if (ns === '') for (const name of Object.keys(body.actions ?? {})) names.add(name);
        }
      }
    } else {
      for (const id of this.namedActions) names.add(id);
    }
    return [...names].sort();
  }

  /**
   * Whether some call of `server/tool` by `actor` for `requester` and `subject` may be allowed or need
   * approval, whatever its arguments and the rest of its context (visibility.ts): false only when
   * Cedar's partial evaluation denies it for certain in every context it could bring, with and without
   * the `@requires_approval` forbids. Any doubt is true (listed). Cached per entities version.
   */
  mayBeCalled(q: { actor: Uid; requester: Uid; subject: Uid; server: string; tool: string; entities: EntitySource }): boolean {
    const key = JSON.stringify([q.actor, q.requester, q.subject, q.server, q.tool]);
    const cached = this.visibility.get(key, q.entities.version);
    if (cached !== undefined) return cached;
    const answer = this.mayBeCalledUncached(q);
    this.visibility.admit(key, q.entities.version, answer);
    return answer;
  }

  private mayBeCalledUncached(q: { actor: Uid; requester: Uid; subject: Uid; server: string; tool: string; entities: EntitySource }): boolean {
    const actionId = `${q.server}/${q.tool}`;
    const plan = this.planFor(actionId);
    const texts = plan.policyIds.map((id) => this.bundle.policies[id]!);
    const contexts = visibilityContexts(q.requester, q.server, q.tool, (member) => namesMember(texts, member));
    const roots = [q.actor, q.subject, q.requester, { type: 'Action', id: actionId }, ...plan.entityRoots];
    const entities = entitySlice(q.entities, roots);
    const withoutApprovalForbids = plan.policyIds.filter((id) => this.bundle.info.get(id)?.requiresApproval === undefined);
    const deniedForCertain = (ids: string[], context: Record<string, unknown>): boolean => {
      try {
        const answer = cedar.isAuthorizedPartial({
          principal: { type: q.actor.type, id: q.actor.id },
          action: { type: 'Action', id: actionId },
          resource: { type: q.subject.type, id: q.subject.id },
          context: context as cedar.Context,
          entities: entities as cedar.Entities,
          policies: { staticPolicies: this.policiesOf(ids) },
        });
        return answer.type === 'residuals' && answer.response.decision === 'deny';
      } catch {
        return false;
      }
    };
    for (const context of contexts) {
      if (!deniedForCertain(plan.policyIds, context)) return true;
      if (withoutApprovalForbids.length !== plan.policyIds.length && !deniedForCertain(withoutApprovalForbids, context)) return true;
    }
    return false;
  }

  /** Evaluates a CedarCall (as evaluate() evaluates its input). Never throws: a failure is a deny with `errors`. */
  evaluateCall(call: CedarCall): DecisionOutcome {
    try {
      return this.concludeCall(call);
    } catch (e) {
      return denyOf(e);
    }
  }

  private concludeCall(call: CedarCall): DecisionOutcome {
    const plan = this.planFor(call.actionId);
    return this.concludeWithCedar(plan, { principal: call.principal, actionId: call.actionId, resource: call.resource }, call.context, call.entities);
  }

  /** Never throws for evaluation problems: every failure is a deny with `errors` (fail closed). */
  evaluate(input: DecisionInput): DecisionOutcome {
    try {
      if (input.approvals.length === 0) {
        // A fresh execution's shape: the context is built once, for the key and for Cedar.
        const planned = this.planCall(input);
        return this.memoized(planned.memoKey, input.entities.version, () => planned.residual() ?? this.concludeCall(planned.call()));
      }
      return this.memoized(this.memoKeyOf(input), input.entities.version, () => this.evaluateOrThrow(input));
    } catch (e) {
      return denyOf(e);
    }
  }

  /**
   * The memo's answer for `key`, else `evaluateOrThrow`'s, kept (a throw is neither kept nor caught here);
   * without a key (memo off, or an input it cannot key exactly) simply `evaluateOrThrow`'s.
   */
  private memoized(key: string | undefined, entitiesVersion: string, evaluateOrThrow: () => DecisionOutcome): DecisionOutcome {
    if (key === undefined) return evaluateOrThrow();
    const hit = this.memo!.get(key, entitiesVersion);
    if (hit !== undefined) return hit;
    const outcome = evaluateOrThrow();
    this.memo!.set(key, entitiesVersion, outcome);
    return outcome;
  }

  private evaluateOrThrow(input: DecisionInput): DecisionOutcome {
    const target: CedarTarget = { principal: input.actor, actionId: `${input.server}/${input.tool}`, resource: input.subject };
    const plan = this.planFor(target.actionId);
    const approvals = sortedByApprovalTime(input.approvals);
    const entities = withAttributes(decisionEntitySlice(input, plan), plan.entityAttributes);
    // Built whole (its checks refuse a malformed envelope whatever the policies read), then narrowed.
    const fullContext = buildCedarContext(input);
    const baseContext = narrowed(fullContext, plan.contextKeys);

    for (const approval of approvals) {
      const withApprover = narrowed({ ...fullContext, approver: entityRef(approval.approver) }, plan.contextKeys);
      const result = this.evaluateSet(plan.setId, target, withApprover, entities);
      if (result.allowed) {
        return { decision: 'allow', reasons: result.determining, errors: [], obligations: [], approval_used: approval.approval_id };
      }
    }

    return this.concludeWithCedar(plan, target, baseContext, entities);
  }

  /** conclude() with Cedar evaluating the plan's set (or the set without some forbids). */
  private concludeWithCedar(plan: ActionPlan, target: CedarTarget, baseContext: Record<string, unknown>, entities: EntityJson[]): DecisionOutcome {
    return this.conclude((excluded) =>
      this.evaluateSet(excluded === undefined ? plan.setId : this.reducedSetId(plan, excluded), target, baseContext, entities),
    );
  }

  /**
   * The evaluation without an approver, and `approval_required` derived from it (docs/protocol.md §2):
   * shared by the MCP decision and the AuthZEN request (evaluateRequest), and by Cedar and residual
   * programs. `evaluateWithout(undefined)` evaluates the plan's set; `evaluateWithout(ids)` the set
   * without those policies.
   */
  private conclude(evaluateWithout: (excluded: string[] | undefined) => Evaluation): DecisionOutcome {
    const base = evaluateWithout(undefined);
    if (base.allowed) return { decision: 'allow', reasons: base.determining, errors: [], obligations: [] };
    // Errors deny outright: a permit that allowed despite them says nothing, and a forbid that
    // errored might have applied.
    const reasons = base.cedarDecision === 'deny' ? base.determining : [];
    if (base.errors.length > 0) return { decision: 'deny', reasons, errors: base.errors, obligations: [] };

    const obligations: DecisionOutcome['obligations'] = [];
    for (const policy of reasons) {
      const group = this.bundle.info.get(policy)?.requiresApproval;
      if (group === undefined) break;
      obligations.push({ policy, approver_group: group });
    }
    if (reasons.length > 0 && obligations.length === reasons.length) {
      const relaxed = evaluateWithout(reasons);
      if (relaxed.allowed) return { decision: 'approval_required', reasons, errors: [], obligations };
    }
    return { decision: 'deny', reasons, errors: [], obligations: [] };
  }

  /**
   * A Cedar request named directly (AuthZEN, docs/protocol.md §10) rather than built from an MCP envelope:
   * the same plans, narrowing and `approval_required` rule as evaluate(). Never throws (fail closed).
   */
  evaluateRequest(input: RequestInput): DecisionOutcome {
    try {
      return this.memoized(this.requestMemoKeyOf(input), input.entities.version, () => this.evaluateRequestOrThrow(input));
    } catch (e) {
      return denyOf(e);
    }
  }

  private evaluateRequestOrThrow(input: RequestInput): DecisionOutcome {
    const target: CedarTarget = { principal: input.principal, actionId: input.action, resource: input.resource };
    const plan = this.planFor(target.actionId);
    const entities = withAttributes(requestEntitySlice(input, plan), plan.entityAttributes);
    return this.concludeWithCedar(plan, target, narrowed(input.context, plan.contextKeys), entities);
  }

  /**
   * The memo key of a RequestInput (memo.ts): everything evaluateRequest's evaluations read — the kept
   * set, principal, action, resource, the narrowed context, the request's own entities as given (they
   * replace stored ones in the slice) and the entities_version of the store the rest of the slice is
   * cut from. Tagged and of another length than a decision's key, so the two can never be equal.
   * Undefined when the memo is off or the input cannot be keyed exactly.
   */
  /**
   * Every stored entity a decision can reach (entitySlice), whole: what an evaluator thread is sent, so
   * that it cuts the very slice this engine would.
   */
  decisionEntities(input: DecisionInput): EntityJson[] {
    return decisionEntitySlice(input, this.planFor(`${input.server}/${input.tool}`));
  }

  /** The same for a RequestInput (AuthZEN): the request's own entities over the stored ones. */
  requestEntities(input: RequestInput): EntityJson[] {
    return requestEntitySlice(input, this.planFor(input.action));
  }

  requestMemoKeyOf(input: RequestInput): string | undefined {
    if (this.memo === undefined) return undefined;
    const plan = this.planFor(input.action);
    return memoKeyText([
      'request',
      plan.setId,
      input.principal,
      input.action,
      resourceKeyOf(plan, input.resource, input.entities, input.requestEntities),
      narrowed(input.context, plan.contextKeys),
      input.requestEntities,
      input.entities.version,
    ]);
  }
}

/**
 * What Cedar's evaluation would be, from the policies a residual program found satisfied: a forbid wins,
 * else a permit allows, else nothing applies; the determining policies are those of the deciding effect.
 * `excluded` are left out as the reduced set leaves them out. Never an error (the program gives up instead).
 */
function residualEvaluation(satisfied: Satisfied, excluded: string[] | undefined): Evaluation {
  const forbids = excluded === undefined ? satisfied.forbids : satisfied.forbids.filter((id) => !excluded.includes(id));
  const allowed = forbids.length === 0 && satisfied.permits.length > 0;
  return { allowed, cedarDecision: allowed ? 'allow' : 'deny', determining: allowed ? satisfied.permits.slice() : forbids.slice(), errors: [] };
}

/** The deny a decision that could not be made gives (fail closed), with what went wrong. */
function denyOf(e: unknown): DecisionOutcome {
  const message = e instanceof Error ? e.message : String(e);
  return { decision: 'deny', reasons: [], errors: [{ message }], obligations: [] };
}
