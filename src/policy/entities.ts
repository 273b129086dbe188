/**
 * Trusted entities as writ holds them, and the slice of them a single request needs.
 * The store (seeded from `entities.json`, changed by admin updates) is the only source of entities:
 * a request can never add or override one (docs/protocol.md §2).
 */
import { WritError } from '../errors.js';
import { digestOf } from '../util/canonical.js';
import { CEDAR_TYPE_NAME, type Uid, uidKey } from '../util/uid.js';

/** One Cedar entity: attrs are Cedar JSON values (`__entity` / `__extn` tagged where needed). */
export interface EntityJson {
  uid: Uid;
  attrs: Record<string, unknown>;
  parents: Uid[];
}

/** Read access to the trusted entity store; `version` changes whenever any entity changes. */
export interface EntitySource {
  get(uidKey: string): EntityJson | undefined;
  readonly version: string;
}

function compareUid(a: Uid, b: Uid): number {
  if (a.type !== b.type) return a.type < b.type ? -1 : 1;
  if (a.id !== b.id) return a.id < b.id ? -1 : 1;
  return 0;
}

/**
 * docs/protocol.md §2: `sha256:` + hex SHA-256 of JCS of `[{uid, attrs, parents}]` sorted by (type, id),
 * each entity's parents sorted likewise.
 */
export function entitiesVersionOf(entities: EntityJson[]): string {
  const canonical = [...entities]
    .sort((a, b) => compareUid(a.uid, b.uid))
    .map((e) => ({
      uid: { type: e.uid.type, id: e.uid.id },
      attrs: e.attrs,
      parents: [...e.parents].sort(compareUid).map((p) => ({ type: p.type, id: p.id })),
    }));
  return digestOf('', canonical);
}

/** An immutable in-memory EntitySource (the seed file, `writ policy test`, tests). */
export class StaticEntitySource implements EntitySource {
  private readonly byKey: Map<string, EntityJson>;
  private readonly entities: EntityJson[];
  private cachedVersion: string | undefined;

  constructor(entities: EntityJson[]) {
    this.entities = entities;
    this.byKey = new Map(entities.map((e) => [uidKey(e.uid), e]));
  }

  /** Computed on first use: the evaluator threads build one source per decision and never ask. */
  get version(): string {
    return (this.cachedVersion ??= entitiesVersionOf(this.entities));
  }

  /** Every entity, in the order given. */
  all(): EntityJson[] {
    return this.entities;
  }

