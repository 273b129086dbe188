/**
 * The trusted entity store as it stood at any decision of a ledger export, rebuilt from the export's
 * `entity` records in seq order (policy replay, docs/protocol.md §12).
 *
 * Every change to the live store is one `entity` record (src/entities/entity-cache.ts `stage`): admin
 * PUTs (source `api`) and `<policy_dir>/entities.json` — seeded at first start and applied on every
 * edit (source `file`, deletions with `deleted: true`) — each carrying the `entities_version` the
 * change produced. A `policy` record names the files of a load, but not their content; the entity
 * records are what carry the seed file's entities, so replaying them alone rebuilds the store.
 *
 * Why an undo log: a decision is recorded with the `entities_version` it was evaluated against. Group
 * commit could put a decision's record just after an entity record it did not see (the entity change was
 * staged in the same batch, after the decision had been evaluated); writ now evaluates such a decision
 * again (entity-cache.ts `settled`), but ledgers written before hold such records. The version tells which state the
 * decision saw; the timeline keeps the last UNDO_WINDOW changes so it can hand out that earlier state
 * as an overlay without copying the store. Versions are content digests, so any state with the
 * recorded version is the state the decision saw.
 */
import { entitiesVersionOf, type EntityJson, type EntitySource } from '../policy/entities.js';
import { type Uid, uidKey } from '../util/uid.js';

/** How many recent entity changes can be undone to reach an earlier version. */
export const UNDO_WINDOW = 4096;

/** The version of an empty store: what decisions before any entity record were evaluated against. */
export const EMPTY_ENTITIES_VERSION = entitiesVersionOf([]);

interface Undo {
  key: string;
  /** The entity before the change; undefined when the change created it. */
  previous: EntityJson | undefined;
  /** The store's version before the change. */
  versionBefore: string;
}

/** An `entity` ledger record's fields that matter here. */
export interface EntityRecord {
  uid: Uid;
  attrs?: Record<string, unknown>;
  parents?: Uid[];
  deleted?: boolean;
  entities_version: string;
}

export class EntityTimeline {
  private readonly current = new Map<string, EntityJson>();
  private currentVersion = EMPTY_ENTITIES_VERSION;
  /** A ring of the last UNDO_WINDOW changes; `undoNext` is where the next one goes. */
  private readonly undo: Undo[] = [];
  private undoNext = 0;
  private readonly window: number;
  private readonly currentSource: EntitySource;

  constructor(window = UNDO_WINDOW) {
    this.window = window;
    const current = this.current;
    // The getter below is the source's, where `this` is the source: it reaches the timeline through `self`.
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const self = this;
    this.currentSource = {
      get: (key: string) => current.get(key),
      get version() {
        return self.currentVersion;
      },
    };
  }

  get version(): string {
    return this.currentVersion;
  }

  get size(): number {
    return this.current.size;
  }

  /** Applies one `entity` record (seq order). */
  apply(record: EntityRecord): void {
    const key = uidKey(record.uid);
    const entry: Undo = { key, previous: this.current.get(key), versionBefore: this.currentVersion };
    if (this.undo.length < this.window) this.undo.push(entry);
    else this.undo[this.undoNext] = entry;
    this.undoNext = (this.undoNext + 1) % this.window;
    if (record.deleted === true) this.current.delete(key);
    else this.current.set(key, { uid: { type: record.uid.type, id: record.uid.id }, attrs: record.attrs ?? {}, parents: record.parents ?? [] });
    this.currentVersion = record.entities_version;
  }

  /**
   * The store as it was at `version`: the current state when it has that version, else the current
   * state with the most recent changes undone back to the last point it had it. Undefined when the
   * version is not within the undo window (the caller then cannot replay that decision exactly).
   */
  at(version: string): EntitySource | undefined {
    if (version === this.currentVersion) return this.currentSource;
    const overlay = new Map<string, EntityJson | undefined>();
    const n = this.undo.length;
    for (let i = 1; i <= n; i++) {
      const entry = this.undo[(this.undoNext - i + n) % n]!;
      // The oldest undo of a key is the value before every later change: overwrite as we go back.
      overlay.set(entry.key, entry.previous);
      if (entry.versionBefore === version) {
        const current = this.current;
        return {
          get: (key: string) => (overlay.has(key) ? overlay.get(key) : current.get(key)),
          version,
        };
      }
    }
    return undefined;
  }

  /**
   * Every entity of the store as it was at `version` (tests and diagnostics: its entitiesVersionOf
   * must be `version`). Undefined when `at(version)` is.
   */
  entitiesAt(version: string): EntityJson[] | undefined {
    const source = this.at(version);
    if (source === undefined) return undefined;
    const keys = new Set(this.current.keys());
    for (const entry of this.undo) keys.add(entry.key);
    const out: EntityJson[] = [];
    for (const key of keys) {
      const entity = source.get(key);
      if (entity !== undefined) out.push(entity);
    }
    return out;
  }
}
