/**
 * Which policies can apply to a request, and which context attributes they can read — computed once
 * per policy from its JSON form (Cedar's EST), so the engine hands Cedar only what can matter.
 *
 * Why: cedar-wasm converts the whole policy set's scopes, the whole context and every entity on each
 * call; on the bundled policies that conversion is most of a decision's CPU. Cedar's answer is a pure
 * function of the policies whose scope matches and the attributes those policies read, so dropping
 * the rest changes nothing Cedar can observe:
 *
 *  - a policy whose action scope is `action == Action::"x"` for another action can never be
 *    satisfied, and Cedar evaluates the scope before the conditions (short-circuit `&&`), so it can
 *    neither determine the answer nor raise an error. Only `==` is used to exclude: `in` depends on
 *    an action hierarchy (a schema's action groups) and is always kept.
 *  - a context attribute that no kept policy names (as `context.a`, `context["a"]` or
 *    `context has a`) cannot influence evaluation. If any kept policy uses `context` in another way
 *    (`context == {…}`, `context is …`, passing it whole), nothing is dropped. With a schema the
 *    request is validated against it, which needs the whole context, so the engine never drops
 *    attributes then.
 *  - an entity attribute whose name no kept policy reads (`e.a`, `e["a"]`, `e has a`, any step of a
 *    `has` path, on any expression but `context` itself) cannot influence evaluation either: Cedar
 *    has no way to observe an entity's attributes other than by name (equality and `in` look at the
 *    uid and the parents only). Dropping them saves converting them; with a schema (entities are
 *    validated against it) nothing is dropped.
 */

import type { Uid } from '../util/uid.js';

/** A policy's action scope, reduced to what relevance needs. */
export type ActionScope = { kind: 'any' } | { kind: 'equals'; actionId: string };

export interface PolicyRelevance {
  action: ActionScope;
  /**
   * Actions the policy's first condition rules out: `unless { action == Action::"a" || action == … }`
   * as its first condition. Cedar evaluates the scope, then the conditions in order, each short-circuit,
   * so for those actions the policy is not satisfied and nothing after that condition is evaluated: it
   * can neither determine the answer nor raise an error (how a policy for every action but a listed few
   * is written, e.g. the bundled example's `duplicate-consequence`).
   */
  exceptActions: ReadonlySet<string>;
  /**
   * Every entity the policy names literally (`User::"hr-5519"`, `Role::"hr"` in a scope or a
   * condition): Cedar can reach these whatever the request, so they belong in every slice the policy
   * is evaluated with (an `in` over an absent entity is simply false, so leaving one out could skip a
   * forbid).
   */
  entities: Uid[];
  /** Attribute names of `context` the policy reads, or 'all' when it uses `context` as a whole. */
  contextReads: ReadonlySet<string> | 'all';
  /** Every attribute name the policy reads from anything but `context` itself (entities, records). */
  attributeReads: ReadonlySet<string>;
  /**
   * Whether the policy can observe anything of the request's resource but its type: true unless its
   * resource scope is `resource` or `resource is T` and no condition names the variable `resource`.
   */
  readsResource: boolean;
}

type Est = { principal?: unknown; action?: unknown; resource?: unknown; conditions?: Array<{ kind?: unknown; body?: unknown }> };

function asUid(v: unknown): Uid | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const { type, id } = v as { type?: unknown; id?: unknown };
  return typeof type === 'string' && typeof id === 'string' ? { type, id } : undefined;
}

/**
 * Collects the entity literals of an EST: scope constraints carry them as `entity` / `entities`
 * (`{op: "in", entity: {type, id}}`, an action scope's `entities: [...]`), expressions as
 * `{Value: {__entity: {type, id}}}`, inside sets and records too. Anything shaped so is taken: one too
 * many only costs a lookup.
 */
