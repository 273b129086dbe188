/**
 * The trusted entities held in memory for evaluation (EntityCache): the only source of Cedar entities
 * (docs/protocol.md §2, §5). The store's `entities` table is what they are a cache of. Every change goes
 * through `stage()` inside a store write (with its `entity` ledger record) and becomes visible here only
 * after that write commits.
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
import { isTableKey, MAX_TABLE_KEY_BYTES } from '../store/seal.js';
import { WritError } from '../errors.js';

/** The meta row holding the entities version on a shared store. */
export const ENTITIES_VERSION_KEY = 'entities_version';

/**
 * The meta row holding the entities of `<policy_dir>/entities.json` as last applied to this store. An
 * edit of the file is applied as what changed in the file since (src/pdp/policy-reload.ts), once
 * per store: not again by a second replica (which would undo an admin change made in between), and not
 * over admin changes to entities the edit did not touch.
 */
export const ENTITIES_FILE_KEY = 'entities_file';

/**
 * The changes that take the store from the file as applied (`applied`) to the file as it is now
 * (`file`): the entities the edit added or changed, and the removal of those it dropped that the store
 * still holds (`holds`). With nothing applied yet, the file seeds what the store does not hold.
 */
export function entitiesFileChanges(
  applied: EntityJson[] | undefined,
  file: EntityJson[],
  holds: (key: string) => EntityJson | undefined,
): Array<{ entity: EntityJson; deleted?: boolean }> {
  if (applied === undefined) return file.filter((e) => holds(uidKey(e.uid)) === undefined).map((entity) => ({ entity }));
  const before = new Map(applied.map((e) => [uidKey(e.uid), jcs(e)]));
  const now = new Set(file.map((e) => uidKey(e.uid)));
  const changes: Array<{ entity: EntityJson; deleted?: boolean }> = [];
  for (const e of file) {
    const key = uidKey(e.uid);
    const text = jcs(e);
    // Changed by the edit, and not already what the store holds (an admin may have made it so).
    if (before.get(key) !== text && jcs(holds(key) ?? null) !== text) changes.push({ entity: e });
  }
  for (const e of applied) if (!now.has(uidKey(e.uid)) && holds(uidKey(e.uid)) !== undefined) changes.push({ entity: e, deleted: true });
  return changes;
}

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

/**
 * Thrown inside a write on the embedded store while an entity change staged here is not durable yet: a
 * change staged now would start from the entities as they were before it (and be overwritten by it once
 * both commit), and an approval would bind the subject's record from before it with the revision after
 * it. The caller waits until the change lands (`settle()`) and runs again.
 */
export class EntitiesUnsettled extends StaleEntities {}

/** The store's entities in memory, versioned, in step with the store (see the top of this file). */
export class EntityCache implements EntitySource {
  private readonly byKey = new Map<string, EntityJson>();
  private currentVersion: string;
  /** Told after every change of the entities held here (the HTTP front threads keep copies, src/front/). */
  private readonly listeners: Array<() => void> = [];
  /**
   * Changes staged in a write that is not durable yet (embedded store only). LMDB commits writes in
   * batches (group commit): a decision whose write is queued behind a staged change, in the same batch
   * or the next, would otherwise be recorded after that change's `entity` record while it was evaluated
   * without it. Such a write sees `settled` false, and its caller waits (`settle()`) and evaluates again,
   * so a record never names an entities_version older than an entity record before it.
   */
  private readonly unsettled = new Set<object>();
  private settleWaiters: Array<() => void> = [];
  /** Decisions holding off new entity changes on this process (see `hold()`). */
  private holds = 0;
  private unheldWaiters: Array<() => void> = [];

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

  /** Inside a write that reads the entities held here: throws EntitiesUnsettled while a change is landing. */
  checkSettled(): void {
    if (!this.settled) throw new EntitiesUnsettled();
  }

  /** False while an entity change is staged in a write not yet durable (see `unsettled`). */
  get settled(): boolean {
    return this.unsettled.size === 0;
  }

  /** Resolves once no entity change is staged and not yet durable (committed or dropped). */
  settle(): Promise<void> {
    if (this.unsettled.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.settleWaiters.push(resolve));
  }

  /**
   * Holds off new entity changes made through this process until the returned function is called. A
   * decision or evaluation whose write lost twice to an entity change staged meanwhile takes one, so a
   * steady stream of admin updates cannot starve it (each would otherwise land between its evaluation
   * and its write, until it gave up). Changes already staged still land first (`settle()`).
   */
  hold(): () => void {
    this.holds++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.holds > 0) return;
      const waiters = this.unheldWaiters;
      this.unheldWaiters = [];
      for (const w of waiters) w();
    };
  }

  /**
   * Runs `attempts` (a decision's or evaluation's retry loop), which calls `hold` once it wants entity
   * changes held off (the first call takes the hold, later calls keep it); the hold ends with the run.
   */
  async withHoldOnDemand<T>(attempts: (hold: () => void) => Promise<T>): Promise<T> {
    let release: (() => void) | undefined;
    try {
      return await attempts(() => void (release ??= this.hold()));
    } finally {
      release?.();
    }
  }

  /** Resolves once no decision holds off entity changes (an entity writer awaits it before staging). */
  async unheld(): Promise<void> {
    while (this.holds > 0) await new Promise<void>((resolve) => this.unheldWaiters.push(resolve));
  }

  private release(token: object): void {
    if (!this.unsettled.delete(token) || this.unsettled.size > 0) return;
    const waiters = this.settleWaiters;
    this.settleWaiters = [];
    for (const w of waiters) w();
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
    this.checkSettled();
    return subjectDigest(this.byKey.get(key), tx.get<number>('meta', subjectRevisionKey(key)) ?? 0);
  }

  /**
   * Stages upserts/deletions in a write tx, ledgering each as an `entity` record that carries the
   * entities_version it produces. Returns `commit`, to be called once the write is durable, and `abort`,
   * to be called if the write failed: one of the two must be called (until then `settled` is false).
   */
  stage(
    tx: WriteTx,
    changes: Array<{ entity: EntityJson; deleted?: boolean }>,
    source: 'api' | 'file',
    callerFields: Record<string, unknown> = {},
  ): { records: number[]; version: string; commit(): void; abort(): void } {
    this.checkFresh(tx);
    // One change in flight at a time on the embedded store: the next starts from this one's result.
    this.checkSettled();
    for (const { entity } of changes) {
      // Every key an entity is filed under must fit a table key (multi-byte ids can pass a length limit in
      // characters and not fit): bad input, refused before anything is written, not a store failure.
      const longestKey = subjectRevisionKey(uidKey(entity.uid));
      if (!isTableKey(longestKey)) {
        throw new WritError(
          'INVALID_REQUEST',
          `the entity uid ${entity.uid.type}::"…" is too long to store: its key would take ${Buffer.byteLength(longestKey, 'utf8')} bytes of UTF-8, at ` +
            `most ${MAX_TABLE_KEY_BYTES}`,
        );
      }
    }
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
      // A change through the API names who made it (§13, §17: callerFields); a file edit has no caller to name.
      const fields: Record<string, unknown> = { kind: 'entity', uid: entity.uid, source, entities_version: version, ...callerFields };
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
    // A shared store orders writes under its lock and reads the stored version in each (checkFresh).
    const token = {};
    if (!this.store.shared) this.unsettled.add(token);
    return {
      records,
      version,
      commit: () => {
        this.byKey.clear();
        for (const [k, v] of next) this.byKey.set(k, v);
        this.currentVersion = version;
        this.changed();
        this.release(token);
      },
      abort: () => this.release(token),
    };
  }
}