  get(key: string): EntityJson | undefined {
    return this.byKey.get(key);
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Accepts `{type,id}` or Cedar's `{"__entity":{type,id}}`; returns `{type,id}` or a problem. */
export function uidFromJson(value: unknown): Uid | string {
  const inner = isPlainObject(value) && '__entity' in value ? value.__entity : value;
  if (!isPlainObject(inner)) return 'expected {"type","id"}';
  const keys = Object.keys(inner);
  if (keys.length !== 2 || typeof inner.type !== 'string' || typeof inner.id !== 'string') {
    return 'expected exactly {"type": string, "id": string}';
  }
  if (!CEDAR_TYPE_NAME.test(inner.type)) return `not a Cedar type name: ${JSON.stringify(inner.type)}`;
  return { type: inner.type, id: inner.id };
}

/**
 * The first malformed Cedar escape in an entity's attributes, or undefined. Cedar's entity parser reads
 * `{"__entity": {"type": "X"}}` (no id), or an escape beside other members, as a plain record, so such a
 * fact would be stored and every policy comparing it with an entity would quietly be false. An object
 * holding `__entity` must be exactly `{"__entity": {"type", "id"}}` with a Cedar type name; one holding
 * `__extn` must be exactly `{"__extn": {...}}` (what is inside is Cedar's to check).
 */
export function malformedEscape(v: unknown, trail: Array<string | number>): JsonProblem | undefined {
  return firstProblem(v, trail, (node, at) => {
    if (!isPlainObject(node)) return undefined;
    for (const marker of ['__entity', '__extn']) {
      if (!Object.hasOwn(node, marker)) continue;
      if (Object.keys(node).length !== 1) return { trail: at, message: `an object holding "${marker}" must hold nothing else` };
      const inner = node[marker];
      if (marker === '__entity') {
        // uidFromJson also takes the escaped form; here only the bare {type, id} is an entity reference.
        const uid = isPlainObject(inner) && Object.hasOwn(inner, '__entity') ? 'expected exactly {"type": string, "id": string}' : uidFromJson(inner);
        if (typeof uid === 'string') return { trail: [...at, '__entity'], message: `a "__entity" reference: ${uid}` };
      } else if (!isPlainObject(inner)) {
        return { trail: [...at, '__extn'], message: 'a "__extn" value is an object {"fn", "arg"}' };
      }
      return STOP;
    }
    return undefined;
  });
}

/** A problem found at a JSON pointer trail. */
export interface JsonProblem {
  trail: Array<string | number>;
  message: string;
}

/** `check`'s answer for a node whose insides are not to be walked. */
const STOP = Symbol('stop');

/**
 * The first problem `check` finds walking `v` depth-first in document order (array items, then object
 * members), or undefined. `check` sees each node first: a problem ends the walk, STOP skips its insides.
 */
function firstProblem(
  v: unknown,
  trail: Array<string | number>,
  check: (node: unknown, trail: Array<string | number>) => JsonProblem | typeof STOP | undefined,
): JsonProblem | undefined {
  const verdict = check(v, trail);
  if (verdict === STOP) return undefined;
  if (verdict !== undefined) return verdict;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const found = firstProblem(v[i], [...trail, i], check);
      if (found) return found;
    }
  } else if (isPlainObject(v)) {
    for (const key of Object.keys(v)) {
      const found = firstProblem(v[key], [...trail, key], check);
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * The first attribute value Cedar cannot hold, or undefined: a number that is not an integer (Cedar has
 * no floating point; a decimal is written `{"__extn": {"fn": "decimal", "arg": "1.5"}}`) or a null
 * (Cedar has none: an attribute without a value is left out). Cedar's own parser refuses both, but with
 * a message about its internal types and no place in the document.
 */
export function unrepresentableAttribute(v: unknown, trail: Array<string | number>): JsonProblem | undefined {
  return firstProblem(v, trail, (node, at) => {
    if (node === null) return { trail: at, message: 'Cedar has no null: leave the attribute out instead' };
    if (typeof node === 'number' && !Number.isInteger(node)) {
      return {
        trail: at,
        message: `${node} is not an integer, and Cedar has no floating-point numbers: write a decimal as {"__extn": {"fn": "decimal", "arg": "${node}"}}`,
      };
    }
    return undefined;
  });
}

/**
 * Shape-checks one entity in Cedar entity JSON (`{uid, attrs?, parents?}`) and normalizes uids to
 * `{type,id}`. Cedar-level checks (attribute values, schema conformance) happen in load.ts.
 * Returns the entity or a list of problems, each prefixed with `where`.
 */
export function entityFromJson(value: unknown, where: string): EntityJson | string[] {
  if (!isPlainObject(value)) return [`${where}: expected an object {uid, attrs, parents}`];
  const problems: string[] = [];
  for (const key of Object.keys(value)) {
    if (key !== 'uid' && key !== 'attrs' && key !== 'parents') problems.push(`${where}: unknown field "${key}"`);
  }
  const uid = uidFromJson(value.uid);
  if (typeof uid === 'string') problems.push(`${where}.uid: ${uid}`);
  const attrs = value.attrs ?? {};
  if (!isPlainObject(attrs)) problems.push(`${where}.attrs: expected an object`);
  else {
    const problem = malformedEscape(attrs, []) ?? unrepresentableAttribute(attrs, []);
    if (problem) problems.push(`${where}.attrs${problem.trail.map((k) => (typeof k === 'number' ? `[${k}]` : `.${k}`)).join('')}: ${problem.message}`);
  }
  const rawParents = value.parents ?? [];
  const parents: Uid[] = [];
  if (!Array.isArray(rawParents)) problems.push(`${where}.parents: expected an array`);
  else {
    rawParents.forEach((p, i) => {
      const parent = uidFromJson(p);
      if (typeof parent === 'string') problems.push(`${where}.parents[${i}]: ${parent}`);
      else parents.push(parent);
    });
  }
  if (problems.length > 0 || typeof uid === 'string') return problems;
  return { uid, attrs: attrs as Record<string, unknown>, parents };
}

/** Parses the text of an `entities.json`; duplicates and malformed entries → POLICY_INVALID. */
export function parseEntitiesJson(text: string, file: string): EntityJson[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new WritError('POLICY_INVALID', `${file}: not JSON: ${(e as Error).message}`, { details: [`${file}: not JSON`] });
  }
  if (!Array.isArray(raw)) {
    throw new WritError('POLICY_INVALID', `${file}: expected an array of entities`, { details: [`${file}: expected an array`] });
  }
  const problems: string[] = [];
  const entities: EntityJson[] = [];
  const seen = new Set<string>();
  raw.forEach((item, i) => {
    const parsed = entityFromJson(item, `${file}[${i}]`);
    if (Array.isArray(parsed)) {
      problems.push(...parsed);
      return;
    }
    const key = uidKey(parsed.uid);
    if (seen.has(key)) problems.push(`${file}[${i}]: duplicate entity ${key}`);
    seen.add(key);
    entities.push(parsed);
  });
  if (problems.length > 0) {
    throw new WritError('POLICY_INVALID', `${file}: ${problems[0]}${problems.length > 1 ? ` (+${problems.length - 1} more)` : ''}`, {
      details: problems,
    });
  }
  return entities;
}

/**
 * The entities one evaluation can reach, each once: the given roots (principal, action, resource,
 * requester, approvers, the entities the policies name literally) and, transitively, every parent and
 * every entity an attribute refers to (`{"__entity": …}`, in records and sets too) — only through the
 * attributes in `followAttributes` when given (the ones the policies read; Cedar cannot reach an entity
 * through an attribute it never reads). Cedar sees no entity outside this set, and an `in` over an
 * absent entity is false rather than an error, so a reachable entity left out could skip a forbid:
 * the slice is closed under everything Cedar can follow. Roots missing from the store are simply
 * absent (attribute access on them errors, which the engine turns into a deny). Converting entities
 * into Cedar is the expensive part of an evaluation, so only this slice is handed over.
 */
export function entitySlice(source: EntitySource, roots: Uid[], followAttributes?: ReadonlySet<string>): EntityJson[] {
  const out: EntityJson[] = [];
  const seen = new Set<string>();
  const pending: string[] = [];
  for (const root of roots) pending.push(uidKey(root));
  while (pending.length > 0) {
    const key = pending.pop()!;
    if (seen.has(key)) continue;
    seen.add(key);
    const entity = source.get(key);
    if (!entity) continue;
    out.push(entity);
    for (const parent of entity.parents) pending.push(uidKey(parent));
    for (const name in entity.attrs) {
      if (Object.hasOwn(entity.attrs, name) && (followAttributes === undefined || followAttributes.has(name))) {
        collectEntityRefs(entity.attrs[name], pending);
      }
    }
  }
  return out;
}

/** The uid keys of the entity references (`{"__entity": {type, id}}`) inside a Cedar JSON value. */
function collectEntityRefs(value: unknown, out: string[]): void {
  if (typeof value !== 'object' || value === null) return;
  if (Array.isArray(value)) {
    for (const item of value) collectEntityRefs(item, out);
    return;
  }
  const v = value as Record<string, unknown>;
  if (Object.hasOwn(v, '__entity')) {
    const ref = v.__entity as { type?: unknown; id?: unknown } | null;
    if (ref && typeof ref.type === 'string' && typeof ref.id === 'string') out.push(uidKey({ type: ref.type, id: ref.id }));
    return;
  }
  if (Object.hasOwn(v, '__extn')) return;
  for (const key in v) if (Object.hasOwn(v, key)) collectEntityRefs(v[key], out);
}