function collectEntityLiterals(node: unknown, out: Uid[]): void {
  if (Array.isArray(node)) {
    for (const child of node) collectEntityLiterals(child, out);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  for (const [key, value] of Object.entries(node)) {
    if (key === 'entity' || key === '__entity') {
      const uid = asUid(value);
      if (uid) {
        out.push(uid);
        continue;
      }
    }
    if (key === 'entities' && Array.isArray(value)) {
      for (const item of value) {
        const uid = asUid(item);
        if (uid) out.push(uid);
      }
    }
    collectEntityLiterals(value, out);
  }
}

function isContextVar(node: unknown): boolean {
  return typeof node === 'object' && node !== null && (node as { Var?: unknown }).Var === 'context';
}

interface Reads {
  context: Set<string>;
  /** Set when `context` is used other than as the left side of `.`/`has`. */
  wholeContext: boolean;
  attributes: Set<string>;
}

/** The attribute steps of a `.`/`has` operand: `e has a.b` arrives as attr ["a", "b"]. */
function attrSteps(attr: unknown): string[] {
  if (typeof attr === 'string') return [attr];
  return Array.isArray(attr) ? attr.filter((a): a is string => typeof a === 'string') : [];
}

/** Walks an EST expression, collecting context attributes and all other attribute names read. */
function collectReads(node: unknown, reads: Reads): void {
  if (Array.isArray(node)) {
    for (const child of node) collectReads(child, reads);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  if (isContextVar(node)) {
    reads.wholeContext = true;
    return;
  }
  for (const [op, operand] of Object.entries(node)) {
    if ((op === '.' || op === 'has') && typeof operand === 'object' && operand !== null) {
      const { left, attr } = operand as { left?: unknown; attr?: unknown };
      const steps = attrSteps(attr);
      if (isContextVar(left)) {
        // Only the first step names a context attribute; later steps read inside its value.
        if (steps.length === 0) reads.wholeContext = true;
        else reads.context.add(steps[0]!);
        for (const step of steps.slice(1)) reads.attributes.add(step);
      } else {
        for (const step of steps) reads.attributes.add(step);
        collectReads(left, reads);
      }
      continue;
    }
    collectReads(operand, reads);
  }
}

function actionScopeOf(action: unknown): ActionScope {
  if (typeof action === 'object' && action !== null) {
    const scope = action as { op?: unknown; entity?: { type?: unknown; id?: unknown } };
    if (scope.op === '==' && scope.entity && scope.entity.type === 'Action' && typeof scope.entity.id === 'string') {
      return { kind: 'equals', actionId: scope.entity.id };
    }
  }
  // `All`, `in`, `in [...]`, or anything this code does not know: the policy is kept for every action.
  return { kind: 'any' };
}

/** Whether an EST expression names the variable `name` anywhere. */
function mentionsVar(node: unknown, name: string): boolean {
  if (Array.isArray(node)) return node.some((child) => mentionsVar(child, name));
  if (typeof node !== 'object' || node === null) return false;
  if ((node as { Var?: unknown }).Var === name) return true;
  for (const key in node) if (Object.hasOwn(node, key) && mentionsVar((node as Record<string, unknown>)[key], name)) return true;
  return false;
}

/**
 * A resource scope that reads only the resource's type: `resource` (All) or `resource is T` without
 * `in`. `==`, `in`, `is … in` (they read its uid or its ancestors), and anything unknown, read more.
 */
function resourceScopeReadsOnlyType(resource: unknown): boolean {
  if (typeof resource !== 'object' || resource === null) return false;
  const scope = resource as Record<string, unknown>;
  const keys = Object.keys(scope);
  if (scope.op === 'All') return keys.length === 1;
  return scope.op === 'is' && typeof scope.entity_type === 'string' && keys.length === 2;
}

/** Relevance of one policy from its EST (`policyToJson(...).json`). */
export function relevanceOf(est: Est): PolicyRelevance {
  const reads: Reads = { context: new Set(), wholeContext: false, attributes: new Set() };
  const conditions = (est.conditions ?? []).map((c) => c.body);
  collectReads(conditions, reads);
  const entities: Uid[] = [];
  collectEntityLiterals([est.principal, est.action, est.resource, est.conditions ?? []], entities);
  return {
    action: actionScopeOf(est.action),
    exceptActions: exceptActionsOf(est.conditions ?? []),
    contextReads: reads.wholeContext ? 'all' : reads.context,
    attributeReads: reads.attributes,
    entities,
    readsResource: !resourceScopeReadsOnlyType(est.resource) || mentionsVar(conditions, 'resource'),
  };
}

export function mayApplyToAction(relevance: PolicyRelevance, actionId: string): boolean {
  if (relevance.exceptActions.has(actionId)) return false;
  return relevance.action.kind === 'any' || relevance.action.actionId === actionId;
}

/** The action ids of `action == Action::"a" || action == Action::"b" …` (either operand order), or undefined for any other expression. */
function actionEqualities(node: unknown): string[] | undefined {
  if (typeof node !== 'object' || node === null) return undefined;
  const n = node as Record<string, { left?: unknown; right?: unknown } | undefined>;
  const keys = Object.keys(n);
  if (keys.length !== 1) return undefined;
  const op = n[keys[0]!];
  if (op === undefined || typeof op !== 'object') return undefined;
  if (keys[0] === '||') {
    const left = actionEqualities(op.left);
    const right = actionEqualities(op.right);
    return left && right ? [...left, ...right] : undefined;
  }
  if (keys[0] !== '==') return undefined;
  const id = actionLiteralAgainstVar(op.left, op.right) ?? actionLiteralAgainstVar(op.right, op.left);
  return id === undefined ? undefined : [id];
}

function actionLiteralAgainstVar(variable: unknown, literal: unknown): string | undefined {
  if ((variable as { Var?: unknown } | null)?.Var !== 'action') return undefined;
  const value = (literal as { Value?: { __entity?: { type?: unknown; id?: unknown } } } | null)?.Value?.__entity;
  return value?.type === 'Action' && typeof value.id === 'string' ? value.id : undefined;
}

/** The actions a policy's first condition rules out (see PolicyRelevance.exceptActions). */
function exceptActionsOf(conditions: Array<{ kind?: unknown; body?: unknown }>): ReadonlySet<string> {
  const first = conditions[0];
  if (first?.kind !== 'unless') return new Set();
  return new Set(actionEqualities(first.body) ?? []);
}

/** The context attributes that the given policies read together; 'all' if any of them needs all. */
export function contextReadsOf(relevances: Iterable<PolicyRelevance>): ReadonlySet<string> | 'all' {
  const union = new Set<string>();
  for (const r of relevances) {
    if (r.contextReads === 'all') return 'all';
    for (const name of r.contextReads) union.add(name);
  }
  return union;
}

/** The entity literals of the given policies together, each once. */
export function entityLiteralsOf(relevances: Iterable<PolicyRelevance>): Uid[] {
  const byKey = new Map<string, Uid>();
  for (const r of relevances) for (const uid of r.entities) byKey.set(`${uid.type}::${JSON.stringify(uid.id)}`, uid);
  return [...byKey.values()];
}

/** Whether any of the given policies can observe more of the resource than its type. */
export function resourceReadOf(relevances: Iterable<PolicyRelevance>): boolean {
  for (const r of relevances) if (r.readsResource) return true;
  return false;
}

/** The non-context attribute names that the given policies read together. */
export function attributeReadsOf(relevances: Iterable<PolicyRelevance>): Set<string> {
  const union = new Set<string>();
  for (const r of relevances) for (const name of r.attributeReads) union.add(name);
  return union;
}
