/**
 * AuthZEN Authorization API 1.0 requests (docs/protocol.md §10), pure: the raw body text in, the list of
 * evaluations to run out — or one WritError with a JSON pointer into the body.
 *
 * The body is parsed once by writ's lossless parser (duplicate keys, lone surrogates refused), its
 * shape checked against `schemas/authzen-*.json`, batch defaults filled in (an item's own member
 * replaces the default whole), and `context` and `properties` admitted by the writ-bind/1 rules
 * (§3), exactly as tool arguments are: one admitted value is both what the ledger records and what
 * Cedar sees, so `{"n": 1}` and `{"n": 1.0}` can never be told apart silently (the second is refused).
 *
 * A batch is judged whole: the first malformed item fails it with 400, before anything is evaluated.
 */
import { WritError } from '../errors.js';
import { LosslessNumber, admitValue, cedarView, memberOf, parseLossless, toPlain, type CedarValue, type Json, type LosslessValue } from '../binding/index.js';
import { escapePointerToken, relabelDepthStop } from '../binding/parse.js';
import { DEFAULT_ADMISSION_LIMITS, type AdmissionLimits } from '../binding/limits.js';
import { jcs } from '../util/canonical.js';
import { authzenEvaluationIssue, validateAuthzenEvaluations } from '../schemas/validate.js';
import type { EntityJson, EntitySource } from '../policy/entities.js';
import type { DecisionOutcome, RequestInput } from '../policy/engine.js';
import type { Caller } from '../identity/caller.js';
import type { PresealedAuthzenRecord } from './records.js';
import { type Uid, uidKey } from '../util/uid.js';

export type EvaluationsSemantic = 'execute_all' | 'deny_on_first_deny' | 'permit_on_first_permit';

/** One admitted AuthZEN entity: its uid and, when given, its admitted properties. */
export interface AdmittedEntity {
  type: string;
  id: string;
  properties?: { [k: string]: Json };
}

/** One evaluation, admitted: what is recorded and what Cedar is asked. */
export interface AuthzenEvaluation {
  /** JSON pointer of the item ('' for a single evaluation, '/evaluations/3' in a batch). */
  path: string;
  subject: AdmittedEntity;
  action: { name: string; properties?: { [k: string]: Json } };
  resource: AdmittedEntity;
  /** The admitted context (nulls kept: they are recorded, and absent from the Cedar view). */
  context: { [k: string]: Json };
  /** Where the subject came from (for 403 paths): the item's own member or the batch default. */
  subjectPath: string;
}

export interface AuthzenRequest {
  /** Answer with one `{decision, context}` (the /evaluation route, or /evaluations without `evaluations`). */
  single: boolean;
  semantic: EvaluationsSemantic;
  evaluations: AuthzenEvaluation[];
}

const MEMBERS = ['subject', 'action', 'resource', 'context'] as const;
/** Context members only writ sets (from approvals), refused in an AuthZEN context. */
const DERIVED_CONTEXT = ['approver', 'approvals'] as const;
type Member = (typeof MEMBERS)[number];

function isObject(v: LosslessValue | undefined): v is { [k: string]: LosslessValue } {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof LosslessNumber);
}

function parseBody(text: string, limits: AdmissionLimits): LosslessValue {
  if (text.trim() === '') throw new WritError('INVALID_JSON', 'the request body is empty');
  try {
    // The limits hold over properties, context and the batch's items alike, before any is admitted.
    return parseLossless(text, undefined, limits);
  } catch (e) {
    // The binding rules judge only a context and properties.
    throw relabelDepthStop(e, (path) => (ADMITTED_PATH.test(path) ? undefined : 'INVALID_REQUEST'));
  }
}

/** Members admitted by the §3 rules (a context, an action's or entity's properties), at the top or in a batch item. */
const ADMITTED_PATH = /^(\/evaluations\/\d+)?(\/context|\/(subject|action|resource)\/properties)(\/|$)/;

/** Admits an object member (context or properties) by the §3 rules; BINDING_* errors point at `path`. */
function admitObject(value: LosslessValue, path: string): { [k: string]: Json } {
  return admitValue(value, path) as { [k: string]: Json };
}

function admitEntity(raw: LosslessValue, path: string): AdmittedEntity {
  const plain = raw as { [k: string]: LosslessValue };
  const entity: AdmittedEntity = { type: plain.type as string, id: plain.id as string };
  const properties = memberOf(raw, 'properties');
  if (properties !== undefined) entity.properties = admitObject(properties, `${path}/properties`);
  return entity;
}

/**
 * One item: `sources` says, per member, the raw value and the JSON pointer it came from. The merged
 * item is schema-checked as a single evaluation; an issue is reported at the member's own pointer.
 */
