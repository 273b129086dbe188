/**
 * The durable store of a data dir (docs/protocol.md §6): the hash-chained ledger, its
 * Merkle subtree nodes and indexes, and the state tables, in one LMDB environment (see layout.ts).
 *
 * Writes: `write(fn)` runs `fn` synchronously against a private transaction buffer layered over the
 * committed state plus every write that is queued but not yet durable, so concurrent writers see
 * one serial history (seqs are assigned in the order callbacks run). When `fn` returns, its buffer
 * joins the open batch; one batch at a time is committed as a single LMDB transaction (group commit:
 * every write that arrived while the previous commit was being fsync'd shares the next fsync). A write
 * resolves only once its batch is durable. If `fn` throws, its buffer is dropped: nothing of it is
 * written and no other write is affected. If a commit fails, that batch and every batch queued
 * behind it (built on top of it) reject with STORE_UNAVAILABLE, and the head is reloaded from disk —
 * LMDB commits are atomic, so the disk holds exactly the batches that committed.
 */
import { mkdirSync } from 'node:fs';
import { WritError } from '../errors.js';
import { uidKey } from '../util/uid.js';
import type { LedgerRecord } from '../ledger/record.js';
import { bytesToHash } from '../ledger/merkle/hasher.js';
import { checkSubtreeRange, readNodes, rootAt, type SubtreeReader } from '../ledger/merkle/tree.js';
import { lockDataDir, type DirLock } from './lock.js';
import {
  appendRecord,
  correlationMatches,
  correlationTerm,
  FORMAT_KEY,
  indexTermsOf,
  openStoreDbs,
  settleCommitError,
  STORE_FORMATS,
  type IndexKey,
  type IndexName,
  type StoreDbs,
  type StoreFormat,
  type Table,
} from './layout.js';
import { LedgerProofs } from './proofs.js';
import { checkIntegrity, DEFAULT_TAIL_CHECK, latestOfKind, readHead, recordsOfKind, storedReader } from './integrity.js';

import { appendedRecord, indexTerm, isTableKey, MAX_TABLE_KEY_BYTES, sealNextRecord, type PresealedMembers } from './seal.js';
import type { AppendedRecord, LedgerStore, RecordQuery, WriteOptions, WriteTx } from './types.js';

export type { Table } from './layout.js';
export type { AppendedRecord, WriteTx } from './types.js';
export { indexTerm } from './seal.js';

export interface FaultHooks {
  /** Called before a write's callback runs and is committed; a throw (or rejection) fails that write
   *  with STORE_UNAVAILABLE and nothing of it is written. A slow promise simulates a stalled disk
   *  (the write times out after writeTimeoutMs). */
  beforeCommit?(label: string | undefined): void | Promise<void>;
  /** Called inside the LMDB transaction of a batch, with the labels of its writes; a throw aborts
   *  that commit as a real I/O failure would: the whole batch and every write queued behind it fail. */
  insideCommit?(labels: Array<string | undefined>): void;
}

export interface StoreOptions {
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
  /** The on-disk format of a new store (layout.ts; default the current one). An existing store keeps its own. */
  format?: StoreFormat;
}

