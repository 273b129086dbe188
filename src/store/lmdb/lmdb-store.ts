/**
 * The durable store of a data dir (docs/protocol.md §6): the hash-chained ledger, its
 * Merkle subtree nodes and indexes, and the state tables, in one LMDB environment (see layout.ts).
 *
 * Writes go through the group commit (machine/group-commit.ts): this store is the sole writer of its
 * data dir and reads synchronously, so a callback runs at once over the committed state plus every write
 * queued but not yet durable (seqs follow the order of the calls), and one batch at a time is committed
 * here as a single LMDB transaction. If a commit fails, that batch and every batch built on top of it
 * reject with STORE_UNAVAILABLE, and the head is read from disk again: LMDB commits are atomic, so the
 * disk holds exactly the batches that committed.
 */
import { mkdirSync } from 'node:fs';
import { WritError } from '../../errors.js';
import { uidKey } from '../../util/uid.js';
import type { LedgerRecord } from '../../ledger/record.js';
import { checkSubtreeRange, readNodes, type SubtreeReader } from '../../ledger/merkle/tree.js';
import { lockDataDir, type DirLock } from '../lock.js';
import {
  appendRecord,
  correlationMatches,
  correlationTerm,
  FORMAT_KEY,
  INDEXES,
  indexTermsOf,
  openStoreDbs,
  settleCommitError,
  STORE_FORMATS,
  TABLES,
  type IndexKey,
  type IndexName,
  type StoreDbs,
  type StoreFormat,
  type Table,
} from '../layout.js';
import { LedgerProofs } from '../proofs.js';
import { checkIntegrity, DEFAULT_TAIL_CHECK, latestOfKind, readHead, recordsOfKind, storedReader } from './integrity.js';
import { GroupCommit, type Backend, type FaultHooks, type StoreStats } from '../machine/group-commit.js';
import type { PendingRecord, ReadView, Writes } from '../machine/overlay.js';
import { indexTerm, isTableKey } from '../seal.js';
import type { LedgerStore, RecordQuery, WriteOptions, WriteTx } from '../types.js';

export type { Table } from '../layout.js';
export type { AppendedRecord, WriteTx } from '../types.js';
export { indexTerm } from '../seal.js';
export type { FaultHooks, StoreStats } from '../machine/group-commit.js';

/** An appended record until its batch commits: its text and its index entries. */
interface LmdbRecord extends PendingRecord {
  index: Array<[IndexName, IndexKey]>;
}

export interface LmdbStoreOptions {
  dataDir: string;
  /** 'sync' (default): each commit is made synchronously on the calling thread and fsync'd in the
   *  commit. 'flushed': commits run on lmdb-js's writer thread, overlap their fsync, and the store waits
   *  for the flush before acknowledging. Both acknowledge only durable writes. */
  durability?: 'sync' | 'flushed';
  faults?: FaultHooks;
  mapSizeBytes?: number;
  /** A write not durable within this time rejects with STORE_UNAVAILABLE (default 5000 ms). */
  writeTimeoutMs?: number;
  /** Records re-hashed at the end of the chain on open (default 1000). */
  tailCheck?: number;
  /** The on-disk format of a new store (layout.ts; default plain, '1'). An existing store keeps its own. */
  format?: StoreFormat;
}

const DEFAULT_WRITE_TIMEOUT_MS = 5000;
const MAX_PAGE = 1000;
/**
 * The index work one filtered listRecords call may do before it answers a short page, in index steps
 * (≈0.5 µs each here; a seek costs SEEK_COST of them): about 10 ms, since it runs on the writer's thread.
 */
const LIST_WORK_BUDGET = 20_000;
const SEEK_COST = 14;
/** Sequential steps an index cursor takes towards a target before it seeks instead. */
const STEPS_BEFORE_SEEK = 16;

/**
 * One index term's seqs, in order, for the leapfrog of listRecords: it walks forward entry by entry
 * when the target is near and re-seeks when it is far, charging its work to a shared budget.
 */
class IndexCursor {
  #iterator: Iterator<unknown> | undefined;
  #current: number | undefined;
  #done = false;

  constructor(
    private readonly db: StoreDbs['indexes'][IndexName],
    private readonly term: string,
    private readonly end: number,
    private readonly budget: { left: number },
  ) {}

