/**
 * The shared store on PostgreSQL (docs/protocol.md §9): any number of `writ serve` processes on one database
 * are one PDP.
 *
 * Writes go through the group commit (machine/group-commit.ts), which runs the callbacks of one batch
 * inside ONE transaction of this store:
 *   BEGIN (READ COMMITTED) → SELECT … FROM ledger_head FOR UPDATE — the row lock every writer of every
 *   replica takes first, so transactions that write run one at a time, and each one, reading after the
 *   lock, sees everything committed before it → run each callback over an in-memory view whose rows
 *   come from the database inside this transaction (a row not fetched yet makes the callback stop
 *   with NeedRow; the group commit fetches it and runs the callback again from the start) → INSERT the
 *   records, Merkle nodes and rows, UPDATE the head → COMMIT (synchronous_commit on). Waiters are
 *   answered only after COMMIT returned. A callback that throws drops only its own writes.
 * The unique keys (records.seq, merkle (level, idx), state (tbl, key)) back the invariants: a
 * writer that somehow skipped the lock would fail on them rather than fork the chain.
 *
 * Reads outside writes go to the database (every replica sees what any replica committed). Merkle
 * nodes are immutable once written, so they are cached in memory.
 *
 * Database unreachable: the pool fails fast (connect timeout), the write rejects with
 * STORE_UNAVAILABLE, and the next write tries a fresh connection: recovery needs no restart.
 */
import pg from 'pg';
import { WritError } from '../../errors.js';
import type { LedgerRecord } from '../../ledger/record.js';
import { ZERO_HASH } from '../../ledger/record.js';
import { checkSubtreeRange, type NodeId } from '../../ledger/merkle/tree.js';
import { uidKey } from '../../util/uid.js';
import { correlationMatches } from '../layout.js';
import {
  INSERT_RECORDS,
  insertRecordsParams,
  RECORD_TEXT,
  recordColumns,
  recordText,
  STATE_VALUE,
  stateValue,
  stateValueParams,
  type RecordColumns,
} from './columns.js';
import { indexTerm, isTableKey } from '../seal.js';
import type { LedgerStore, RecordQuery, Table, WriteOptions, WriteTx } from '../types.js';
import { migrate, schemaVersion } from './schema.js';
import { LedgerProofs } from '../proofs.js';
import { GroupCommit, type Backend, type BackendBatch, type FaultHooks, type StoreStats } from '../machine/group-commit.js';
import { NeedRow, nodeKey, rowKey, type PendingRecord, type Writes } from '../machine/overlay.js';
import * as log from '../../log/log.js';

const MAX_PAGE = 1000;
const DEFAULT_WRITE_TIMEOUT_MS = 10_000;
const DEFAULT_IDLE_IN_TRANSACTION_MS = 5_000;
const NODE_CACHE_LIMIT = 200_000;

export interface PgStoreOptions {
  url: string;
  /** A write not committed within this time rejects with STORE_UNAVAILABLE (default 10 s). */
  writeTimeoutMs?: number;
  /** Connect timeout: how fast an unreachable database is reported (default 2 s). */
  connectTimeoutMs?: number;
  poolSize?: number;
  /**
   * How long PostgreSQL lets one of these connections sit idle inside a transaction before it ends the
   * session (default 5 s). Every writer holds the ledger head's row lock for its whole transaction, so a
   * replica frozen mid-transaction (SIGSTOP, a VM pause, a network cut that leaves the TCP connection
   * open) would otherwise stop the writes of every replica until PostgreSQL noticed the dead peer
   * (hours, with default TCP keepalives). A writ transaction runs its statements back to back; it is
   * idle only while its process computes between two of them (milliseconds).
   */
  idleInTransactionTimeoutMs?: number;
  /** Create or migrate the schema on open (default true). */
  migrate?: boolean;
  /** Test-only fault injection (WRIT_FAULT_FILE, src/server/faults.ts): `beforeCommit` runs before a
   *  write joins a transaction, so a failure leaves nothing of that write, as in the LMDB store. */
  faults?: FaultHooks;
}

function unavailable(message: string, cause?: unknown): WritError {
  return new WritError('STORE_UNAVAILABLE', message, cause === undefined ? {} : { cause });
}

/**
 * A database failure as STORE_UNAVAILABLE. At open the driver's words are the operator's to read (the
 * start's log line: a refused password, no such database). On a running replica the refusal goes to API
 * clients, and the driver's words name the database's address ("connect ECONNREFUSED 10.0.0.5:5432") or
 * its constraints: clients get the error's code only, and the detail goes to the log (a line a second at
 * most, so an outage under load does not flood it).
 */
