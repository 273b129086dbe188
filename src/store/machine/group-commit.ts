/**
 * The write side of a store, one code for both (docs/protocol.md §6, §9): `write(fn)` runs a callback
 * against an OverlayTx, the writes of the callbacks that arrive together form one batch, and one batch
 * at a time is committed by the backend (group commit: every write that arrived while the previous
 * commit was made shares the next one). A write resolves only once its batch is durable. A callback
 * that throws drops only its own writes. A commit that fails rejects every write of its batch, and of
 * the batches built on top of it, with STORE_UNAVAILABLE.
 *
 * When the callbacks run is the backend's one choice (`stacks`):
 * - a sole writer with synchronous reads (LMDB) stacks batches: a callback runs at once, in write(),
 *   over the writes of every batch not yet durable, so seqs follow the order of the calls and the next
 *   batch forms while the previous one commits;
 * - a store other processes write (PostgreSQL) runs the callbacks of a batch inside the backend's
 *   transaction, after it took the ledger's lock, so each callback reads what every replica committed.
 *   A read the transaction has not fetched yet throws NeedRow: the row is fetched and the callback runs
 *   again from the start.
 */
import { WritError } from '../../errors.js';
import type { Table, WriteOptions, WriteTx } from '../types.js';
import { isEmpty, mergeWrites, NeedRow, newWrites, nodeKey, OverlayTx, rowKey, type PendingRecord, type ReadView, type Writes } from './overlay.js';

export interface FaultHooks {
  /** Called before a write's callback runs and is committed; a throw (or rejection) fails that write
   *  with STORE_UNAVAILABLE and nothing of it is written. A slow promise simulates a stalled disk
   *  (the write times out after writeTimeoutMs). */
  beforeCommit?(label: string | undefined): void | Promise<void>;
  /** Called inside the LMDB transaction of a batch, with the labels of its writes; a throw aborts
   *  that commit as a real I/O failure would: the whole batch and every write queued behind it fail. */
  insideCommit?(labels: Array<string | undefined>): void;
}

export interface StoreStats {
  /** Batches committed so far (LMDB: each one fsync; PostgreSQL: each one COMMIT). */
  commits: number;
  /** Write callbacks committed so far (each write() that wrote something). */
  writes: number;
  /** Batches that failed. */
  failedCommits: number;
}

/** One batch as the backend holds it: where it starts, what its callbacks read, how it is committed. */
export interface BackendBatch<R extends PendingRecord> {
  /** Ledger size and head before the batch (as the backend knows them: committed). */
  readonly size: number;
  readonly head: string;
  /** Reads beneath the writes of the batches (may throw NeedRow). */
  readonly base: ReadView;
  /** Fetches what a callback asked for; the callback then runs again. */
  fetch?(need: NeedRow): Promise<void>;
  /** Commits the batch durably (synchronously, or once the promise resolves); releases the batch whatever
   *  the outcome. `startSize` is the size the batch was built on. */
  commit(writes: Writes<R>, end: { startSize: number; size: number; head: string }, labels: Array<string | undefined>): void | Promise<void>;
  /** Releases a batch that fails before its commit. */
  abort?(error: unknown): Promise<void>;
}

export interface Backend<R extends PendingRecord> {
  /** True for a sole writer with synchronous reads: batches stack, callbacks run in write(), and begin()
   *  answers synchronously. */
  readonly stacks: boolean;
  /** Starts a batch; `reads`: the rows its callbacks said they read, to fetch with it. */
  begin(reads: Array<[Table, string]>): BackendBatch<R> | Promise<BackendBatch<R>>;
  /** What the backend keeps of an appended record until its batch commits. */
  pendingRecord: (seq: number, text: string, body: Record<string, unknown>) => R;
  /** A failed batch's error as the writers get it (STORE_UNAVAILABLE). */
  commitError(e: unknown): unknown;
}

