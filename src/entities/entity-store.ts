/**
 * The trusted entity store: the only source of Cedar entities (docs/protocol.md §2, §5). Persisted in the
 * store's `entities` table; held in memory for evaluation. Every change goes through `stage()` inside a
 * store write (with its `entity` ledger record) and becomes visible here only after that write commits.
 */
import { entitiesVersionOf, type EntityJson, type EntitySource } from '../policy/entities.js';
import type { Store, WriteTx } from '../store/store.js';
import { jcs } from '../util/canonical.js';
import { uidKey } from '../util/uid.js';

export class EntityStore implements EntitySource {
  private readonly byKey = new Map<string, EntityJson>();
  private currentVersion: string;

  constructor(store: Store) {
    for (const [key, entity] of store.entries<EntityJson>('entities')) this.byKey.set(key, entity);
    this.currentVersion = entitiesVersionOf([...this.byKey.values()]);
  }

  get version(): string {
    return this.currentVersion;
  }

  get size(): number {
    return this.byKey.size;
  }

  get(key: string): EntityJson | undefined {
    return this.byKey.get(key);
  }

  all(): EntityJson[] {
    return [...this.byKey.values()];
  }

  /** True when `entity` differs from what the store holds for its uid. */
  differs(entity: EntityJson): boolean {
    const cur = this.byKey.get(uidKey(entity.uid));
    return !cur || jcs(cur) !== jcs(entity);
  }

  /**
   * Stages upserts/deletions in a write tx, ledgering each as an `entity` record that carries the
   * entities_version it produces. Returns `commit`, to be called once the write is durable.
   */
  stage(tx: WriteTx, changes: Array<{ entity: EntityJson; deleted?: boolean }>, source: 'api' | 'file'): { records: number[]; version: string; commit(): void } {
    const next = new Map(this.byKey);
    for (const { entity, deleted } of changes) {
      if (deleted) next.delete(uidKey(entity.uid));
      else next.set(uidKey(entity.uid), entity);
    }
    // One batch commits atomically, so no decision ever saw an intermediate version: every record of
    // the batch carries the version the batch produces.
    const version = entitiesVersionOf([...next.values()]);
    const records: number[] = [];
    for (const { entity, deleted } of changes) {
      const key = uidKey(entity.uid);
      if (deleted) tx.del('entities', key);
      else tx.put('entities', key, entity);
      const fields: Record<string, unknown> = { kind: 'entity', uid: entity.uid, source, entities_version: version };
      if (deleted) fields.deleted = true;
      else Object.assign(fields, { attrs: entity.attrs, parents: entity.parents });
      records.push(tx.append(fields as { kind: string }).seq);
    }
    return {
      records,
      version,
      commit: () => {
        this.byKey.clear();
        for (const [k, v] of next) this.byKey.set(k, v);
        this.currentVersion = version;
      },
    };
  }
}