function asUnavailable(e: unknown, what: string, audience: 'operator' | 'client' = 'client'): unknown {
  if (e instanceof WritError) return e;
  if (e instanceof TypeError || e instanceof RangeError) return e;
  const detail = (e as Error)?.message ?? String(e);
  if (audience === 'operator') return unavailable(`${what}: ${detail}`, e);
  const now = Date.now();
  if (now - lastDetailLogged >= 1000) {
    lastDetailLogged = now;
    log.warn(`writ: ${what}: ${detail}`);
  }
  const code = (e as { code?: unknown } | null)?.code;
  return unavailable(
    `${what}${typeof code === 'string' && /^[A-Z0-9_]{1,32}$/.test(code) ? ` (${code})` : ''}: the database did not complete the request (the sidecar's log has the detail)`,
    e,
  );
}
let lastDetailLogged = 0;

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'postgres://(unparsable url)';
  }
}

/** An appended record until its batch commits: its text and its indexed columns. */
interface PgRecord extends PendingRecord, RecordColumns {}

export class PgStore implements LedgerStore {
  readonly kind = 'postgres' as const;
  readonly shared = true;
  readonly location: string;
  readonly where: string;
  readonly #pool: pg.Pool;
  readonly #writes: GroupCommit<PgRecord>;
  #closed = false;
  /** Merkle subtree hashes are immutable once committed: cached across transactions. */
  readonly #nodes = new Map<string, Buffer>();
  readonly #proofs = new LedgerProofs<true>({
    committedSize: () => this.size(),
    nodes: (ids) => this.#fetchNodes(ids),
  });
  #knownSize = 0;
  /** Whether this database packs texts (schema 2) or keeps them plain (schema 1): schema.ts. */
  readonly #packed: boolean;

  private constructor(o: PgStoreOptions, pool: pg.Pool, version: number) {
    this.location = redactUrl(o.url);
    this.where = `database ${this.location}`;
    this.#packed = version >= 2;
    this.#pool = pool;
    this.#writes = new GroupCommit(this.#backend(), { writeTimeoutMs: o.writeTimeoutMs ?? DEFAULT_WRITE_TIMEOUT_MS, faults: o.faults });
  }

  static createPool(o: PgStoreOptions): pg.Pool {
    const pool = new pg.Pool({
      connectionString: o.url,
      max: o.poolSize ?? 10,
      connectionTimeoutMillis: o.connectTimeoutMs ?? 2000,
      idleTimeoutMillis: 10_000,
      query_timeout: o.writeTimeoutMs ?? DEFAULT_WRITE_TIMEOUT_MS,
      // An answer is sent only after COMMIT returned, and COMMIT returns only once the WAL is flushed.
      // A transaction left idle (its replica frozen) is ended by the server, releasing its locks.
      options: `-c synchronous_commit=on -c idle_in_transaction_session_timeout=${o.idleInTransactionTimeoutMs ?? DEFAULT_IDLE_IN_TRANSACTION_MS}`,
      keepAlive: true,
    });
    // A connection that dies (idle in the pool, or checked out between queries) must not crash the
    // process: its error event is swallowed here, the query in flight rejects, and the pool drops it.
    pool.on('error', () => undefined);
    pool.on('connect', (client) => client.on('error', () => undefined));
    return pool;
  }

  /** Connects, creates or migrates the schema (unless told not to), and returns the store. */
  static async open(o: PgStoreOptions): Promise<PgStore> {
    const pool = PgStore.createPool(o);
    try {
      const client = await pool.connect();
      let version: number;
      try {
        version = o.migrate !== false ? await migrate(client) : await schemaVersion(client);
      } finally {
        client.release();
      }
      return new PgStore(o, pool, version);
    } catch (e) {
      await pool.end().catch(() => undefined);
      throw asUnavailable(e, `cannot open the database ${redactUrl(o.url)}`, 'operator');
    }
  }

  // ── writing ──

  write<T>(fn: (tx: WriteTx) => T, opts: WriteOptions = {}): Promise<T> {
    return this.#writes.write(fn, opts);
  }

  /**
   * Called right after each write that appended, with the ledger size as of it. A write a listener
   * queues synchronously (the checkpoint that reaches the cadence) joins the same transaction, right
   * behind it, before any other write of the batch.
   */
  onWritten(listener: (pendingSize: number) => void): void {
    this.#writes.onWritten(listener);
  }

  stats(): StoreStats {
    return this.#writes.stats();
  }

  /** The store as the group commit sees it: other replicas write too, so callbacks run in the transaction. */
  #backend(): Backend<PgRecord> {
    return {
      stacks: false,
      begin: (reads) => this.#begin(reads),
      pendingRecord: (seq, text, body) => ({ seq, text, ...recordColumns(body) }),
      commitError: (e) => asUnavailable(e, 'store commit failed'),
    };
  }

  /** Opens a batch's transaction: BEGIN, the ledger head's row lock, and the rows its callbacks said they read. */
  async #begin(reads: Array<[Table, string]>): Promise<BackendBatch<PgRecord>> {
    const client = await this.#pool.connect();
    // A connection that failed mid-transaction is destroyed, not returned to the pool.
    const release = (broken?: unknown): void => client.release(broken instanceof Error && !(broken instanceof WritError) ? broken : undefined);
    const rollback = async (e: unknown): Promise<void> => {
      await client.query('ROLLBACK').catch(() => undefined);
      release(e);
    };
    /** Rows fetched from the database in this transaction (null: absent). */
    const fetched = new Map<string, string | null>();
    let start: { size: number; head: string };
    try {
      // BEGIN and the lock in one round trip (a simple-protocol query of two statements).
      const opened = (await client.query('BEGIN; SELECT size, head FROM ledger_head WHERE id = 1 FOR UPDATE')) as unknown as Array<
        pg.QueryResult<{ size: string; head: string }>
      >;
      const row = opened[1]!.rows[0];
      if (!row) throw new WritError('STORE_CORRUPT', 'the database has no ledger head (run writ store migrate)', { details: { seq: null } });
      start = { size: Number(row.size), head: row.head };
      await this.#prefetch(client, start.size, fetched, reads);
    } catch (e) {
      await rollback(e);
      throw e;
    }
    return {
      size: start.size,
      head: start.head,
      base: {
        row: (table, key) => {
          const v = fetched.get(rowKey(table, key));
          if (v === undefined) throw new NeedRow(table, key);
          return v;
        },
        node: (level, index) => {
          const n = this.#nodes.get(nodeKey(level, index));
          if (!n) throw new NeedRow(null, '', level, index);
          return n;
        },
      },
      fetch: (need) => this.#fetch(client, fetched, need),
      commit: async (writes, end) => {
        try {
          await this.#apply(client, writes, end);
          await client.query('COMMIT');
        } catch (e) {
          await rollback(e);
          throw e;
        }
        release();
        this.#knownSize = Math.max(this.#knownSize, end.size);
        for (const [k, n] of writes.nodes) this.#cacheNode(k, n.hash);
      },
      abort: rollback,
    };
  }

  /**
   * Fetches, in one round trip, the rows the batch's callbacks said they read and the Merkle nodes an
   * append at the current size combines with (the frontier; cached unless another replica appended).
   */
  async #prefetch(client: pg.PoolClient, size: number, fetched: Map<string, string | null>, reads: Array<[Table, string]>): Promise<void> {
    const want = new Map<string, [Table, string]>();
    for (const [t, k] of reads) want.set(rowKey(t, k), [t, k]);
    const levels: number[] = [];
    const indexes: number[] = [];
    for (let level = 0; ; level++) {
      const n = Math.floor(size / 2 ** level);
      if (n === 0) break;
      if (n % 2 === 1 && !this.#nodes.has(nodeKey(level, n - 1))) {
        levels.push(level);
        indexes.push(n - 1);
      }
    }
    if (want.size === 0 && levels.length === 0) return;
    const rows = await client.query<{
      tbl: Table | null;
      key: string | null;
      value: string | null;
      packed: Buffer | null;
      level: number | null;
      idx: string | null;
      hash: Buffer | null;
    }>(
      `SELECT s.tbl, s.key, s.value, s.packed, NULL::int AS level, NULL::bigint AS idx, NULL::bytea AS hash
         FROM state s JOIN unnest($1::text[], $2::text[]) AS w(tbl, key) ON s.tbl = w.tbl AND s.key = w.key
       UNION ALL
       SELECT NULL, NULL, NULL, NULL, m.level, m.idx, m.hash
         FROM merkle m JOIN unnest($3::int[], $4::bigint[]) AS w(level, idx) ON m.level = w.level AND m.idx = w.idx`,
      [[...want.values()].map((r) => r[0]), [...want.values()].map((r) => r[1]), levels, indexes],
    );
    for (const k of want.keys()) fetched.set(k, null);
    for (const r of rows.rows) {
      if (r.tbl !== null && r.key !== null) fetched.set(rowKey(r.tbl, r.key), stateValue(r));
      else if (r.level !== null && r.idx !== null && r.hash) this.#cacheNode(nodeKey(r.level, Number(r.idx)), r.hash);
    }
  }

  async #fetch(client: pg.ClientBase, fetched: Map<string, string | null>, need: NeedRow): Promise<void> {
    if (need.table === null) {
      const hash = await this.#readNode(client, need.level, need.index);
      this.#cacheNode(nodeKey(need.level, need.index), hash);
      return;
    }
    const r = await client.query<{ value: string | null; packed: Buffer | null }>(`SELECT ${STATE_VALUE} FROM state WHERE tbl = $1 AND key = $2`, [
      need.table,
      need.key,
    ]);
    fetched.set(rowKey(need.table, need.key), r.rows[0] ? stateValue(r.rows[0]) : null);
  }

  async #readNode(client: pg.ClientBase | pg.Pool, level: number, index: number): Promise<Buffer> {
    const r = await client.query<{ hash: Buffer }>('SELECT hash FROM merkle WHERE level = $1 AND idx = $2', [level, index]);
    const hash = r.rows[0]?.hash;
    if (hash?.length !== 32) throw new WritError('STORE_CORRUPT', `merkle node (${level}, ${index}) is missing`, { details: { seq: null } });
    return hash;
  }

  #cacheNode(k: string, hash: Buffer): void {
    if (this.#nodes.size >= NODE_CACHE_LIMIT) this.#nodes.clear();
    this.#nodes.set(k, hash);
  }

  /**
   * Writes a batch's records, nodes and rows, and moves the head, inside the open transaction: one
   * statement (data-modifying CTEs), so a batch costs one round trip here whatever it holds.
   */
  async #apply(client: pg.ClientBase, w: Writes<PgRecord>, end: { startSize: number; size: number; head: string }): Promise<void> {
    if (w.records.length === 0 && w.nodes.size === 0 && w.rows.size === 0) return;
    const nodes = [...w.nodes.values()];
    const puts = [...w.rows.values()].filter((r) => r.value !== null);
    const dels = [...w.rows.values()].filter((r) => r.value === null);
    await client.query(
      `WITH r AS (${INSERT_RECORDS}),
            m AS (INSERT INTO merkle (level, idx, hash) SELECT * FROM unnest($9::int[], $10::bigint[], $11::bytea[])),
            p AS (INSERT INTO state (tbl, key, value, packed) SELECT * FROM unnest($12::text[], $13::text[], $14::text[], $15::bytea[])
                  ON CONFLICT (tbl, key) DO UPDATE SET value = EXCLUDED.value, packed = EXCLUDED.packed),
            d AS (DELETE FROM state s USING unnest($16::text[], $17::text[]) AS d(tbl, key) WHERE s.tbl = d.tbl AND s.key = d.key)
       UPDATE ledger_head SET size = $18, head = $19 WHERE id = 1 AND size = $20`,
      [
        ...insertRecordsParams(w.records, this.#packed),
        nodes.map((n) => n.level),
        nodes.map((n) => n.index),
        nodes.map((n) => n.hash),
        puts.map((r) => r.table),
        puts.map((r) => r.key),
        ...stateValueParams(
          puts.map((r) => r.value!),
          this.#packed,
        ),
        dels.map((r) => r.table),
        dels.map((r) => r.key),
        end.size,
        end.head,
        end.startSize,
      ],
    );
  }

  // ── reading committed state ──

  async #q<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
    if (this.#closed) throw unavailable('the store is closed');
    try {
      return await this.#pool.query<R>(text, values);
    } catch (e) {
      throw asUnavailable(e, 'the database could not be read');
    }
  }

  async get<T>(table: Table, key: string): Promise<T | undefined> {
    if (!isTableKey(key)) return undefined;
    const r = await this.#q<{ value: string | null; packed: Buffer | null }>(`SELECT ${STATE_VALUE} FROM state WHERE tbl = $1 AND key = $2`, [table, key]);
    return r.rows[0] ? (JSON.parse(stateValue(r.rows[0])) as T) : undefined;
  }

  async *entries<T>(table: Table, prefix = ''): AsyncIterable<[string, T]> {
    let after: string | undefined;
    for (;;) {
      const r = await this.#q<{ key: string; value: string | null; packed: Buffer | null }>(
        `SELECT key, ${STATE_VALUE} FROM state WHERE tbl = $1 AND starts_with(key, $2) ${after === undefined ? '' : 'AND key > $3'} ORDER BY key LIMIT 1000`,
        after === undefined ? [table, prefix] : [table, prefix, after],
      );
      for (const row of r.rows) yield [row.key, JSON.parse(stateValue(row)) as T];
      if (r.rows.length < 1000) return;
      after = r.rows[r.rows.length - 1]!.key;
    }
  }

  async #head(): Promise<{ size: number; head: string }> {
    const r = await this.#q<{ size: string; head: string }>('SELECT size, head FROM ledger_head WHERE id = 1');
    const head = r.rows[0] ? { size: Number(r.rows[0].size), head: r.rows[0].head } : { size: 0, head: ZERO_HASH };
    this.#knownSize = Math.max(this.#knownSize, head.size);
    return head;
  }

  knownSize(): number {
    return this.#knownSize;
  }

  async size(): Promise<number> {
    return (await this.#head()).size;
  }

  async head(): Promise<string> {
    return (await this.#head()).head;
  }

  async getRecord(seq: number): Promise<LedgerRecord | undefined> {
    if (!Number.isSafeInteger(seq) || seq < 0) return undefined;
    const r = await this.#q<{ text: string | null; packed: Buffer | null }>(`SELECT ${RECORD_TEXT} FROM records WHERE seq = $1`, [seq]);
    return r.rows[0] ? (JSON.parse(recordText(r.rows[0])) as LedgerRecord) : undefined;
  }

  async listRecords(q: RecordQuery): Promise<{ records: LedgerRecord[]; next: number | null }> {
    const from = q.from ?? 0;
    const limit = q.limit ?? 100;
    if (!Number.isSafeInteger(from) || from < 0) throw new WritError('INVALID_REQUEST', 'from must be a non-negative integer');
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE) throw new WritError('INVALID_REQUEST', `limit must be 1..${MAX_PAGE}`);
    const where: string[] = [];
    const values: unknown[] = [];
    if (q.kind !== undefined) where.push(`kind = $${values.push(q.kind)}`);
    if (q.actor !== undefined) where.push(`actor = $${values.push(indexTerm(q.actor))}`);
    if (q.execution_id !== undefined) where.push(`execution_id = $${values.push(indexTerm(q.execution_id))}`);
    if (q.task_id !== undefined) where.push(`task_id = $${values.push(indexTerm(q.task_id))}`);
    if (q.trace_id !== undefined) where.push(`trace_id = $${values.push(indexTerm(q.trace_id))}`);
    // Long terms are indexed by digest: the exact value is checked on the record itself.
    const matches = (r: LedgerRecord): boolean =>
      (q.kind === undefined || r.kind === q.kind) &&
      (q.execution_id === undefined || r.execution_id === q.execution_id) &&
      (q.actor === undefined || actorKeyOf(r) === q.actor) &&
      correlationMatches(r, q);
    const records: LedgerRecord[] = [];
    let cursor = from;
    for (;;) {
      const page = await this.#q<{ seq: string; text: string | null; packed: Buffer | null }>(
        `SELECT seq, ${RECORD_TEXT} FROM records WHERE seq >= $${values.length + 1} ${where.map((w) => `AND ${w}`).join(' ')} ORDER BY seq LIMIT ${limit + 1}`,
        [...values, cursor],
      );
      for (const row of page.rows) {
        const r = JSON.parse(recordText(row)) as LedgerRecord;
        if (!matches(r)) continue;
        if (records.length === limit) return { records, next: Number(row.seq) };
        records.push(r);
      }
      if (page.rows.length < limit + 1) return { records, next: null };
      cursor = Number(page.rows[page.rows.length - 1]!.seq) + 1;
    }
  }

  async *exportLines(from = 0, to?: number): AsyncIterable<string> {
    const end = Math.min(to ?? Number.MAX_SAFE_INTEGER, await this.size());
    let next = from;
    while (next < end) {
      const r = await this.#q<{ seq: string; text: string | null; packed: Buffer | null }>(
        `SELECT seq, ${RECORD_TEXT} FROM records WHERE seq >= $1 AND seq < $2 ORDER BY seq LIMIT 2000`,
        [next, end],
      );
      if (r.rows.length === 0) return;
      for (const row of r.rows) yield recordText(row);
      next = Number(r.rows[r.rows.length - 1]!.seq) + 1;
    }
  }

  /**
   * The hashes of stored Merkle nodes, in the order asked: the cached ones from the cache, all the
   * others in one query.
   */
  async #fetchNodes(ids: readonly NodeId[]): Promise<Buffer[]> {
    const found = new Map<string, Buffer>();
    const missing: NodeId[] = [];
    for (const id of ids) {
      const k = nodeKey(id.level, id.index);
      const hash = this.#nodes.get(k);
      if (hash) found.set(k, hash);
      else if (!found.has(k)) missing.push(id);
    }
    if (missing.length > 0) {
      let rows: Array<{ level: number; idx: string; hash: Buffer }>;
      try {
        rows = (
          await this.#pool.query<{ level: number; idx: string; hash: Buffer }>(
            'SELECT m.level, m.idx, m.hash FROM merkle m JOIN unnest($1::int[], $2::bigint[]) AS w(level, idx) ON m.level = w.level AND m.idx = w.idx',
            [missing.map((id) => id.level), missing.map((id) => id.index)],
          )
        ).rows;
      } catch (err) {
        throw asUnavailable(err, 'the database could not be read');
      }
      for (const r of rows) {
        if (r.hash.length !== 32) continue;
        const k = nodeKey(r.level, Number(r.idx));
        found.set(k, r.hash);
        this.#cacheNode(k, r.hash);
      }
    }
    return ids.map(({ level, index }) => {
      const hash = found.get(nodeKey(level, index));
      if (!hash) throw new WritError('STORE_CORRUPT', `merkle node (${level}, ${index}) is missing`, { details: { seq: null } });
      return hash;
    });
  }

  async root(size?: number): Promise<string> {
    return this.#proofs.root(size);
  }

  async inclusionProof(seq: number, size: number): Promise<string[]> {
    return this.#proofs.inclusionProof(seq, size);
  }

  /** Complete-subtree hashes of one height (a C2SP tile's), in one query. */
  async subtreeHashes(level: number, from: number, count: number): Promise<Buffer[]> {
    checkSubtreeRange(level, from, count, await this.size());
    if (count === 0) return [];
    let rows: Array<{ idx: string; hash: Buffer }>;
    try {
      rows = (
        await this.#pool.query<{ idx: string; hash: Buffer }>('SELECT idx, hash FROM merkle WHERE level = $1 AND idx >= $2 AND idx < $3 ORDER BY idx', [
          level,
          from,
          from + count,
        ])
      ).rows;
    } catch (err) {
      throw asUnavailable(err, 'the database could not be read');
    }
    if (rows.length !== count || rows.some((r, i) => Number(r.idx) !== from + i || r.hash.length !== 32)) {
      throw new WritError('STORE_CORRUPT', `merkle nodes of height ${level} from ${from} (${count}) are missing`, { details: { seq: null } });
    }
    return rows.map((r) => r.hash);
  }

  async consistencyProof(from: number, to: number): Promise<string[]> {
    return this.#proofs.consistencyProof(from, to);
  }

  async latestCheckpoint(): Promise<LedgerRecord | undefined> {
    const r = await this.#q<{ text: string | null; packed: Buffer | null }>(
      `SELECT ${RECORD_TEXT} FROM records WHERE kind = 'checkpoint' ORDER BY seq DESC LIMIT 1`,
    );
    return r.rows[0] ? (JSON.parse(recordText(r.rows[0])) as LedgerRecord) : undefined;
  }

  async keys(): Promise<Array<{ key_id: string; public_key: string }>> {
    const r = await this.#q<{ text: string | null; packed: Buffer | null }>(`SELECT ${RECORD_TEXT} FROM records WHERE kind = 'key' ORDER BY seq`);
    return r.rows.map((row) => {
      const rec = JSON.parse(recordText(row)) as LedgerRecord;
      return { key_id: String(rec.key_id), public_key: String(rec.public_key) };
    });
  }

  /** A write transaction through the normal path (lock, commit): the database is reachable and writable. */
  writable(): Promise<boolean> {
    return this.#closed ? Promise.resolve(false) : this.#writes.writable();
  }

  /** Waits for queued writes, then closes the pool. Later writes reject. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#writes.close();
    await this.#pool.end().catch(() => undefined);
  }
}

function actorKeyOf(r: LedgerRecord): string | undefined {
  const a = r.actor as { type?: unknown; id?: unknown } | null | undefined;
  return a && typeof a === 'object' && typeof a.type === 'string' && typeof a.id === 'string' ? uidKey({ type: a.type, id: a.id }) : undefined;
}
