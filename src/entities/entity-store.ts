/**
 * The trusted entity store: the only source of Cedar entities (docs/protocol.md §2, §5). Persisted in the
 * store's `entities` table; held in memory for evaluation. Every change goes through `stage()` inside a
 * store write (with its `entity` ledger record) and becomes visible here only after that write commits.
 *
 * On a shared store (replicas, docs/protocol.md §9) other processes change entities too: every change also
 * writes `meta/entities_version` in its transaction, and `checkFresh(tx)` (inside a write, under the
 * store's lock) throws StaleEntities when that version is not the one held here; the caller reloads
 * (`reload()`) and evaluates again.
 */
import { subjectDigest } from '../approvals/approvals.js';
import { entitiesVersionOf, type EntityJson, type EntitySource } from '../policy/entities.js';
import type { LedgerStore, WriteTx } from '../store/types.js';
import { jcs } from '../util/canonical.js';
import { uidKey } from '../util/uid.js';

/** The meta row holding the entities version on a shared store. */
export const ENTITIES_VERSION_KEY = 'entities_version';

/**
 * The meta row counting the changes of one entity's record (its subject revision, approvals.ts
 * subjectDigest): moved in the transaction of every change that alters the record, never moved back.
 * Read from the store, not from memory, so a replica that never saw a change in between still sees it.
 */
export function subjectRevisionKey(key: string): string {
  return `subject_revision:${key}`;
}

/** Thrown inside a write when another replica changed the entities since they were loaded here. */
export class StaleEntities extends Error {}

export class EntityStore implements EntitySource {
  private readonly byKey = new Map<string, EntityJson>();
  private currentVersion: string;
  /** Told after every change of the entities held here (the HTTP front threads keep copies, src/front/). */
  private readonly listeners: Array<() => void> = [];

  constructor(private readonly store: LedgerStore) {
    this.currentVersion = entitiesVersionOf([]);
  }

  /** Loads every entity from the store (at start; on a shared store again whenever they moved). */
  async reload(): Promise<void> {
    const loaded = new Map<string, EntityJson>();
    const all = this.store.entries<EntityJson>('entities');
    if (Symbol.asyncIterator in all) for await (const [key, entity] of all) loaded.set(key, entity);
    else for (const [key, entity] of all) loaded.set(key, entity);
    this.byKey.clear();
    for (const [k, v] of loaded) this.byKey.set(k, v);
    this.currentVersion = entitiesVersionOf([...this.byKey.values()]);
    this.changed();
  }

  /** Calls `listener` after every change of the entities held here. */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }

  /** Shared store only: reloads when the stored entities version is not the one held here. */
  async refresh(): Promise<void> {
    if (!this.store.shared) return;
    const stored = await this.store.get<string>('meta', ENTITIES_VERSION_KEY);
    if (stored !== undefined && stored !== this.currentVersion) await this.reload();
  }

  /** Inside a write: throws StaleEntities when another replica moved the entities (shared store only). */
  checkFresh(tx: WriteTx): void {
    if (!this.store.shared) return;
    const stored = tx.get<string>('meta', ENTITIES_VERSION_KEY);
    if (stored !== undefined && stored !== this.currentVersion) throw new StaleEntities();
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

  /** The digest an approval of `key` as subject binds now (approvals.ts subjectDigest). */
  async approvalDigest(key: string): Promise<string> {
    const revision = await this.store.get<number>('meta', subjectRevisionKey(key));
    return subjectDigest(this.byKey.get(key), revision ?? 0);
  }

  /** The same, inside a write (under the store's lock: no change can come in between). */
  approvalDigestIn(tx: WriteTx, key: string): string {
    return subjectDigest(this.byKey.get(key), tx.get<number>('meta', subjectRevisionKey(key)) ?? 0);
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
    this.checkFresh(tx);
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
    // Every record this batch changes (net: a batch is atomic) moves its subject revision.
    for (const key of new Set(changes.map((c) => uidKey(c.entity.uid)))) {
      if (subjectDigest(this.byKey.get(key)) !== subjectDigest(next.get(key))) {
        tx.put('meta', subjectRevisionKey(key), (tx.get<number>('meta', subjectRevisionKey(key)) ?? 0) + 1);
      }
    }
    if (this.store.shared) tx.put('meta', ENTITIES_VERSION_KEY, version);
    return {
      records,
      version,
      commit: () => {
        this.byKey.clear();
        for (const [k, v] of next) this.byKey.set(k, v);
        this.currentVersion = version;
        this.changed();
      },
    };
  }
}