  /** The least seq ≥ target under the term, or undefined when there is none. */
  advanceTo(target: number): number | undefined {
    if (this.#done) return undefined;
    if (this.#current !== undefined && this.#current >= target) return this.#current;
    if (this.#iterator !== undefined) {
      for (let step = 0; step < STEPS_BEFORE_SEEK; step++) {
        if (!this.#step()) return undefined;
        if (this.#current! >= target) return this.#current;
      }
    }
    this.close();
    this.budget.left -= SEEK_COST;
    this.#iterator = this.db.getKeys({ start: [this.term, target], end: [this.term, this.end] })[Symbol.iterator]();
    return this.#step() ? this.#current : undefined;
  }

  #step(): boolean {
    this.budget.left--;
    const next = this.#iterator!.next();
    if (next.done) {
      this.#done = true;
      this.close();
      return false;
    }
    this.#current = (next.value as [string, number])[1];
    return true;
  }

  close(): void {
    this.#iterator?.return?.();
    this.#iterator = undefined;
  }
}

function unavailable(message: string, cause?: unknown): WritError {
  return new WritError('STORE_UNAVAILABLE', message, cause === undefined ? {} : { cause });
}

export class LmdbStore implements LedgerStore {
  readonly kind = 'lmdb' as const;
  readonly shared = false;
  readonly dataDir: string;
  readonly #dbs: StoreDbs;
  readonly #lock: DirLock;
  readonly #durability: 'sync' | 'flushed';
  readonly #faults: FaultHooks | undefined;
  readonly #releaseOnExit: () => void;
  #committedSize: number;
  #committedHead: string;
  #closed = false;
  readonly #writes: GroupCommit<LmdbRecord>;
  readonly #proofs = new LedgerProofs<false>({
    committedSize: () => this.#committedSize,
    nodes: (ids) => readNodes(this.#reader(), ids),
  });

  private constructor(o: LmdbStoreOptions, dbs: StoreDbs, lock: DirLock, head: { size: number; head: string }) {
    this.dataDir = o.dataDir;
    this.#dbs = dbs;
    this.#lock = lock;
    this.#durability = o.durability ?? 'sync';
    this.#faults = o.faults;
    this.#committedSize = head.size;
    this.#committedHead = head.head;
    this.#writes = new GroupCommit(this.#backend(), { writeTimeoutMs: o.writeTimeoutMs ?? DEFAULT_WRITE_TIMEOUT_MS, faults: o.faults });
    this.#releaseOnExit = () => lock.release();
    process.on('exit', this.#releaseOnExit);
  }

  /**
   * Opens the store of a data dir (created when absent), holding its exclusive lock: a second live
   * process gets WritError STORE_LOCKED `data dir D is in use by pid N`. Re-hashes the chain tail and
   * checks the latest checkpoint: a corrupt store gives WritError STORE_CORRUPT with details {seq}.
   */
  static async open(o: LmdbStoreOptions): Promise<LmdbStore> {
    try {
      mkdirSync(o.dataDir, { recursive: true, mode: 0o700 });
    } catch (e) {
      throw unavailable(`cannot create data dir ${o.dataDir}: ${(e as Error).message}`, e);
    }
    const lock = await lockDataDir(o.dataDir);
    let dbs: StoreDbs | undefined;
    try {
      dbs = openStoreDbs(o.dataDir, {
        ...(o.durability ? { durability: o.durability } : {}),
        ...(o.mapSizeBytes !== undefined ? { mapSizeBytes: o.mapSizeBytes } : {}),
        ...(o.format ? { newFormat: o.format } : {}),
      });
      const format = dbs.internal.get(FORMAT_KEY);
      if (format === undefined) {
        if (readHead(dbs).size > 0) throw new WritError('STORE_CORRUPT', `store in ${o.dataDir} has records but no format marker`, { details: { seq: null } });
        await dbs.internal.put(FORMAT_KEY, dbs.format);
        await dbs.env.flushed;
      } else if (!STORE_FORMATS.includes(format)) {
        throw new WritError('STORE_CORRUPT', `store in ${o.dataDir} has format ${format}; this writ reads formats ${STORE_FORMATS.join(' and ')}`, {
          details: { seq: null },
        });
      }
      const head = checkIntegrity(dbs, o.dataDir, o.tailCheck ?? DEFAULT_TAIL_CHECK);
      return new LmdbStore(o, dbs, lock, head);
    } catch (e) {
      if (dbs) await dbs.env.close().catch(() => undefined);
      lock.release();
      throw e;
    }
  }

  // ── writing ──

  /**
   * Atomic and durable: `fn` runs synchronously inside one transaction; the promise resolves with its
   * result only after the commit is fsync'd. Concurrent writes group-commit (machine/group-commit.ts).
   * If `fn` throws, the error propagates and nothing of it is written. A failed or timed-out commit
   * rejects with STORE_UNAVAILABLE (after a timeout the write's fate is unknown until the next read).
   */
  write<T>(fn: (tx: WriteTx) => T, opts: WriteOptions = {}): Promise<T> {
    return this.#writes.write(fn, opts);
  }

  onWritten(listener: (pendingSize: number) => void): void {
    this.#writes.onWritten(listener);
  }

  /**
   * The store as the group commit sees it: the sole writer of its data dir with synchronous reads, so
   * batches stack over the ones not yet durable and callbacks run at once.
   */
  #backend(): Backend<LmdbRecord> {
    const dbs = this.#dbs;
    const base: ReadView = {
      row: (table, key) => dbs.tables[table].get(key) ?? null,
      node: (level, index) => {
        const v = dbs.merkle.get([level, index]);
        if (v === undefined) throw new Error(`merkle node (${level}, ${index}) is missing`);
        return Buffer.from(v);
      },
    };
    return {
      stacks: true,
      begin: () => ({
        size: this.#committedSize,
        head: this.#committedHead,
        base,
        commit: (writes, end, labels) => this.#commit(writes, end, labels),
      }),
      pendingRecord: (seq, text, body) => ({
        seq,
        text,
        index: indexTermsOf(body, uidKey).map(([name, value]): [IndexName, IndexKey] => [name, [indexTerm(value), seq]]),
      }),
      commitError: (e) => unavailable(`store commit failed: ${(e as Error)?.message ?? String(e)}`, e),
    };
  }

  /**
   * Commits one batch as one LMDB transaction. LMDB commits are atomic: after a failure the disk holds
   * exactly the batches that committed before, and the head is read from it again.
   */
  #commit(w: Writes<LmdbRecord>, end: { size: number; head: string }, labels: Array<string | undefined>): void | Promise<void> {
    const apply = (): void => {
      const d = this.#dbs;
      // One sub-database after the other, not interleaved (a record, its index entries, the next
      // record…): interleaved, the same batch leaves LMDB more scattered dirty pages, each written on
      // its own before the fsync, on the writer's thread (bench/RESULTS.md, "The redesign").
      for (const r of w.records) appendRecord(d, r.seq, r.text);
      // Inside the transaction lmdb-js writes at once and throws on failure: the promises these puts
      // return only report ifVersion conditions, which none of them sets.
      for (const n of w.nodes.values()) void d.merkle.put([n.level, n.index], n.hash);
      for (const name of INDEXES) for (const r of w.records) for (const [n, key] of r.index) if (n === name) void d.indexes[name].put(key, '');
      for (const table of TABLES) {
        for (const r of w.rows.values()) {
          if (r.table !== table) continue;
          if (r.value === null) void d.tables[table].remove(r.key);
          else void d.tables[table].put(r.key, r.value);
        }
      }
      if (w.probe !== undefined) void d.internal.put('probe', w.probe);
      // After the puts, so an injected failure also proves that a half-applied batch is rolled back.
      this.#faults?.insideCommit?.(labels);
    };
    const committed = (): void => {
      this.#committedSize = end.size;
      this.#committedHead = end.head;
      this.#dbs.env.resetReadTxn();
    };
    const failed = (e: unknown): never => {
      settleCommitError(e);
      try {
        this.#dbs.env.resetReadTxn();
        const head = readHead(this.#dbs);
        this.#committedSize = head.size;
        this.#committedHead = head.head;
      } catch {
        // keep the last known committed head
      }
      throw e;
    };
    if (this.#durability === 'flushed') {
      return (async () => {
        await this.#dbs.env.childTransaction(apply);
        await this.#dbs.env.flushed;
      })().then(committed, failed);
    }
    try {
      // Committed here, synchronously: LMDB's begin, the puts, the commit and its fsync, with no hand-off
      // to lmdb-js's writer thread and back (two thread wake-ups per commit, most of a sequential
      // request's latency on a busy machine). Writes that arrive meanwhile wait in the event loop's
      // queue and form the next batch.
      this.#dbs.env.transactionSync(apply);
    } catch (e) {
      failed(e);
    }
    committed();
  }

  get location(): string {
    return this.dataDir;
  }

  get where(): string {
    return `data dir ${this.dataDir}`;
  }

  // ── reading committed state ──

  get<T>(table: Table, key: string): T | undefined {
    if (!isTableKey(key)) return undefined;
    const v = this.#dbs.tables[table].get(key);
    return v === undefined ? undefined : (JSON.parse(v) as T);
  }

  /** Entries of a table in key order (UTF-8 byte order), those whose key starts with `prefix`. */
  *entries<T>(table: Table, prefix = ''): Iterable<[string, T]> {
    for (const { key, value } of this.#dbs.tables[table].getRange({ start: prefix })) {
      if (!key.startsWith(prefix)) return;
      yield [key, JSON.parse(value) as T];
    }
  }

  /** Committed record count. */
  size(): number {
    return this.#committedSize;
  }

  knownSize(): number {
    return this.#committedSize;
  }

  /** Hash of the last committed record (ZERO_HASH when empty). */
  head(): string {
    return this.#committedHead;
  }

  getRecord(seq: number): LedgerRecord | undefined {
    if (!Number.isSafeInteger(seq) || seq < 0 || seq >= this.#committedSize) return undefined;
    const text = this.#dbs.records.get(seq);
    return text === undefined ? undefined : (JSON.parse(text) as LedgerRecord);
  }

  /**
   * A page of records in seq order from `from`, at most `limit` (1..1000, default 100), filtered by
   * kind, actor (uidKey) and execution_id — driven by the indexes, never a full scan. `next` is the
   * `from` of the next page, null when there is none.
   *
   * Several filters intersect their indexes by leapfrogging (each index seeks to the others' next
   * seq), so actor + kind costs about the smaller index, not the larger one read record by record.
   * This runs on the thread that writes the ledger, so one call stops after LIST_SEEK_BUDGET seeks:
   * the page may then hold fewer than `limit` records (even none) with `next` set — keep following it.
   */
  listRecords(q: RecordQuery): { records: LedgerRecord[]; next: number | null } {
    const from = q.from ?? 0;
    const limit = q.limit ?? 100;
    if (!Number.isSafeInteger(from) || from < 0) throw new WritError('INVALID_REQUEST', 'from must be a non-negative integer');
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE) throw new WritError('INVALID_REQUEST', `limit must be 1..${MAX_PAGE}`);
    const end = this.#committedSize;
    // An index term may be a digest of a long value: the record itself is checked too.
    const matches = (r: LedgerRecord): boolean =>
      (q.kind === undefined || r.kind === q.kind) &&
      (q.execution_id === undefined || r.execution_id === q.execution_id) &&
      (q.actor === undefined || actorKeyOf(r) === q.actor) &&
      correlationMatches(r, q);
    const filters: Array<[IndexName, string]> = [];
    if (q.task_id !== undefined) filters.push(['idx_corr', indexTerm(correlationTerm('task_id', q.task_id))]);
    if (q.trace_id !== undefined) filters.push(['idx_corr', indexTerm(correlationTerm('trace_id', q.trace_id))]);
    // The most selective first: an execution has a handful of records, an actor or a kind many.
    if (q.execution_id !== undefined) filters.push(['idx_exec', indexTerm(q.execution_id)]);
    if (q.actor !== undefined) filters.push(['idx_actor', indexTerm(q.actor)]);
    if (q.kind !== undefined) filters.push(['idx_kind', indexTerm(q.kind)]);
    const records: LedgerRecord[] = [];
    if (filters.length <= 1) {
      const seqs = filters.length === 0 ? this.#dbs.records.getKeys({ start: from, end }) : this.#indexSeqs(filters[0]![0], filters[0]![1], from, end);
      for (const seq of seqs) {
        const r = this.getRecord(seq);
        if (!r || !matches(r)) continue;
        if (records.length === limit) return { records, next: seq };
        records.push(r);
      }
      return { records, next: null };
    }
    const budget = { left: LIST_WORK_BUDGET };
    const cursors = filters.map(([name, term]) => new IndexCursor(this.#dbs.indexes[name], term, end, budget));
    try {
      let candidate = from;
      for (;;) {
        // Leapfrog: the least seq ≥ candidate present in every index.
        let agreeing = 0;
        for (let i = 0; agreeing < cursors.length; i = (i + 1) % cursors.length) {
          if (budget.left <= 0) return { records, next: candidate };
          const seq = cursors[i]!.advanceTo(candidate);
          if (seq === undefined) return { records, next: null };
          if (seq === candidate) agreeing++;
          else {
            candidate = seq;
            agreeing = 1;
          }
        }
        const r = this.getRecord(candidate);
        if (r && matches(r)) {
          if (records.length === limit) return { records, next: candidate };
          records.push(r);
        }
        candidate++;
      }
    } finally {
      for (const c of cursors) c.close();
    }
  }

  *#indexSeqs(name: IndexName, term: string, from: number, end: number): Iterable<number> {
    for (const key of this.#dbs.indexes[name].getKeys({ start: [term, from], end: [term, end] })) yield key[1];
  }

  /** The JCS text of each record with from ≤ seq < to (default: all committed), in seq order. */
  *exportLines(from = 0, to = this.#committedSize): Iterable<string> {
    const end = Math.min(to, this.#committedSize);
    if (from >= end) return;
    for (const { value } of this.#dbs.records.getRange({ start: from, end })) yield value;
  }

  /** Merkle root of the first `size` records (default: all committed), 'sha256:<hex>'. */
  root(size?: number): string {
    return this.#proofs.root(size);
  }

  inclusionProof(seq: number, size: number): string[] {
    return this.#proofs.inclusionProof(seq, size);
  }

  consistencyProof(from: number, to: number): string[] {
    return this.#proofs.consistencyProof(from, to);
  }

  /** Complete-subtree hashes of one height (a C2SP tile's). */
  subtreeHashes(level: number, from: number, count: number): Buffer[] {
    checkSubtreeRange(level, from, count, this.#committedSize);
    const r = this.#reader();
    return Array.from({ length: count }, (_, i) => r.subtree(level, from + i));
  }

  #reader(): SubtreeReader {
    return storedReader(this.#dbs);
  }

  /** The latest committed checkpoint record. */
  latestCheckpoint(): LedgerRecord | undefined {
    const cp = latestOfKind(this.#dbs, 'checkpoint');
    if (cp && cp.seq < this.#committedSize) return cp;
    if (!cp) return undefined;
    // Visible but not yet acknowledged ('flushed' durability): the one before it.
    for (const key of this.#dbs.indexes.idx_kind.getKeys({
      start: ['checkpoint', this.#committedSize - 1],
      end: ['checkpoint', -1],
      reverse: true,
      limit: 1,
    })) {
      return this.getRecord(key[1]);
    }
    return undefined;
  }

  /** Public keys of the ledger's key records, in seq order. */
  keys(): Array<{ key_id: string; public_key: string }> {
    const out: Array<{ key_id: string; public_key: string }> = [];
    for (const r of recordsOfKind(this.#dbs, 'key')) {
      if (r.seq < this.#committedSize) out.push({ key_id: String(r.key_id), public_key: String(r.public_key) });
    }
    return out;
  }

  /** Whether a durable write succeeds now (for /readyz): a tiny write through the normal commit path. */
  writable(): Promise<boolean> {
    return this.#closed ? Promise.resolve(false) : this.#writes.writable();
  }

  stats(): StoreStats {
    return this.#writes.stats();
  }

  /** Waits for queued writes, closes LMDB and releases the data dir lock. Later writes reject. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#writes.close();
    try {
      await this.#dbs.env.close();
    } finally {
      process.off('exit', this.#releaseOnExit);
      this.#lock.release();
    }
  }
}

function actorKeyOf(r: LedgerRecord): string | undefined {
  const a = r.actor as { type?: unknown; id?: unknown } | null | undefined;
  return a && typeof a === 'object' && typeof a.type === 'string' && typeof a.id === 'string' ? uidKey({ type: a.type, id: a.id }) : undefined;
}
