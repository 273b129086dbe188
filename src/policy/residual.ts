/**
 * Residual programs: what is left of a policy set once everything but a request's string and datetime
 * context values is known (Cedar's own partial evaluation), evaluated again on each request's own values.
 *
 * Why: a "distinct" decision — the same agent, subject and facts, but a task id (or any other string a
 * policy reads) new on every call, or a clock that a policy compares — misses the exact-input memo every
 * time, and a full Cedar call is mostly the cost of converting its inputs into wasm. Cedar is a pure
 * function of its inputs, so the part of the answer that does not depend on those values is the same for
 * every such call: Cedar works it out once with them as unknowns, and what remains
 * (`context.task_id like "*-blocked"`, `context.now < context.execute_after`) is evaluated here, on the
 * real values.
 *
 * Exact, never approximate. This module evaluates only a small, closed part of Cedar whose semantics are
 * fixed: string and boolean literals, the unknowns, `&&`, `||`, `!`, `==` between strings and booleans
 * (Cedar's reductions spell `a != b` as `!(a == b)`), `like`, `if-then-else`, `datetime("…")` literals
 * compared by `<` and `<=` (Cedar spells `>` and `>=` with them), and a member of a context record Cedar
 * left unreduced (it does so when the context still holds a datetime value) — with Cedar's left-to-right
 * short-circuit. It gives up (undefined) on anything else: another operator or method, a value of another
 * type, or any expression Cedar would refuse with an error. The caller then asks Cedar itself, so every
 * error text, and every answer this module cannot derive exactly, is still Cedar's. A residual program
 * that is unusable as a whole (a policy that errored while being reduced, a scope Cedar left unresolved)
 * is never built.
 */

import { isWellFormed } from '../util/canonical.js';

/** The Cedar JSON (EST) form of an expression, as Cedar's partial evaluation returns it. */
type Expr = Record<string, unknown>;

/** One policy of the kept set with what is left of its conditions. */
interface ResidualPolicy {
  id: string;
  effect: 'permit' | 'forbid';
  conditions: Array<{ kind: 'when' | 'unless'; body: Expr }>;
}

/** The kept set, in load order, reduced to what depends on the unknown values. */
export interface ResidualProgram {
  policies: ResidualPolicy[];
}

/** The policies a request satisfies, by effect, in the program's (load) order. */
export interface Satisfied {
  permits: string[];
  forbids: string[];
}

/** A Cedar datetime as the instant it names: milliseconds since the Unix epoch. */
export class Instant {
  constructor(readonly ms: number) {}
}

/**
 * Cedar's datetime forms — `YYYY-MM-DD`, or `YYYY-MM-DDThh:mm:ss` with an optional `.SSS` and then `Z` or
 * `±hhmm` — as the instant they name; undefined for anything else or any impossible field (month 13,
 * February 30, hour 24, second 60, an offset of 24 hours or more), which is then left to Cedar.
 */
const CEDAR_DATETIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{3}))?(?:(Z)|([+-])(\d{2})(\d{2})))?$/;
export function instantOf(text: string): Instant | undefined {
  const m = CEDAR_DATETIME.exec(text);
  if (m === null) return undefined;
  const [, y, mo, d, h, mi, sec, frac, zulu, sign, oh, om] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1) return undefined;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
  if (day > days) return undefined;
  const hour = Number(h ?? 0);
  const minute = Number(mi ?? 0);
  const second = Number(sec ?? 0);
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMinutes = 0;
  if (h !== undefined && zulu === undefined) {
    const offHours = Number(oh);
    const offMins = Number(om);
    if (offHours > 23 || offMins > 59) return undefined;
    offsetMinutes = (sign === '-' ? -1 : 1) * (offHours * 60 + offMins);
  }
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day); // not Date.UTC: it maps years 0–99 to 1900–1999
  date.setUTCHours(hour, minute, second, Number(frac ?? 0));
  return new Instant(date.getTime() - offsetMinutes * 60_000);
}

/**
 * A narrowed context split for partial evaluation: `shape` (every member, with a top-level string or
 * datetime value replaced by a tag, every other value kept), those values themselves (`values`) and the
 * context Cedar reduces with them as unknowns. Undefined when there is nothing to leave out.
 */
export interface ContextShape {
  shape: Array<[string, 'unknown string' | 'unknown datetime'] | [string, 'value', unknown]>;
  values: Record<string, Value>;
  partialContext: Record<string, unknown>;
}

/** The datetime a Cedar JSON value names (`{"__extn": {"fn": "datetime", "arg": …}}`), if it is one we read exactly. */
function datetimeOf(value: unknown): Instant | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const extn = (value as { __extn?: { fn?: unknown; arg?: unknown } }).__extn;
  if (extn === undefined || Object.keys(value).length !== 1 || extn.fn !== 'datetime' || typeof extn.arg !== 'string') return undefined;
  return instantOf(extn.arg);
}