export interface StoreStats {
  /** LMDB commits so far (each one fsync). */
  commits: number;
  /** Write callbacks committed so far (each write() that wrote something). */
  writes: number;
  /** Commits that failed. */
  failedCommits: number;
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

/** Writes buffered by one callback or one batch of callbacks, applied to LMDB together. */
interface Overlay {
  records: Map<number, string>;
  nodes: Map<string, { level: number; index: number; hash: Buffer }>;
  index: Array<[IndexName, IndexKey]>;
  tables: Map<Table, Map<string, string | null>>; // null: deleted
  internal: Map<string, string>;
}

function newOverlay(): Overlay {
  return { records: new Map(), nodes: new Map(), index: [], tables: new Map(), internal: new Map() };
}

function isEmpty(o: Overlay): boolean {
  return o.records.size === 0 && o.nodes.size === 0 && o.index.length === 0 && o.tables.size === 0 && o.internal.size === 0;
}

function nodeKey(level: number, index: number): string {
  return `${level}/${index}`;
}

interface Waiter {
  result: unknown;
  resolve(value: unknown): void;
  reject(e: unknown): void;
  timer: NodeJS.Timeout | undefined;
  settled: boolean;
}

interface Batch extends Overlay {
  endSize: number;
  endHead: string;
  waiters: Waiter[];
  /** 'open' takes more writes; 'submitted' is being committed; 'done' committed or failed. */
  state: 'open' | 'submitted' | 'done';
  writes: number;
  labels: Array<string | undefined>;
}

function unavailable(message: string, cause?: unknown): WritError {
  return new WritError('STORE_UNAVAILABLE', message, cause === undefined ? {} : { cause });
}

function settleWaiter(w: Waiter, ok: boolean, value: unknown): void {
  if (w.settled) return;
  w.settled = true;
  if (w.timer) clearTimeout(w.timer);
  if (ok) w.resolve(value);
  else w.reject(value);
}

export class Store implements LedgerStore {
  readonly kind = 'lmdb' as const;
  readonly shared = false;
  readonly dataDir: string;
  readonly #dbs: StoreDbs;
  readonly #lock: DirLock;
  readonly #durability: 'sync' | 'flushed';
  readonly #faults: FaultHooks | undefined;
  readonly #writeTimeoutMs: number;
  readonly #releaseOnExit: () => void;
  #committedSize: number;
  #committedHead: string;
  /** Queued batches, oldest first; only batches[0] can be 'submitted'. */
  #batches: Batch[] = [];
  #flushing = false;
  #flushScheduled = false;
  #closed = false;
  #idleWaiters: Array<() => void> = [];
  readonly #stats: StoreStats = { commits: 0, writes: 0, failedCommits: 0 };
  readonly #proofs = new LedgerProofs<false>({
    committedSize: () => this.#committedSize,
    nodes: (ids) => readNodes(this.#reader(), ids),
  });

  private constructor(o: StoreOptions, dbs: StoreDbs, lock: DirLock, head: { size: number; head: string }) {
    this.dataDir = o.dataDir;
    this.#dbs = dbs;
    this.#lock = lock;
    this.#durability = o.durability ?? 'sync';
    this.#faults = o.faults;
    this.#writeTimeoutMs = o.writeTimeoutMs ?? DEFAULT_WRITE_TIMEOUT_MS;
    this.#committedSize = head.size;
    this.#committedHead = head.head;
    this.#releaseOnExit = () => lock.release();
    process.on('exit', this.#releaseOnExit);
  }

  /**
   * Opens the store of a data dir (created when absent), holding its exclusive lock: a second live
   * process gets WritError STORE_LOCKED `data dir D is in use by pid N`. Re-hashes the chain tail and
   * checks the latest checkpoint: a corrupt store gives WritError STORE_CORRUPT with details {seq}.
   */
  static async open(o: StoreOptions): Promise<Store> {
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
      return new Store(o, dbs, lock, head);
    } catch (e) {
      if (dbs) await dbs.env.close().catch(() => undefined);
      lock.release();
      throw e;
    }
  }

  // ── writing ──

