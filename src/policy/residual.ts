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
 * fixed: string, boolean, long, entity, set and record values, the unknowns, `&&`, `||`, `!`, `==` and
 * `!=` (any two values but datetimes; values of different types are unequal), `like`, `if-then-else`,
 * `datetime("…")` literals compared by `<` and `<=` (Cedar spells `>` and `>=` with them), longs compared
 * by `<`, `<=`, `>`, `>=`, a member of a record, and — when the caller hands it the entities (AuthZEN
 * search, where the unknown is the principal or the resource: search-residual.ts) — an entity's
 * attribute, `has`, `is`, `in` (the entity itself or an ancestor), and `contains`, `containsAll`,
 * `containsAny` — with Cedar's left-to-right short-circuit. It gives up (undefined) on anything else:
 * another operator or method, an extension value, or any expression Cedar would refuse with an error (a
 * missing attribute or entity, a type mismatch). The caller then asks Cedar itself, so every error text,
 * and every answer this module cannot derive exactly, is still Cedar's. A residual program that is
 * unusable as a whole (a policy that errored while being reduced, a scope Cedar left unresolved) is
 * never built.
 */

import { isWellFormed } from '../util/canonical.js';
import type { EntityJson } from './entities.js';

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

/** A Cedar entity reference. */
export class EntityValue {
  constructor(
    readonly type: string,
    readonly id: string,
  ) {}
}

/** A Cedar set (its elements as given; equality and membership compare them as a set). */
class SetValue {
  constructor(readonly items: Value[]) {}
}

/** A Cedar record. */
class RecordValue {
  constructor(readonly attrs: Map<string, Value>) {}
}

/** The entities an evaluation may read (entity attributes, parents for `in`), by `type` and `id`. */
export type EntityLookup = (type: string, id: string) => EntityJson | undefined;

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
  const values = Object.create(null) as Record<string, Value>;
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

export type Value = string | boolean | number | Instant | EntityValue | SetValue | RecordValue;

/**
 * A value in Cedar's JSON form (an entity attribute, a `Value` literal) as a Value: strings, booleans,
 * longs (safe integers only), sets, records, `{"__entity": …}` and datetime extension values. Anything
 * else (another extension, a record member named `__…`, a number that is no safe integer) is not here.
 */
function valueOfJson(json: unknown): Value {
  if (typeof json === 'string' || typeof json === 'boolean') return json;
  if (typeof json === 'number') {
    if (!Number.isSafeInteger(json)) throw NOT_HERE;
    return json;
  }
  if (Array.isArray(json)) return new SetValue(json.map(valueOfJson));
  if (typeof json !== 'object' || json === null) throw NOT_HERE;
  const obj = json as Record<string, unknown>;
  if (Object.hasOwn(obj, '__entity')) {
    const ref = obj.__entity as { type?: unknown; id?: unknown } | null;
    if (Object.keys(obj).length !== 1 || ref === null || typeof ref !== 'object' || typeof ref.type !== 'string' || typeof ref.id !== 'string') throw NOT_HERE;
    if (Object.keys(ref).length !== 2) throw NOT_HERE;
    return new EntityValue(ref.type, ref.id);
  }
  if (Object.hasOwn(obj, '__extn')) {
    const instant = datetimeOf(obj);
    if (instant === undefined) throw NOT_HERE;
    return instant;
  }
  const attrs = new Map<string, Value>();
  for (const key of Object.keys(obj)) {
    if (key.startsWith('__')) throw NOT_HERE; // Cedar's JSON escapes (__expr…): left to Cedar
    attrs.set(key, valueOfJson(obj[key]));
  }
  return new RecordValue(attrs);
}