function evaluationOf(itemPath: string, sources: Partial<Record<Member, { raw: LosslessValue; path: string }>>): AuthzenEvaluation {
  const merged: Record<string, Json> = {};
  for (const m of MEMBERS) {
    const source = sources[m];
    if (source !== undefined) merged[m] = toPlain(source.raw);
  }
  const issue = authzenEvaluationIssue(merged);
  if (issue !== null) {
    // '/resource/type' → the member 'resource' and the rest '/type'; a missing member is reported in the item.
    const [, member = '', ...rest] = issue.path.split('/');
    const source = sources[member as Member];
    const base = source === undefined ? `${itemPath}/${member}` : source.path;
    const path = member === '' ? itemPath : `${base}${rest.length > 0 ? `/${rest.join('/')}` : ''}`;
    const message = issue.message.startsWith(issue.path) ? `${path || '(body)'}${issue.message.slice(issue.path.length)}` : issue.message;
    throw new WritError('INVALID_REQUEST', message, { path });
  }
  const subject = admitEntity(sources.subject!.raw, sources.subject!.path);
  const resource = admitEntity(sources.resource!.raw, sources.resource!.path);
  // The same entity as subject and resource is one entity to Cedar: properties that give one member two
  // values could only be answered by picking one of them silently.
  if (subject.properties && resource.properties && subject.type === resource.type && subject.id === resource.id) {
    for (const [name, value] of Object.entries(resource.properties)) {
      if (Object.hasOwn(subject.properties, name) && jcs(subject.properties[name]) !== jcs(value)) {
        throw new WritError('INVALID_REQUEST', `subject and resource are the same entity, and their properties give "${name}" two values`, {
          path: `${sources.resource!.path}/properties/${escapePointerToken(name)}`,
        });
      }
    }
  }
  const rawAction = sources.action!.raw;
  const action: AuthzenEvaluation['action'] = { name: (rawAction as { name: string }).name };
  const actionProperties = memberOf(rawAction, 'properties');
  if (actionProperties !== undefined) action.properties = admitObject(actionProperties, `${sources.action!.path}/properties`);
  const context = sources.context === undefined ? {} : admitObject(sources.context.raw, sources.context.path);
  // §2: the approver is never taken from the request. Policies read context.approver (and
  // context.approvals) as what writ derived from real, unexpired, fact-bound approvals; an AuthZEN
  // caller writing them would be answered as if an approval existed.
  for (const derived of DERIVED_CONTEXT) {
    if (Object.hasOwn(context, derived)) {
      throw new WritError('INVALID_REQUEST', `context.${derived} is never taken from a request: writ derives it from real approvals (decisions only)`, {
        path: `${sources.context!.path}/${derived}`,
      });
    }
  }
  if (action.properties !== undefined && Object.hasOwn(context, 'action')) {
    throw new WritError('INVALID_REQUEST', 'context.action is where action.properties go: give one or the other', {
      path: `${sources.context!.path}/action`,
    });
  }
  return { path: itemPath, subject, action, resource, context, subjectPath: sources.subject!.path };
}

/**
 * Parses and admits the body of POST /access/v1/evaluation (`batch` false) or /access/v1/evaluations
 * (`batch` true). Throws WritError (INVALID_JSON, INVALID_REQUEST, BINDING_*) with a JSON pointer.
 */
export function parseAuthzenRequest(text: string, batch: boolean, limits: AdmissionLimits = DEFAULT_ADMISSION_LIMITS): AuthzenRequest {
  return authzenRequestOf(parseBody(text, limits), batch);
}

/** parseAuthzenRequest on an already parsed (lossless) body, e.g. a `writ policy test` case's `authzen`. */
export function authzenRequestOf(raw: LosslessValue, batch: boolean): AuthzenRequest {
  if (!isObject(raw)) throw new WritError('INVALID_REQUEST', 'the body must be a JSON object', { path: '' });
  // AuthZEN 1.0 §7.1: without an `evaluations` array, or with an empty one, the batch route answers
  // like the single one (so `{"evaluations": []}` alone lacks its subject, action and resource).
  const items = memberOf(raw, 'evaluations');
  const single = !batch || items === undefined || (Array.isArray(items) && items.length === 0);
  const defaults: Partial<Record<Member, { raw: LosslessValue; path: string }>> = {};
  let semantic: EvaluationsSemantic = 'execute_all';
  if (!batch) {
    // The single route admits exactly the evaluation members (unknown ones are refused by the schema).
    const issue = authzenEvaluationIssue(toPlain(raw));
    if (issue !== null) throw new WritError('INVALID_REQUEST', issue.message, { path: issue.path });
  } else {
    const plain = toPlain(raw);
    validateAuthzenEvaluations(plain);
    semantic = plain.options?.evaluations_semantic ?? semantic;
  }
  for (const m of MEMBERS) {
    const value = memberOf(raw, m);
    if (value !== undefined) defaults[m] = { raw: value, path: `/${m}` };
  }
  if (single) return { single: true, semantic: 'execute_all', evaluations: [evaluationOf('', defaults)] };

  const evaluations = (items as LosslessValue[]).map((item, i) => {
    const itemPath = `/evaluations/${i}`;
    const sources = { ...defaults };
    for (const m of MEMBERS) {
      const own = memberOf(item, m);
      if (own !== undefined) sources[m] = { raw: own, path: `${itemPath}/${m}` };
    }
    return evaluationOf(itemPath, sources);
  });
  return { single: false, semantic, evaluations };
}