export interface GroupCommitOptions {
  writeTimeoutMs: number;
  faults?: FaultHooks | undefined;
}

interface Item {
  fn: (tx: WriteTx) => unknown;
  label: string | undefined;
  reads: Array<[Table, string]>;
  resolve(v: unknown): void;
  reject(e: unknown): void;
  /** When the caller stops waiting (Date.now() ms). */
  deadline: number;
  settled: boolean;
  /** The callback ran and its writes joined its batch. */
  wrote: boolean;
  result?: unknown;
  failed?: { error: unknown };
  batch: Batch<PendingRecord> | undefined;
}

interface Batch<R extends PendingRecord> {
  items: Item[];
  writes: Writes<R>;
  /** Size and head the batch starts from, and as of its last write. */
  startSize: number;
  size: number;
  head: string;
  txn: BackendBatch<R> | undefined;
  view: ReadView | undefined;
  /** 'open' takes more writes; 'flushing' is being committed; 'done' committed or failed. */
  state: 'open' | 'flushing' | 'done';
  labels: Array<string | undefined>;
  writeCount: number;
}

function unavailable(message: string, cause?: unknown): WritError {
  return new WritError('STORE_UNAVAILABLE', message, cause === undefined ? {} : { cause });
}

const pickRow = (w: Writes<PendingRecord>, k: string) => w.rows.get(k);
const pickNode = (w: Writes<PendingRecord>, k: string) => w.nodes.get(k);

function isThenable(v: unknown): boolean {
  return v !== null && typeof v === 'object' && typeof (v as { then?: unknown }).then === 'function';
}

export class GroupCommit<R extends PendingRecord> {
  readonly #backend: Backend<R>;
  readonly #writeTimeoutMs: number;
  readonly #faults: FaultHooks | undefined;
  /** Batches not yet done, oldest first; only batches[0] can be 'flushing'. */
  #batches: Array<Batch<R>> = [];
  #flushing = false;
  #flushScheduled = false;
  #closed = false;
  #idle: Array<() => void> = [];
  #listeners: Array<(pendingSize: number) => void> = [];
  /** While listeners run during a flush: the writes they queue, to run next in the same batch. */
  #captured: Item[] | undefined;
  /** Writes not settled when queued, checked against their deadlines by one timer (not one per write). */
  #waiting: Item[] = [];
  #sweepTimer: NodeJS.Timeout | undefined;
  #sweepAt = Infinity;
  /** How many of them are not settled yet. */
  #unsettled = 0;
  readonly #stats: StoreStats = { commits: 0, writes: 0, failedCommits: 0 };

  constructor(backend: Backend<R>, o: GroupCommitOptions) {
    this.#backend = backend;
    this.#writeTimeoutMs = o.writeTimeoutMs;
    this.#faults = o.faults;
  }

  get closed(): boolean {
    return this.#closed;
  }

