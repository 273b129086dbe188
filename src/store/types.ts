/**
 * The store seam (docs/protocol.md §6, §9): what the decision path, the state machine, approvals, entities,
 * the checkpointer, key handling and the auditor routes need from a durable store, whichever one it is:
 * the embedded LMDB store of a data dir (lmdb/lmdb-store.ts) or a PostgreSQL database shared by replicas
 * (postgres/pg-store.ts).
 *
 * Writes keep one synchronous-callback API: `write(fn)` runs `fn` against a transaction view and
 * resolves with its result only once the write is durable (LMDB fsync / PostgreSQL COMMIT). Both stores
 * get it from one store machine (machine/group-commit.ts, machine/overlay.ts). A callback must be
 * re-runnable: the PostgreSQL store may run it again after fetching a row it asked for, so it may only
 * read through `tx`, compute, and make idempotent assignments outside the tx.
 *
 * Reads may answer synchronously (LMDB: memory-mapped, the hot path stays lean) or with a promise
 * (PostgreSQL): callers always `await` them, and iterate `entries`/`exportLines` with `for await`.
 */
import type { LedgerRecord } from '../ledger/record.js';
import type { PresealedMembers } from './seal.js';

export type Table = 'executions' | 'approvals' | 'entities' | 'meta';
export type MaybePromise<T> = T | Promise<T>;
export type MaybeAsyncIterable<T> = Iterable<T> | AsyncIterable<T>;

export interface AppendedRecord {
  seq: number;
  hash: string;
  record: LedgerRecord;
}

export interface WriteTx {
  /** Appends one record: assigns v=1, seq (next), ts (now, RFC 3339 UTC), prev (head hash), computes
   *  hash (recordHash), stores record + Merkle subtree nodes + indexes (kind; `actor` field as uidKey
   *  when it is a {type,id}; `execution_id` field). Visible to later append() calls in the same tx.
   *  `presealed`: the record's members already canonicalised (seal.ts presealMembers of the whole
   *  record); `fields` then need carry only kind, actor and execution_id, for the indexes. */
  append(fields: { kind: string } & Record<string, unknown>, presealed?: PresealedMembers): AppendedRecord;
  /** Reads a table; sees this tx's own writes and every earlier write. */
  get<T>(table: Table, key: string): T | undefined;
  put(table: Table, key: string, value: unknown): void;
  del(table: Table, key: string): void;
  /** Ledger size as of this point of the tx (the seq the next append gets). */
  size(): number;
  /** Hash of the last record as of this point of the tx. */
  head(): string;
  /** Merkle root ('sha256:<hex>') of the first `size()` records as of this point of the tx. */
  root(): string;
}

export interface WriteOptions {
  label?: string;
  /** Rows the callback will read: a shared store fetches them with the batch, in one round trip. */
  reads?: Array<[Table, string]>;
}

export interface RecordQuery {
  from?: number;
  limit?: number;
  kind?: string;
  actor?: string;
  execution_id?: string;
  /** Decision records of this envelope task_id / traceparent trace id (§17). */
  task_id?: string;
  trace_id?: string;
}

export interface LedgerStore {
  readonly kind: 'lmdb' | 'postgres';
  /**
   * True when other processes write the same store: in-memory caches must be re-checked in writes.
   * Only what is about replicas branches on it, each keeping a meta row a replica reads under the write
   * lock (the embedded store has one writer and keeps none): the entities version (entities/entity-cache.ts),
   * the policy version a joint start records once (pdp/policy-reload.ts), the ledger key a rotation moves
   * (checkpoints/keys.ts), the last checkpoint's end and time (checkpoints/checkpointer.ts), and the
   * witness dir replicas may share (checkpoints/witness.ts).
   */
  readonly shared: boolean;
  /** Where the store lives, for messages (a data dir, or a database URL without its password). */
  readonly location: string;
  /** The store as the start's log line names it: `data dir D` or `database URL` (no password). */
  readonly where: string;

  write<T>(fn: (tx: WriteTx) => T, opts?: WriteOptions): Promise<T>;
  /**
   * `listener` is called synchronously right after each write's callback has joined the open batch
   * (LMDB) or transaction (PostgreSQL), with the ledger size as of that write; a write the listener makes
   * at once follows it in the same batch — so a checkpoint can follow the very write that reaches its
   * cadence, before any other write (group commit takes many at once).
   */
  onWritten?(listener: (pendingSize: number) => void): void;

  get<T>(table: Table, key: string): MaybePromise<T | undefined>;
  /** Entries of a table in key order (UTF-8 byte order), those whose key starts with `prefix`. */
  entries<T>(table: Table, prefix?: string): MaybeAsyncIterable<[string, T]>;
  /** Committed record count. */
  size(): MaybePromise<number>;
  /** The record count as of this process's last commit or read, without asking the store (cadences). */
  knownSize(): number;
  /** Hash of the last committed record (ZERO_HASH when empty). */
  head(): MaybePromise<string>;
  getRecord(seq: number): MaybePromise<LedgerRecord | undefined>;
  /** A page of records in seq order from `from` (limit 1..1000, default 100), filtered by kind, actor
   *  (uidKey) and execution_id; `next` is the `from` of the next page, null when there is none. */
  listRecords(q: RecordQuery): MaybePromise<{ records: LedgerRecord[]; next: number | null }>;
  /** The JCS text of each record with from ≤ seq < to (default: all committed), in seq order. */
  exportLines(from?: number, to?: number): MaybeAsyncIterable<string>;
  /** Merkle root of the first `size` records (default: all committed), 'sha256:<hex>'. */
  root(size?: number): MaybePromise<string>;
  inclusionProof(seq: number, size: number): MaybePromise<string[]>;
  consistencyProof(from: number, to: number): MaybePromise<string[]>;
  /**
   * The `count` complete-subtree hashes of height `level` with indices from `from` (leaves
   * [i·2^level, (i+1)·2^level)), all within the committed tree: the hashes of a C2SP tile.
   */
  subtreeHashes(level: number, from: number, count: number): MaybePromise<Buffer[]>;
  latestCheckpoint(): MaybePromise<LedgerRecord | undefined>;
  /** Public keys of the ledger's key records, in seq order. */
  keys(): MaybePromise<Array<{ key_id: string; public_key: string }>>;
  /** Whether a durable write succeeds now (for /readyz). */
  writable(): Promise<boolean>;
  close(): Promise<void>;
}