/** Cedar's `==`: total; values of different types are unequal; sets compare as sets. Datetimes: left to Cedar. */
function equal(a: Value, b: Value): boolean {
  if (a instanceof Instant || b instanceof Instant) throw NOT_HERE;
  if (typeof a !== 'object' || typeof b !== 'object') return a === b;
  if (a instanceof EntityValue) return b instanceof EntityValue && a.type === b.type && a.id === b.id;
  if (a instanceof SetValue) {
    if (!(b instanceof SetValue)) return false;
    return a.items.every((x) => b.items.some((y) => equal(x, y))) && b.items.every((y) => a.items.some((x) => equal(x, y)));
  }
  if (!(b instanceof RecordValue) || a.attrs.size !== b.attrs.size) return false;
  for (const [k, v] of a.attrs) {
    const w = b.attrs.get(k);
    if (w === undefined || !equal(v, w)) return false;
  }
  return true;
}

/** The entity a reference names, from the caller's entities; not here without them or when absent (Cedar: an error). */
function entityOf(ref: EntityValue, entities: EntityLookup | undefined): EntityJson {
  const entity = entities?.(ref.type, ref.id);
  if (entity === undefined) throw NOT_HERE;
  return entity;
}

/** Cedar's `in` for one entity: itself, or an ancestor through the parents the entities give (an absent entity has none). */
function isIn(entity: EntityValue, target: EntityValue, entities: EntityLookup | undefined): boolean {
  if (entity.type === target.type && entity.id === target.id) return true;
  if (entities === undefined) throw NOT_HERE;
  const seen = new Set<string>();
  const pending: Array<{ type: string; id: string }> = [entity];
  while (pending.length > 0) {
    const e = pending.pop()!;
    for (const parent of entities(e.type, e.id)?.parents ?? []) {
      if (parent.type === target.type && parent.id === target.id) return true;
      const key = JSON.stringify([parent.type, parent.id]);
      if (!seen.has(key)) {
        seen.add(key);
        pending.push(parent);
      }
    }
  }
  return false;
}

function asSet(v: Value): SetValue {
  if (!(v instanceof SetValue)) throw NOT_HERE; // Cedar: a type error
  return v;
}

function asEntity(v: Value): EntityValue {
  if (!(v instanceof EntityValue)) throw NOT_HERE;
  return v;
}

function asLong(v: Value): number {
  if (typeof v !== 'number') throw NOT_HERE;
  return v;
}