export function contextShapeOf(context: Record<string, unknown>): ContextShape | undefined {
  const shape: ContextShape['shape'] = [];
  const values: Record<string, Value> = Object.create(null);
  const partialContext: Record<string, unknown> = {};
  let unknowns = 0;
  for (const key in context) {
    if (!Object.hasOwn(context, key)) continue;
    const value = context[key];
    // A string with a lone surrogate has no exact counterpart in Cedar's (UTF-8) strings: kept concrete.
    const unknown = typeof value === 'string' ? (isWellFormed(value) ? value : undefined) : datetimeOf(value);
    if (unknown === undefined) {
      shape.push([key, 'value', value]);
      partialContext[key] = value;
      continue;
    }
    shape.push([key, typeof unknown === 'string' ? 'unknown string' : 'unknown datetime']);
    values[key] = unknown;
    partialContext[key] = { __extn: { fn: 'unknown', arg: key } };
    unknowns++;
  }
  return unknowns === 0 ? undefined : { shape, values, partialContext };
}

/** Cedar's partial answer, as cedar-wasm's isAuthorizedPartial returns it in `response`. */
export interface PartialResponse {
  errored: string[];
  residuals: Record<
    string,
    { effect: string; principal: { op: string }; action: { op: string }; resource: { op: string }; conditions: Array<{ kind: string; body: Expr }> }
  >;
}

/**
 * Longest program kept (characters of its residual conditions as JSON): an engine keeps a bounded number
 * of programs, so this bounds their memory; a bigger reduction is simply left to Cedar.
 */
export const MAX_PROGRAM_CHARS = 16_384;

/**
 * The program of `policyIds` (load order) from Cedar's partial answer, or undefined when it cannot be
 * used for any request: a policy errored during the reduction (its error text must come from Cedar), a
 * scope is left unresolved, a policy is missing from the answer, or what is left is too big to keep.
 * Policies reduced to a condition that can never hold (`when false`, `unless true`) are left out.
 */
export function residualProgramOf(response: PartialResponse, policyIds: readonly string[]): ResidualProgram | undefined {
  if (response.errored.length > 0) return undefined;
  const policies: ResidualPolicy[] = [];
  let chars = 0;
  for (const id of policyIds) {
    if (!Object.hasOwn(response.residuals, id)) return undefined;
    const r = response.residuals[id]!;
    if (r.effect !== 'permit' && r.effect !== 'forbid') return undefined;
    if (r.principal.op !== 'All' || r.action.op !== 'All' || r.resource.op !== 'All') return undefined;
    const conditions: ResidualPolicy['conditions'] = [];
    // Conditions are evaluated in order and stop at the first that fails: one reduced to a failing
    // literal before any condition left to evaluate means the policy never holds (and never errors).
    let never = false;
    let decidedSoFar = true;
    for (const c of r.conditions) {
      if (c.kind !== 'when' && c.kind !== 'unless') return undefined;
      const literal = (c.body as { Value?: unknown }).Value;
      if (decidedSoFar && literal === (c.kind === 'unless')) never = true;
      if (literal !== (c.kind === 'when')) decidedSoFar = false;
      conditions.push({ kind: c.kind, body: c.body });
    }
    if (never) continue;
    chars += JSON.stringify(conditions).length;
    if (chars > MAX_PROGRAM_CHARS) return undefined;
    policies.push({ id, effect: r.effect, conditions });
  }
  return { policies };
}

/** Thrown inside the evaluator when the expression leaves the part of Cedar evaluated here. */
const NOT_HERE = Symbol('not evaluated here');

type Value = string | boolean | Instant;

