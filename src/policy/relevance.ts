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
 */

/** A policy's action scope, reduced to what relevance needs. */
export type ActionScope = { kind: 'any' } | { kind: 'equals'; actionId: string };

export interface PolicyRelevance {
  action: ActionScope;
  /** Attribute names of `context` the policy reads, or 'all' when it uses `context` as a whole. */
  contextReads: ReadonlySet<string> | 'all';
}

type Est = { action?: unknown; conditions?: Array<{ body?: unknown }> };

function isContextVar(node: unknown): boolean {
  return typeof node === 'object' && node !== null && (node as { Var?: unknown }).Var === 'context';
}

/** Walks an EST expression; a `context` that is not the direct left side of `.`/`has` means 'all'. */
function collectContextReads(node: unknown, reads: Set<string>): boolean {
  if (Array.isArray(node)) {
    for (const child of node) if (!collectContextReads(child, reads)) return false;
    return true;
  }
  if (typeof node !== 'object' || node === null) return true;
  if (isContextVar(node)) return false;
  for (const [op, operand] of Object.entries(node)) {
    if ((op === '.' || op === 'has') && typeof operand === 'object' && operand !== null && isContextVar((operand as { left?: unknown }).left)) {
      // `context has a.b` arrives as attr ["a", "b"]: only the first step is a context attribute.
      const attr = (operand as { attr?: unknown }).attr;
      const first = Array.isArray(attr) ? attr[0] : attr;
      if (typeof first !== 'string') return false;
      reads.add(first);
      continue;
    }
    if (!collectContextReads(operand, reads)) return false;
  }
  return true;
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

/** Relevance of one policy from its EST (`policyToJson(...).json`). */
export function relevanceOf(est: Est): PolicyRelevance {
  const reads = new Set<string>();
  const bodies = (est.conditions ?? []).map((c) => c.body);
  const whole = !collectContextReads(bodies, reads);
  return { action: actionScopeOf(est.action), contextReads: whole ? 'all' : reads };
}

export function mayApplyToAction(relevance: PolicyRelevance, actionId: string): boolean {
  return relevance.action.kind === 'any' || relevance.action.actionId === actionId;
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