/** Whether a batch evaluated in `semantic` stops after a decision (`allowed` = AuthZEN `true`). */
export function stopsAfter(semantic: EvaluationsSemantic, allowed: boolean): boolean {
  return (semantic === 'deny_on_first_deny' && !allowed) || (semantic === 'permit_on_first_permit' && allowed);
}

/** The first evaluation whose subject is not `actor` (a pep token may only ask about itself), or undefined. */
export function foreignSubject(evaluations: AuthzenEvaluation[], actor: Uid): AuthzenEvaluation | undefined {
  return evaluations.find((e) => e.subject.type !== actor.type || e.subject.id !== actor.id);
}

function cedarRecord(value: { [k: string]: Json }): Record<string, unknown> {
  return cedarView(value) as Record<string, CedarValue>;
}

/**
 * The entity Cedar sees for an AuthZEN subject or resource: the stored entity with the request's
 * properties added under its attributes (a stored attribute wins on a clash, docs/protocol.md §10), or,
 * when the store does not hold it, an entity of the properties alone with no parents. Undefined when
 * the request adds nothing (the stored entity, or none, is used as is).
 */
export function requestEntityOf(entity: AdmittedEntity, store: EntitySource): EntityJson | undefined {
  if (entity.properties === undefined) return undefined;
  const uid = { type: entity.type, id: entity.id };
  const stored = store.get(uidKey(uid));
  const attrs = { ...cedarRecord(entity.properties), ...(stored?.attrs ?? {}) };
  return { uid, attrs, parents: stored?.parents ?? [] };
}

/** The engine's RequestInput of one admitted evaluation over the trusted store. */
export function requestInputOf(e: AuthzenEvaluation, store: EntitySource): RequestInput {
  const context = cedarRecord(e.context);
  if (e.action.properties !== undefined) context.action = cedarRecord(e.action.properties);
  const requestEntities: EntityJson[] = [];
  const subject = requestEntityOf(e.subject, store);
  const resource = requestEntityOf(e.resource, store);
  if (subject) requestEntities.push(subject);
  if (resource) {
    // The same entity as subject and resource: one entity, the subject's properties first.
    const same = subject !== undefined && uidKey(subject.uid) === uidKey(resource.uid);
    if (same) requestEntities[0] = { ...subject, attrs: { ...resource.attrs, ...subject.attrs } };
    else requestEntities.push(resource);
  }
  return {
    principal: { type: e.subject.type, id: e.subject.id },
    action: e.action.name,
    resource: { type: e.resource.type, id: e.resource.id },
    context,
    requestEntities,
    entities: store,
  };
}

/** Parses a request and checks who may ask it; throws the refusal the route answers. */
export function admitAuthzen(caller: Caller, text: string, batch: boolean, limits: AdmissionLimits): AuthzenRequest {
  const request = parseAuthzenRequest(text, batch, limits);
  if (caller.role === 'pep') {
    // A pep token is bound to its actor: it may ask only about that subject (docs/protocol.md §10).
    const foreign = caller.actor === undefined ? request.evaluations[0] : foreignSubject(request.evaluations, caller.actor);
    if (foreign !== undefined) {
      throw new WritError('ACTOR_MISMATCH', 'a pep token may ask only about its own actor as subject', { path: foreign.subjectPath });
    }
  }
  return request;
}

/** Evaluates a request's items: all at once (execute_all), else in order, stopping where its semantic says. */
export async function evaluateItems(
  request: AuthzenRequest,
  evaluate: (e: AuthzenEvaluation) => DecisionOutcome | Promise<DecisionOutcome>,
): Promise<DecisionOutcome[]> {
  if (request.semantic === 'execute_all') return Promise.all(request.evaluations.map(evaluate));
  // In order, one at a time: the items after the deciding one are never evaluated.
  const outcomes: DecisionOutcome[] = [];
  for (const e of request.evaluations) {
    const outcome = await evaluate(e);
    outcomes.push(outcome);
    if (stopsAfter(request.semantic, outcome.decision === 'allow')) break;
  }
  return outcomes;
}

/**
 * An AuthZEN request an HTTP front evaluated (src/front/): its outcomes, and the policy set, entities
 * and time they were evaluated with. The sidecar records them only if the policy set and entities are
 * still those; otherwise it evaluates the request again itself.
 */
export interface PendingAuthzen {
  /** The answer's shape: one decision, or `{ evaluations }`. */
  single: boolean;
  outcomes: DecisionOutcome[];
  /** Outcome i's ledger record, canonicalised on the front (records.ts). */
  records: PresealedAuthzenRecord[];
  policyVersion: string;
  entitiesVersion: string;
  /** RFC 3339, the PDP time of the evaluation. */
  now: string;
}

export const AUTHZEN_EVALUATION_PATH = '/access/v1/evaluation';
export const AUTHZEN_EVALUATIONS_PATH = '/access/v1/evaluations';