function evaluate(e: unknown, values: Record<string, Value>): Value {
  if (typeof e !== 'object' || e === null || Array.isArray(e)) throw NOT_HERE;
  let op: string | undefined;
  for (const k in e) {
    if (op !== undefined) throw NOT_HERE; // one operator per node
    op = k;
  }
  const node = (e as Expr)[op as string] as Record<string, unknown>;
  switch (op) {
    case 'Value': {
      const v = node as unknown;
      if (typeof v === 'string' || typeof v === 'boolean') return v;
      throw NOT_HERE;
    }
    case 'unknown': {
      const args = node as unknown;
      if (!Array.isArray(args) || args.length !== 1) throw NOT_HERE;
      const name = (args[0] as { Value?: unknown } | null)?.Value;
      if (typeof name !== 'string' || !(name in values)) throw NOT_HERE;
      return values[name]!;
    }
    case '&&':
      // Cedar: the left operand must be a boolean; false short-circuits; else the right one, a boolean.
      return boolean(evaluate(node.left, values)) ? boolean(evaluate(node.right, values)) : false;
    case '||':
      return boolean(evaluate(node.left, values)) ? true : boolean(evaluate(node.right, values));
    case '!':
      return !boolean(evaluate(node.arg, values));
    case '==': {
      // Total in Cedar: values of different types are simply unequal. Strings compare by their
      // characters (no normalisation), which for well-formed strings is ===. Datetimes: left to Cedar.
      const left = evaluate(node.left, values);
      const right = evaluate(node.right, values);
      if (left instanceof Instant || right instanceof Instant) throw NOT_HERE;
      return left === right;
    }
    case '<':
    case '<=': {
      // Between two datetimes, the instants (Cedar also compares longs and durations: left to it).
      const left = evaluate(node.left, values);
      const right = evaluate(node.right, values);
      if (!(left instanceof Instant) || !(right instanceof Instant)) throw NOT_HERE;
      return op === '<' ? left.ms < right.ms : left.ms <= right.ms;
    }
    case 'datetime': {
      const args = node as unknown;
      if (!Array.isArray(args) || args.length !== 1) throw NOT_HERE;
      const text = (args[0] as { Value?: unknown } | null)?.Value;
      const instant = typeof text === 'string' ? instantOf(text) : undefined;
      if (instant === undefined) throw NOT_HERE;
      return instant;
    }
    case '.': {
      // A member of a record literal (the context Cedar left unreduced); only that member is evaluated.
      const record = (node.left as { Record?: unknown } | null)?.Record;
      const attr = node.attr;
      if (typeof record !== 'object' || record === null || typeof attr !== 'string' || !Object.hasOwn(record, attr)) throw NOT_HERE;
      return evaluate((record as Record<string, unknown>)[attr], values);
    }
    case 'like': {
      const text = evaluate(node.left, values);
      if (typeof text !== 'string') throw NOT_HERE;
      return likeMatches(text, node.pattern);
    }
    case 'if-then-else':
      return evaluate(boolean(evaluate(node.if, values)) ? node.then : node.else, values);
    default:
      throw NOT_HERE;
  }
}

function boolean(v: Value): boolean {
  if (typeof v !== 'boolean') throw NOT_HERE; // Cedar: a type error
  return v;
}

/**
 * Cedar's `like`: the pattern, as Cedar's JSON gives it (`"Wildcard"` or `{Literal: text}`), matched
 * against the whole string, character by character — Unicode scalar values, as Rust's chars, not UTF-16
 * code units — with a wildcard matching any run of characters, the empty one included.
 */
export function likeMatches(text: string, pattern: unknown): boolean {
  if (!Array.isArray(pattern)) throw NOT_HERE;
  // The pattern as characters, a wildcard as null.
  const pat: Array<string | null> = [];
  for (const element of pattern) {
    if (element === 'Wildcard') pat.push(null);
    else if (typeof element === 'object' && element !== null && typeof (element as { Literal?: unknown }).Literal === 'string') {
      for (const ch of (element as { Literal: string }).Literal) pat.push(ch);
    } else throw NOT_HERE;
  }
  const chars = Array.from(text);
  // Greedy matching with backtracking to the last wildcard: linear in practice, never exponential.
  let t = 0;
  let p = 0;
  let star = -1;
  let resume = 0;
  while (t < chars.length) {
    if (p < pat.length && pat[p] !== null && pat[p] === chars[t]) {
      t++;
      p++;
    } else if (p < pat.length && pat[p] === null) {
      star = p++;
      resume = t;
    } else if (star >= 0) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pat.length && pat[p] === null) p++;
  return p === pat.length;
}

/**
 * The policies the request with these values satisfies, or undefined when any expression reached
 * leaves what this module evaluates (the caller then asks Cedar). Each policy's conditions are taken in
 * order and stop at the first that fails, as Cedar's evaluation of the policy does.
 */
export function satisfiedBy(program: ResidualProgram, values: Record<string, Value>): Satisfied | undefined {
  const permits: string[] = [];
  const forbids: string[] = [];
  try {
    for (const policy of program.policies) {
      let holds = true;
      for (const c of policy.conditions) {
        const v = boolean(evaluate(c.body, values));
        if (c.kind === 'when' ? !v : v) {
          holds = false;
          break;
        }
      }
      if (holds) (policy.effect === 'permit' ? permits : forbids).push(policy.id);
    }
  } catch {
    // NOT_HERE, or anything else (a residual nested deeper than the stack): Cedar answers instead.
    return undefined;
  }
  return { permits, forbids };
}