  /**
   * Atomic and durable: `fn` runs synchronously inside one transaction; the promise resolves with its
   * result only after the commit is fsync'd. Concurrent writes group-commit. If `fn` throws, the error
   * propagates and nothing of it is written. A failed or timed-out commit rejects with
   * STORE_UNAVAILABLE (after a timeout the write's fate is unknown until the next read).
   */
  async write<T>(fn: (tx: WriteTx) => T, opts: WriteOptions = {}): Promise<T> {
    if (this.#closed) throw unavailable('the store is closed');
    const deadline = Date.now() + this.#writeTimeoutMs;
    const hook = this.#faults?.beforeCommit;
    if (hook) {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          Promise.resolve().then(() => hook.call(this.#faults, opts.label)),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(unavailable(`store write timed out after ${this.#writeTimeoutMs} ms`)), this.#writeTimeoutMs);
          }),
        ]);
      } catch (e) {
        if (e instanceof WritError && e.code === 'STORE_UNAVAILABLE') throw e;
        throw unavailable(`store write failed: ${(e as Error)?.message ?? String(e)}`, e);
      } finally {
        clearTimeout(timer);
      }
      if (this.#closed) throw unavailable('the store is closed');
    }
    const tx = new BufferedTx(
      this.#pendingSize(),
      this.#pendingHead(),
      (t, k) => this.#pendingTable(t, k),
      (l, i) => this.#pendingNode(l, i),
    );
    const result = fn(tx);
    if (result !== null && typeof result === 'object' && typeof (result as { then?: unknown }).then === 'function') {
      throw new TypeError('Store.write callbacks must be synchronous');
    }
    if (isEmpty(tx.overlay)) {
      // Nothing to write, but what fn read may include writes not yet durable: answer after them.
      const last = this.#batches[this.#batches.length - 1];
      if (last) await this.#enqueue(newOverlay(), this.#pendingSize(), this.#pendingHead(), result, deadline, false);
      return result;
    }
    const durable = this.#enqueue(tx.overlay, tx.size(), tx.head(), result, deadline, true, opts.label);
    for (const listener of this.#writtenListeners) listener(tx.size());
    return (await durable) as T;
  }

  #writtenListeners: Array<(pendingSize: number) => void> = [];

  onWritten(listener: (pendingSize: number) => void): void {
    this.#writtenListeners.push(listener);
  }

  /** Joins the open batch (or opens one) and resolves when that batch is durable. */
  #enqueue(o: Overlay, endSize: number, endHead: string, result: unknown, deadline: number, counts: boolean, label?: string): Promise<unknown> {
    let batch = this.#batches[this.#batches.length - 1];
    if (batch?.state !== 'open') {
      batch = { ...newOverlay(), endSize, endHead, waiters: [], state: 'open', writes: 0, labels: [] };
      this.#batches.push(batch);
    }
    for (const [seq, text] of o.records) batch.records.set(seq, text);
    for (const [k, n] of o.nodes) batch.nodes.set(k, n);
    for (const e of o.index) batch.index.push(e);
    for (const [t, m] of o.tables) {
      let bm = batch.tables.get(t);
      if (!bm) batch.tables.set(t, (bm = new Map()));
      for (const [k, v] of m) bm.set(k, v);
    }
    for (const [k, v] of o.internal) batch.internal.set(k, v);
    batch.endSize = endSize;
    batch.endHead = endHead;
    if (counts) {
      batch.writes++;
      batch.labels.push(label);
    }
    const owner = batch;
    const promise = new Promise<unknown>((resolve, reject) => {
      const w: Waiter = { result, resolve, reject, timer: undefined, settled: false };
      w.timer = setTimeout(() => this.#timeout(owner, w), Math.max(0, deadline - Date.now()));
      owner.waiters.push(w);
    });
    this.#scheduleFlush();
    return promise;
  }

