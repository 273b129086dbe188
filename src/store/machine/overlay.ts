/**
 * The transaction view of a write callback, one code for both stores: the callback's own writes over the
 * writes of the batches not yet durable, over what the backend reads beneath them. A record appended
 * here is sealed (seal.ts) against the hashes this view sees, so the seq, prev and Merkle nodes of
 * every append follow from the one serial history of the batches.
 *
 * A backend that cannot answer a read at once (PostgreSQL: the row is not fetched in this transaction
 * yet) throws NeedRow; the group commit fetches it and runs the callback again from the start. That is
 * why a callback must be re-runnable. A backend with synchronous reads (LMDB) never throws it.
 */
import { bytesToHash } from '../../ledger/merkle/hasher.js';
import { rootAt, type SubtreeReader } from '../../ledger/merkle/tree.js';
import { appendedRecord, isTableKey, MAX_TABLE_KEY_BYTES, sealNextRecord, type PresealedMembers } from '../seal.js';
import type { AppendedRecord, Table, WriteTx } from '../types.js';

/** A record as a backend keeps it until its batch commits: at least its seq and JCS text. */
export interface PendingRecord {
  seq: number;
  text: string;
}

export interface StoredNode {
  level: number;
  index: number;
  hash: Buffer;
}

export interface PendingRow {
  table: Table;
  key: string;
  /** JSON text; null: deleted. */
  value: string | null;
}

/** The writes of one callback or, merged, of one batch. */
export interface Writes<R extends PendingRecord> {
  records: R[];
  nodes: Map<string, StoredNode>;
  rows: Map<string, PendingRow>;
  /** The readiness probe's timestamp: a write that makes the backend commit (LMDB keeps it internally). */
  probe: string | undefined;
}

export function newWrites<R extends PendingRecord>(): Writes<R> {
  return { records: [], nodes: new Map(), rows: new Map(), probe: undefined };
}

export function isEmpty(w: Writes<PendingRecord>): boolean {
  return w.records.length === 0 && w.nodes.size === 0 && w.rows.size === 0 && w.probe === undefined;
}

export function mergeWrites<R extends PendingRecord>(into: Writes<R>, from: Writes<R>): void {
  for (const r of from.records) into.records.push(r);
  for (const [k, n] of from.nodes) into.nodes.set(k, n);
  for (const [k, r] of from.rows) into.rows.set(k, r);
  if (from.probe !== undefined) into.probe = from.probe;
}

export const rowKey = (table: Table, key: string): string => `${table}\u0000${key}`;
export const nodeKey = (level: number, index: number): string => `${level}/${index}`;

/** Thrown by a read a backend must fetch first; the callback is run again once it is fetched. */
export class NeedRow {
  constructor(
    /** null: a Merkle node (level, index). */
    readonly table: Table | null,
    readonly key: string,
    readonly level = 0,
    readonly index = 0,
  ) {}
}

/** What a callback reads beneath its own writes. */
export interface ReadView {
  /** The JSON text of a row, null when absent; or throws NeedRow. */
  row(table: Table, key: string): string | null;
  /** The hash of a stored Merkle node; or throws NeedRow. */
  node(level: number, index: number): Buffer;
}

/** One write callback's transaction: its own writes over a ReadView, from a size and head. */
export class OverlayTx<R extends PendingRecord> implements WriteTx {
  readonly own: Writes<R> = newWrites();
  #size: number;
  #head: string;
  readonly #below: ReadView;
  readonly #pending: (seq: number, text: string, body: Record<string, unknown>) => R;
  readonly #reader: SubtreeReader;

  constructor(size: number, head: string, below: ReadView, pending: (seq: number, text: string, body: Record<string, unknown>) => R) {
    this.#size = size;
    this.#head = head;
    this.#below = below;
    this.#pending = pending;
    this.#reader = { subtree: (level, index) => this.own.nodes.get(nodeKey(level, index))?.hash ?? below.node(level, index) };
  }

  append(fields: { kind: string } & Record<string, unknown>, presealed?: PresealedMembers): AppendedRecord {
    const seq = this.#size;
    const { body, hash, text, leaf, completed } = sealNextRecord(fields, seq, this.#head, this.#reader, presealed);
    this.own.records.push(this.#pending(seq, text, body));
    this.own.nodes.set(nodeKey(0, seq), { level: 0, index: seq, hash: leaf });
    for (const n of completed) this.own.nodes.set(nodeKey(n.level, n.index), n);
    this.#size = seq + 1;
    this.#head = hash;
    return appendedRecord(seq, hash, text);
  }

  get<T>(table: Table, key: string): T | undefined {
    if (!isTableKey(key)) return undefined;
    const own = this.own.rows.get(rowKey(table, key));
    const v = own !== undefined ? own.value : this.#below.row(table, key);
    return v === null ? undefined : (JSON.parse(v) as T);
  }

  put(table: Table, key: string, value: unknown): void {
    checkKey(table, key);
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError(`value for ${table}/${key} has no JSON form`);
    this.own.rows.set(rowKey(table, key), { table, key, value: text });
  }

  del(table: Table, key: string): void {
    checkKey(table, key);
    this.own.rows.set(rowKey(table, key), { table, key, value: null });
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

  /** Readiness probe: a write that goes through a real commit. */
  probe(at: string): void {
    this.own.probe = at;
  }
}

function checkKey(table: Table, key: string): void {
  if (!isTableKey(key)) {
    throw new TypeError(`table keys are non-empty strings of at most ${MAX_TABLE_KEY_BYTES} bytes (${table})`);
  }
}