  stats(): StoreStats {
    return { ...this.#stats };
  }

  /**
   * `listener` is called right after each write that appended, with the ledger size as of it; a write the
   * listener makes at once runs next, in the same batch, before any other write.
   */
  onWritten(listener: (pendingSize: number) => void): void {
    this.#listeners.push(listener);
  }

  write<T>(fn: (tx: WriteTx) => T, opts: WriteOptions = {}): Promise<T> {
    if (this.#closed) return Promise.reject(unavailable('the store is closed'));
    const deadline = Date.now() + this.#writeTimeoutMs;
    if (this.#faults?.beforeCommit) return this.#injectFault(opts.label, deadline).then(() => this.#queue(fn, opts, deadline) as Promise<T>);
    return this.#queue(fn, opts, deadline) as Promise<T>;
  }

  /** A durable write through the normal commit path (for /readyz). */
  async writable(): Promise<boolean> {
    if (this.#closed) return false;
    try {
      await this.write((tx) => (tx as OverlayTx<R>).probe(new Date().toISOString()), { label: 'readyz' });
      return true;
    } catch {
      return false;
    }
  }

  /** Refuses later writes and waits for the queued ones. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#batches.length > 0 || this.#flushing) await new Promise<void>((resolve) => this.#idle.push(resolve));
    this.#disarmSweep();
  }

  /** Runs the test-only fault hook within the write's deadline: a throw or a stall fails only this write. */
  async #injectFault(label: string | undefined, deadline: number): Promise<void> {
    const faults = this.#faults!;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        Promise.resolve().then(() => faults.beforeCommit!(label)),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(unavailable(`store write timed out after ${this.#writeTimeoutMs} ms`)), Math.max(0, deadline - Date.now()));
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

  #queue(fn: (tx: WriteTx) => unknown, opts: WriteOptions, deadline: number): Promise<unknown> {
    let item!: Item;
    const promise = new Promise<unknown>((resolve, reject) => {
      item = { fn, label: opts.label, reads: opts.reads ?? [], resolve, reject, deadline, settled: false, wrote: false, batch: undefined };
    });
    this.#unsettled++;
    if (this.#backend.stacks) this.#runNow(item);
    else {
      if (this.#captured) this.#captured.push(item);
      else this.#openBatch().items.push(item);
      item.batch = this.#batches[this.#batches.length - 1];
      this.#scheduleFlush();
    }
    if (!item.settled) {
      this.#waiting.push(item);
      this.#armSweep(deadline);
    }
    return promise;
  }

  #settle(item: Item, ok: boolean, value: unknown): void {
    if (item.settled) return;
    item.settled = true;
    if (ok) item.resolve(value);
    else item.reject(value);
    // The last write waited for: no deadline left to watch.
    if (--this.#unsettled === 0) this.#disarmSweep();
  }

  /** Makes sure the sweep runs by `at`. */
  #armSweep(at: number): void {
    if (this.#sweepTimer !== undefined && this.#sweepAt <= at) return;
    clearTimeout(this.#sweepTimer);
    this.#sweepAt = at;
    this.#sweepTimer = setTimeout(() => this.#sweep(), Math.max(0, at - Date.now()));
  }

  #disarmSweep(): void {
    clearTimeout(this.#sweepTimer);
    this.#sweepTimer = undefined;
    this.#sweepAt = Infinity;
    this.#waiting = [];
  }

  /** Times out the writes past their deadline, forgets the settled ones, and re-arms for the next deadline. */
  #sweep(): void {
    this.#sweepTimer = undefined;
    this.#sweepAt = Infinity;
    const now = Date.now();
    for (const item of this.#waiting) if (!item.settled && item.deadline <= now) this.#timeout(item);
    // A timeout can settle other writes (those built on the dropped batch): filter after all of them.
    this.#waiting = this.#waiting.filter((item) => !item.settled);
    let next = Infinity;
    for (const item of this.#waiting) next = Math.min(next, item.deadline);
    if (next !== Infinity) this.#armSweep(next);
  }

  /** The last batch if it still takes writes, else a new one (begun at once when batches stack). */
  #openBatch(): Batch<R> {
    const last = this.#batches[this.#batches.length - 1];
    if (last?.state === 'open') return last;
    const batch: Batch<R> = {
      items: [],
      writes: newWrites(),
      startSize: last?.size ?? 0,
      size: last?.size ?? 0,
      head: last?.head ?? '',
      txn: undefined,
      view: undefined,
      state: 'open',
      labels: [],
      writeCount: 0,
    };
    if (this.#backend.stacks) {
      const txn = this.#backend.begin([]);
      if (isThenable(txn)) throw new TypeError('a backend whose batches stack begins them synchronously');
      this.#began(batch, txn as BackendBatch<R>, last === undefined);
    }
    this.#batches.push(batch);
    return batch;
  }

  #began(batch: Batch<R>, txn: BackendBatch<R>, fromBackend: boolean): void {
    batch.txn = txn;
    if (fromBackend) {
      batch.startSize = batch.size = txn.size;
      batch.head = txn.head;
    }
    batch.view = this.#viewOf(batch, txn.base);
  }

  /** Reads through the writes of `batch` and of the batches before it, then the backend. */
  #viewOf(batch: Batch<R>, base: ReadView): ReadView {
    return {
      row: (table, key) => {
        const r = this.#pending(batch, pickRow, rowKey(table, key));
        return r !== undefined ? r.value : base.row(table, key);
      },
      node: (level, index) => this.#pending(batch, pickNode, nodeKey(level, index))?.hash ?? base.node(level, index),
    };
  }

  /** The newest pending write of key `k`, from `batch` back to the oldest batch not yet done. */
  #pending<V>(batch: Batch<R>, pick: (w: Writes<PendingRecord>, k: string) => V | undefined, k: string): V | undefined {
    for (let i = this.#batches.indexOf(batch); i >= 0; i--) {
      const v = pick(this.#batches[i]!.writes, k);
      if (v !== undefined) return v;
    }
    return undefined;
  }

  /** Stacking: the callback runs now, over every write not yet durable, and its writes join the open batch. */
  #runNow(item: Item): void {
    const last = this.#batches[this.#batches.length - 1];
    const batch = last?.state === 'open' ? last : this.#openBatch();
    let tx: OverlayTx<R>;
    try {
      tx = this.#run(batch, item);
    } catch (e) {
      this.#dropIfUnused(batch);
      this.#settle(item, false, e);
      return;
    }
    if (isEmpty(tx.own)) {
      // Nothing to write, but what the callback read may include writes not yet durable: answer after them.
      this.#dropIfUnused(batch);
      const pending = this.#batches[this.#batches.length - 1];
      if (!pending) this.#settle(item, true, item.result);
      else {
        item.batch = pending;
        pending.items.push(item);
      }
      return;
    }
    this.#join(batch, item, tx);
    this.#afterWrite(batch, tx.own.records.length > 0);
    this.#scheduleFlush();
  }

  /** A batch opened for a callback that then wrote nothing is not kept. */
  #dropIfUnused(batch: Batch<R>): void {
    if (batch.items.length === 0 && this.#batches[this.#batches.length - 1] === batch) this.#batches.pop();
  }

  /** Runs a callback once over the batch's view; the caller merges its writes. */
  #run(batch: Batch<R>, item: Item): OverlayTx<R> {
    const tx = new OverlayTx<R>(batch.size, batch.head, batch.view!, this.#backend.pendingRecord);
    const result = item.fn(tx);
    if (isThenable(result)) throw new TypeError('Store.write callbacks must be synchronous');
    item.result = result;
    return tx;
  }

  #join(batch: Batch<R>, item: Item, tx: OverlayTx<R>): void {
    mergeWrites(batch.writes, tx.own);
    batch.size = tx.size();
    batch.head = tx.head();
    // Callbacks that run in write() join here; those run at flush time are in the batch already.
    if (item.batch !== batch) batch.items.push(item);
    item.batch = batch;
    item.wrote = true;
    batch.writeCount++;
    batch.labels.push(item.label);
  }

  /** Tells the listeners after a write that appended; during a flush, what they write runs next. */
  #afterWrite(batch: Batch<R>, appended: boolean, runNext?: (items: Item[]) => void): void {
    if (!appended || this.#listeners.length === 0) return;
    const outer = this.#captured;
    if (runNext) this.#captured = [];
    try {
      for (const listener of this.#listeners) listener(batch.size);
    } finally {
      const captured = this.#captured;
      this.#captured = outer;
      if (runNext && captured && captured.length > 0) runNext(captured);
    }
  }

  #timeout(item: Item): void {
    if (item.settled) return;
    const err = unavailable(`store write timed out after ${this.#writeTimeoutMs} ms`);
    const batch = item.batch as Batch<R> | undefined;
    const i = batch ? this.#batches.indexOf(batch) : -1;
    if (batch?.state === 'open' && item.wrote && i >= 0) {
      // Not handed to the backend yet, and later writes are built on it: drop it and everything behind it.
      this.#failFrom(i, err);
    } else {
      // Not run yet (it is skipped), or already being committed (it may still land): this caller cannot wait.
      this.#settle(item, false, err);
    }
  }

  /** Rejects and drops batches[i..]; the pending head falls back to what is before them. */
  #failFrom(i: number, err: unknown): void {
    for (const b of this.#batches.splice(i)) {
      b.state = 'done';
      for (const item of b.items) this.#settle(item, false, err);
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
    batch.state = 'flushing';
    let committing = false;
    let sync = true;
    try {
      if (!batch.txn) {
        const live = batch.items.filter((i) => !i.settled);
        if (live.length === 0) {
          // Every write of it timed out before it began: no transaction for nothing.
          this.#batches.shift();
          batch.state = 'done';
          return;
        }
        sync = false;
        const began = this.#backend.begin(live.flatMap((i) => i.reads));
        this.#began(batch, isThenable(began) ? await began : (began as BackendBatch<R>), true);
        await this.#runQueued(batch);
      }
      committing = true;
      const done = batch.txn!.commit(batch.writes, { startSize: batch.startSize, size: batch.size, head: batch.head }, batch.labels);
      if (isThenable(done)) {
        sync = false;
        await done;
      }
      this.#stats.commits++;
      this.#stats.writes += batch.writeCount;
      this.#batches.shift();
      batch.state = 'done';
      for (const item of batch.items) {
        if (item.failed) this.#settle(item, false, item.failed.error);
        else this.#settle(item, true, item.result);
      }
    } catch (e) {
      this.#stats.failedCommits++;
      if (!committing) await batch.txn?.abort?.(e).catch(() => undefined);
      const err = this.#backend.commitError(e);
      // The batches begun on top of this one (stacked) fail with it; the others have not run yet.
      const i = this.#batches.indexOf(batch);
      let end = i + 1;
      while (end < this.#batches.length && this.#batches[end]!.txn) end++;
      const behind = this.#batches.splice(i + 1, end - i - 1);
      this.#batches.splice(i, 1);
      for (const b of [batch, ...behind]) {
        b.state = 'done';
        for (const item of b.items) this.#settle(item, false, err);
      }
    } finally {
      this.#flushing = false;
      // After a synchronous commit the next one waits a turn of the event loop: the answers of this one
      // go out first, and the writes that queued up meanwhile join the next batch.
      if (this.#batches.length > 0) {
        if (sync) this.#scheduleFlush();
        else void this.#flush();
      } else this.#notifyIdle();
    }
  }

  /** Runs the callbacks of a batch that did not run at write() (batches that do not stack), in order. */
  async #runQueued(batch: Batch<R>): Promise<void> {
    const items = batch.items;
    for (let i = 0; i < items.length; i++) {
      const item = items[i]!;
      if (item.settled) continue;
      let tx: OverlayTx<R> | undefined;
      for (;;) {
        try {
          tx = this.#run(batch, item);
        } catch (e) {
          if (e instanceof NeedRow && batch.txn!.fetch) {
            await batch.txn!.fetch(e);
            continue;
          }
          item.failed = { error: e };
          tx = undefined;
        }
        break;
      }
      if (!tx) continue;
      const sizeBefore = batch.size;
      if (isEmpty(tx.own)) item.wrote = true;
      else this.#join(batch, item, tx);
      this.#afterWrite(batch, batch.size !== sizeBefore, (next) => {
        for (const n of next) n.batch = batch;
        items.splice(i + 1, 0, ...next);
      });
    }
  }

  #notifyIdle(): void {
    if (this.#batches.length > 0 || this.#flushing) return;
    const ws = this.#idle;
    this.#idle = [];
    for (const w of ws) w();
  }
}