  #timeout(batch: Batch, w: Waiter): void {
    const err = unavailable(`store write timed out after ${this.#writeTimeoutMs} ms`);
    const i = this.#batches.indexOf(batch);
    if (batch.state === 'open' && i >= 0) {
      // Not handed to LMDB yet: drop it and everything queued behind it, so none of it lands.
      this.#failFrom(i, err);
    } else {
      // Already being committed: it may still land; this caller cannot wait any longer.
      settleWaiter(w, false, err);
    }
  }

  /** Rejects and drops batches[i..]; the pending head falls back to what is before them. */
  #failFrom(i: number, err: WritError): void {
    const dropped = this.#batches.splice(i);
    for (const b of dropped) {
      b.state = 'done';
      for (const w of b.waiters) settleWaiter(w, false, err);
    }
    this.#notifyIdle();
  }

  #scheduleFlush(): void {
    if (this.#flushing || this.#flushScheduled) return;
    this.#flushScheduled = true;
    // One turn of the event loop lets writes that arrive together share the commit.
    setImmediate(() => {
      this.#flushScheduled = false;
      void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    if (this.#flushing) return;
    const batch = this.#batches[0];
    if (!batch) return;
    this.#flushing = true;
    batch.state = 'submitted';
    try {
      if (this.#durability === 'sync') {
        // Committed here, synchronously: LMDB's begin, the puts, the commit and its fsync, with no hand-off
        // to lmdb-js's writer thread and back (two thread wake-ups per commit, most of a sequential
        // request's latency on a busy machine). Writes that arrive meanwhile wait in the event loop's
        // queue and form the next batch.
        this.#dbs.env.transactionSync(() => this.#apply(batch));
      } else {
        await this.#dbs.env.childTransaction(() => this.#apply(batch));
        await this.#dbs.env.flushed;
      }
      this.#stats.commits++;
      this.#stats.writes += batch.writes;
      this.#committedSize = batch.endSize;
      this.#committedHead = batch.endHead;
      this.#dbs.env.resetReadTxn();
      this.#batches.shift();
      batch.state = 'done';
      for (const w of batch.waiters) settleWaiter(w, true, w.result);
    } catch (e) {
      settleCommitError(e);
      this.#stats.failedCommits++;
      const i = this.#batches.indexOf(batch);
      const err = unavailable(`store commit failed: ${(e as Error)?.message ?? String(e)}`, e);
      if (i >= 0) this.#failFrom(i, err);
      for (const w of batch.waiters) settleWaiter(w, false, err);
      // LMDB commits are atomic: the disk holds exactly what committed before.
      try {
        this.#dbs.env.resetReadTxn();
        const head = readHead(this.#dbs);
        this.#committedSize = head.size;
        this.#committedHead = head.head;
      } catch {
        // keep the last known committed head
      }
    } finally {
      this.#flushing = false;
      // After a synchronous commit the next one waits a turn of the event loop: the answers of this
      // one go out first, and the writes that queued up during the fsync join the next batch.
      if (this.#batches.length > 0) {
        if (this.#durability === 'sync') this.#scheduleFlush();
        else void this.#flush();
      } else this.#notifyIdle();
    }
  }

  /** Runs inside the LMDB transaction: puts every buffered write of a batch. */
  #apply(b: Batch): void {
    const d = this.#dbs;
    for (const [seq, text] of b.records) appendRecord(d, seq, text);
    for (const n of b.nodes.values()) d.merkle.put([n.level, n.index], n.hash);
    for (const [name, key] of b.index) d.indexes[name].put(key, '');
    for (const [t, m] of b.tables) {
      for (const [k, v] of m) {
        if (v === null) d.tables[t].remove(k);
        else d.tables[t].put(k, v);
      }
    }
    for (const [k, v] of b.internal) d.internal.put(k, v);
    // After the puts, so an injected failure also proves that a half-applied batch is rolled back.
    this.#faults?.insideCommit?.(b.labels);
  }

  #notifyIdle(): void {
    if (this.#batches.length > 0 || this.#flushing) return;
    const ws = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const w of ws) w();
  }

  #pendingSize(): number {
    const last = this.#batches[this.#batches.length - 1];
    return last ? last.endSize : this.#committedSize;
  }

  #pendingHead(): string {
    const last = this.#batches[this.#batches.length - 1];
    return last ? last.endHead : this.#committedHead;
  }

  #pendingTable(t: Table, key: string): string | null | undefined {
    for (let i = this.#batches.length - 1; i >= 0; i--) {
      const v = this.#batches[i]!.tables.get(t)?.get(key);
      if (v !== undefined) return v;
    }
    return this.#dbs.tables[t].get(key);
  }

  #pendingNode(level: number, index: number): Buffer {
    const k = nodeKey(level, index);
    for (let i = this.#batches.length - 1; i >= 0; i--) {
      const n = this.#batches[i]!.nodes.get(k);
      if (n) return n.hash;
    }
    const v = this.#dbs.merkle.get([level, index]);
    if (v === undefined) throw new Error(`merkle node (${level}, ${index}) is missing`);
    return Buffer.from(v);
  }

  get location(): string {
    return this.dataDir;
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
      for (const seq of seqs as Iterable<number>) {
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
  async writable(): Promise<boolean> {
    if (this.#closed) return false;
    try {
      await this.write((tx) => (tx as BufferedTx).probe(new Date().toISOString()), { label: 'readyz' });
      return true;
    } catch {
      return false;
    }
  }

  stats(): StoreStats {
    return { ...this.#stats };
  }

  /** Waits for queued writes, closes LMDB and releases the data dir lock. Later writes reject. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#batches.length > 0 || this.#flushing) {
      await new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
    }
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

/** One write callback's view: its own buffer over the pending (queued, not yet durable) and committed state. */
class BufferedTx implements WriteTx {
  readonly overlay: Overlay = newOverlay();
  #size: number;
  #head: string;
  readonly #readTable: (t: Table, key: string) => string | null | undefined;
  readonly #readNode: (level: number, index: number) => Buffer;
  readonly #reader: SubtreeReader;

  constructor(size: number, head: string, readTable: (t: Table, key: string) => string | null | undefined, readNode: (level: number, index: number) => Buffer) {
    this.#size = size;
    this.#head = head;
    this.#readTable = readTable;
    this.#readNode = readNode;
    this.#reader = {
      subtree: (level, index) => this.overlay.nodes.get(nodeKey(level, index))?.hash ?? this.#readNode(level, index),
    };
  }

  append(fields: { kind: string } & Record<string, unknown>, presealed?: PresealedMembers): AppendedRecord {
    const seq = this.#size;
    const { body, hash, text, leaf, completed } = sealNextRecord(fields, seq, this.#head, this.#reader, presealed);
    this.overlay.records.set(seq, text);
    this.overlay.nodes.set(nodeKey(0, seq), { level: 0, index: seq, hash: leaf });
    for (const n of completed) this.overlay.nodes.set(nodeKey(n.level, n.index), n);
    for (const [name, value] of indexTermsOf(body, uidKey)) this.overlay.index.push([name, [indexTerm(value), seq]]);
    this.#size = seq + 1;
    this.#head = hash;
    return appendedRecord(seq, hash, text);
  }

  get<T>(table: Table, key: string): T | undefined {
    if (!isTableKey(key)) return undefined;
    const own = this.overlay.tables.get(table)?.get(key);
    const v = own !== undefined ? own : this.#readTable(table, key);
    return v === undefined || v === null ? undefined : (JSON.parse(v) as T);
  }

  put(table: Table, key: string, value: unknown): void {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError(`value for ${table}/${key} has no JSON form`);
    this.#table(table, key).set(key, text);
  }

  del(table: Table, key: string): void {
    this.#table(table, key).set(key, null);
  }

  #table(table: Table, key: string): Map<string, string | null> {
    if (!isTableKey(key)) {
      throw new TypeError(`table keys are non-empty strings of at most ${MAX_TABLE_KEY_BYTES} bytes`);
    }
    let m = this.overlay.tables.get(table);
    if (!m) this.overlay.tables.set(table, (m = new Map()));
    return m;
  }

  size(): number {
    return this.#size;
  }

  head(): string {
    return this.#head;
  }

  root(): string {
    return bytesToHash(rootAt(this.#size, this.#reader));
  }

  /** Readiness probe: one internal key, so the write goes through a real commit. */
  probe(at: string): void {
    this.overlay.internal.set('probe', at);
  }
}