function evaluate(e: unknown, values: Record<string, Value>, entities?: EntityLookup): Value {
  if (typeof e !== 'object' || e === null || Array.isArray(e)) throw NOT_HERE;
  let op: string | undefined;
  for (const k in e) {
    if (op !== undefined) throw NOT_HERE; // one operator per node
    op = k;
  }
  const node = (e as Expr)[op as string] as Record<string, unknown>;
  switch (op) {
    case 'Value':
      return valueOfJson(node);
    case 'unknown': {
      const args = node as unknown;
      if (!Array.isArray(args) || args.length !== 1) throw NOT_HERE;
      const name = (args[0] as { Value?: unknown } | null)?.Value;
      if (typeof name !== 'string' || !(name in values)) throw NOT_HERE;
      return values[name]!;
    }
    case '&&':
      // Cedar: the left operand must be a boolean; false short-circuits; else the right one, a boolean.
      return boolean(evaluate(node.left, values, entities)) ? boolean(evaluate(node.right, values, entities)) : false;
    case '||':
      return boolean(evaluate(node.left, values, entities)) ? true : boolean(evaluate(node.right, values, entities));
    case '!':
      return !boolean(evaluate(node.arg, values, entities));
    case '==':
    case '!=': {
      // Total in Cedar: values of different types are simply unequal. Strings compare by their
      // characters (no normalisation), which for well-formed strings is ===. Datetimes: left to Cedar.
      const same = equal(evaluate(node.left, values, entities), evaluate(node.right, values, entities));
      return op === '==' ? same : !same;
    }
    case '<':
    case '<=': {
      // Between two datetimes, the instants; between two longs, the numbers (durations: left to Cedar).
      const left = evaluate(node.left, values, entities);
      const right = evaluate(node.right, values, entities);
      if (left instanceof Instant && right instanceof Instant) return op === '<' ? left.ms < right.ms : left.ms <= right.ms;
      const a = asLong(left);
      const b = asLong(right);
      return op === '<' ? a < b : a <= b;
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
      const attr = node.attr;
      if (typeof attr !== 'string') throw NOT_HERE;
      // A member of a record literal (the context Cedar left unreduced); only that member is evaluated.
      const literal = (node.left as { Record?: unknown } | null)?.Record;
      if (typeof literal === 'object' && literal !== null) {
        if (!Object.hasOwn(literal, attr)) throw NOT_HERE;
        return evaluate((literal as Record<string, unknown>)[attr], values, entities);
      }
      const target = evaluate(node.left, values, entities);
      if (target instanceof RecordValue) {
        const member = target.attrs.get(attr);
        if (member === undefined) throw NOT_HERE; // Cedar: an error
        return member;
      }
      const entity = entityOf(asEntity(target), entities);
      if (!Object.hasOwn(entity.attrs, attr)) throw NOT_HERE; // Cedar: an error
      return valueOfJson(entity.attrs[attr]);
    }
    case 'has': {
      const attr = node.attr;
      if (typeof attr !== 'string') throw NOT_HERE;
      const target = evaluate(node.left, values, entities);
      if (target instanceof RecordValue) return target.attrs.has(attr);
      return Object.hasOwn(entityOf(asEntity(target), entities).attrs, attr);
    }
    case 'is': {
      const entity = asEntity(evaluate(node.left, values, entities));
      if (typeof node.entity_type !== 'string') throw NOT_HERE;
      if (entity.type !== node.entity_type) return false;
      if (node.in === undefined) return true;
      return isInAny(entity, evaluate(node.in, values, entities), entities);
    }
    case 'in':
      return isInAny(asEntity(evaluate(node.left, values, entities)), evaluate(node.right, values, entities), entities);
    case 'contains': {
      const set = asSet(evaluate(node.left, values, entities));
      const item = evaluate(node.right, values, entities);
      return set.items.some((x) => equal(x, item));
    }
    case 'containsAll':
    case 'containsAny': {
      const set = asSet(evaluate(node.left, values, entities));
      const other = asSet(evaluate(node.right, values, entities));
      const has = (y: Value) => set.items.some((x) => equal(x, y));
      return op === 'containsAll' ? other.items.every(has) : other.items.some(has);
    }
    case 'Set': {
      if (!Array.isArray(node)) throw NOT_HERE;
      return new SetValue((node as unknown[]).map((item) => evaluate(item, values, entities)));
    }
    case 'Record': {
      if (typeof node !== 'object' || node === null || Array.isArray(node)) throw NOT_HERE;
      const attrs = new Map<string, Value>();
      for (const key of Object.keys(node)) attrs.set(key, evaluate(node[key], values, entities));
      return new RecordValue(attrs);
    }
    case 'like': {
      const text = evaluate(node.left, values, entities);
      if (typeof text !== 'string') throw NOT_HERE;
      return likeMatches(text, node.pattern);
    }
    case 'if-then-else':
      return evaluate(boolean(evaluate(node.if, values, entities)) ? node.then : node.else, values, entities);
    default:
      throw NOT_HERE;
  }
}

/** Cedar's `in` with an entity or a set of entities on the right (anything else: a type error). */
function isInAny(entity: EntityValue, right: Value, entities: EntityLookup | undefined): boolean {
  if (right instanceof EntityValue) return isIn(entity, right, entities);
  const targets = asSet(right).items.map(asEntity);
  return targets.some((t) => isIn(entity, t, entities));
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
 * The policies the request with these values (and, when given, these entities) satisfies, or undefined
 * when any expression reached leaves what this module evaluates (the caller then asks Cedar). Each
 * policy's conditions are taken in order and stop at the first that fails, as Cedar's evaluation of the
 * policy does.
 */
export function satisfiedBy(program: ResidualProgram, values: Record<string, Value>, entities?: EntityLookup): Satisfied | undefined {
  const permits: string[] = [];
  const forbids: string[] = [];
  try {
    for (const policy of program.policies) {
      let holds = true;
      for (const c of policy.conditions) {
        const v = boolean(evaluate(c.body, values, entities));
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
