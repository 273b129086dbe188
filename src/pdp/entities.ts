/**
 * Trusted facts through the API (docs/protocol.md §5): each change ledgered and moving entities_version.
 */
import { WritError } from '../errors.js';
import { toPlain } from '../binding/index.js';
import { admitNumberToken } from '../binding/admit.js';
import { jsonPointer, LosslessNumber, type LosslessValue } from '../binding/parse.js';
import { validateEntity } from '../policy/load.js';
import { entityFromJson, malformedEscape, unrepresentableAttribute, type EntityJson } from '../policy/entities.js';
import type { Table, WriteTx } from '../store/types.js';
import { ENTITIES_VERSION_KEY, type EntityCache, subjectRevisionKey } from '../entities/entity-cache.js';
import { commitWithRevalidation, storeFailure } from './commit.js';
import { validateEntityUpsert } from '../schemas/validate.js';
import { callerFields, type Caller } from '../identity/caller.js';
import { CEDAR_TYPE_NAME, uidKey, type Uid } from '../util/uid.js';
import type { PdpCore } from './core.js';
import { parseLosslessBody } from './body.js';

/** The uid limits of schemas/defs.json. */
const MAX_TYPE_NAME = 256;
const MAX_ENTITY_ID = 1024;

/**
 * Refuses a number in an entity upsert that the store could not keep exactly: an integer token beyond
 * ±(2^53−1) (a trusted fact stored rounded would be a different fact than the one sent), and an integral
 * value written as a float (`1.0`, `1e0`), whose int/float distinction would be lost. The same rules and
 * codes as admission (§3), with a JSON pointer into the body. Other non-integers are Cedar's to refuse
 * (its entity format has no floats: a decimal is `{"__extn": {"fn": "decimal", "arg": "1.5"}}`).
 */
function refuseInexactIntegers(v: LosslessValue, trail: Array<string | number>): void {
  if (v instanceof LosslessNumber) {
    const admitted = admitNumberToken(v.text);
    if (typeof admitted === 'object' && (admitted.code === 'BINDING_UNSAFE_INTEGER' || admitted.code === 'BINDING_LOSSY_NUMBER')) {
      throw new WritError(admitted.code, admitted.message, { path: jsonPointer(trail) });
    }
  } else if (Array.isArray(v)) {
    for (const [i, item] of v.entries()) refuseInexactIntegers(item, [...trail, i]);
  } else if (v !== null && typeof v === 'object') {
    for (const key of Object.keys(v)) refuseInexactIntegers(v[key]!, [...trail, key]);
  }
}

/**
 * Refuses an upsert whose parents would close a cycle in the entity hierarchy through it (Cedar refuses
 * every request over a cyclic hierarchy, so one bad upsert would turn every decision touching it into a
 * deny). The store held no cycle before, so any new one passes through the upserted entity.
 */
function refuseParentCycle(entity: EntityJson, stored: (key: string) => EntityJson | undefined): void {
  const self = uidKey(entity.uid);
  const seen = new Set<string>();
  const walk = (parents: Uid[], path: string[]): void => {
    for (const p of parents) {
      const key = uidKey(p);
      if (key === self) {
        throw new WritError('INVALID_REQUEST', `parents would make a cycle: ${[self, ...path, key].join(' → ')}`, { path: '/parents' });
      }
      if (seen.has(key)) continue;
      seen.add(key);
      walk(stored(key)?.parents ?? [], [...path, key]);
    }
  };
  walk(entity.parents, []);
}

/** Entity upserts and reads. */
export class EntityService {
  constructor(private readonly core: PdpCore) {}

  async putEntity(caller: Caller, type: string, id: string, text: string): Promise<Record<string, unknown>> {
    // The same limits as a uid anywhere else (schemas/defs.json): a path the store cannot key is bad input, not an outage.
    if (!CEDAR_TYPE_NAME.test(type) || type.length > MAX_TYPE_NAME) throw new WritError('INVALID_REQUEST', `${JSON.stringify(type)} is not a Cedar type name`);
    if (id.length > MAX_ENTITY_ID) throw new WritError('INVALID_REQUEST', `an entity id is at most ${MAX_ENTITY_ID} characters`);
    const raw = parseLosslessBody(text);
    refuseInexactIntegers(raw, []);
    const body: unknown = toPlain(raw);
    validateEntityUpsert(body);
    const problem = malformedEscape(body.attrs, ['attrs']) ?? unrepresentableAttribute(body.attrs, ['attrs']);
    if (problem) throw new WritError('INVALID_REQUEST', problem.message, { path: jsonPointer(problem.trail) });
    const checked = entityFromJson({ uid: { type, id }, attrs: body.attrs, parents: body.parents }, 'body');
    if (Array.isArray(checked)) throw new WritError('INVALID_REQUEST', checked.join('; '));
    validateEntity(this.core.bundle, checked);
    let staged: ReturnType<EntityCache['stage']> | undefined;
    // A decision starved by entity changes goes first (EntityCache.hold()).
    await this.core.entities.unheld();
    const rec = await commitWithRevalidation(
      this.core,
      async () => ({
        write: (tx: WriteTx) => {
          // Fresh (checked before this runs) and settled before the cycle check reads the entities held
          // here (stage() checks again).
          this.core.entities.checkSettled();
          refuseParentCycle(checked, (key) => this.core.entities.get(key));
          staged = this.core.entities.stage(tx, [{ entity: checked }], 'api', callerFields(caller));
          return staged.records[0]!;
        },
        label: 'entity',
        reads: [
          ['meta', ENTITIES_VERSION_KEY],
          ['meta', subjectRevisionKey(uidKey(checked.uid))],
        ] as Array<[Table, string]>,
        answer: (seq: number) => seq,
        failed: (e: unknown) => {
          staged?.abort();
          return storeFailure(e);
        },
      }),
      { holdEntities: false },
    );
    staged!.commit();
    const record = await this.core.store.getRecord(rec);
    return { uid: checked.uid, attrs: checked.attrs, parents: checked.parents, entities_version: staged!.version, record: { seq: rec, hash: record?.hash } };
  }

  async getEntity(type: string, id: string): Promise<EntityJson> {
    await this.core.entities.refresh();
    const e = this.core.entities.get(uidKey({ type, id }));
    if (!e) throw new WritError('NOT_FOUND', `no entity ${uidKey({ type, id })}`);
    return e;
  }
}
