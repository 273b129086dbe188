/**
 * The on-disk layout of a data dir's store: one LMDB environment in `<dataDir>/store/` with one
 * sub-database per concern, each with ONE key shape (lmdb-js orders keys by type, so mixing shapes
 * in a sub-database would interleave them):
 *   records   seq (number)              → the record's JCS text (exactly the export line)
 *   merkle    [level, index] (numbers)  → 32-byte complete-subtree hash (level 0 = the record hash)
 *   idx_kind  [kind, seq]               → ''   records by kind
 *   idx_actor [uidKey(actor), seq]      → ''   records whose `actor` field is an entity uid
 *   idx_exec  [execution_id, seq]       → ''   records whose `execution_id` field is a string
 *   idx_corr  [correlationTerm, seq]    → ''   decision records by task id and by trace id (§17)
 *   t_executions | t_approvals | t_entities | t_meta   string key → JSON text
 *   internal  string key → string (format version, readiness probe)
 * Shared by the LMDB store (lmdb/lmdb-store.ts) and by `writ repair`, which opens the same layout without the integrity check.
 *
 * Two formats, marked in `internal` under `format`, share those keys and differ in how values are held:
 *   1  records and table rows as plain UTF-8 text: what a new store gets by default
 *   2  records and table rows LZ4-compressed by lmdb-js against RECORD_DICTIONARY (dictionary.ts), so
 *      a decision costs about half its text: what a new store gets with `store_compression: "lz4"`.
 *      lmdb-js compresses inside the commit, on the ledger writer's thread that every decision passes,
 *      and the smaller records make each commit write more separate pages: it costs decisions/s.
 * A store keeps the format it was made in, whatever the config says later.
 * In both, records are put with MDB_APPEND (LmdbStore.#commit): seqs only grow, and an appended key starts
 * a new page instead of splitting the last one in half, which left one record per 4 KiB page.
 */
import { closeSync, existsSync, mkdirSync, openSync, readSync, fstatSync } from 'node:fs';
import { join } from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';
import { WritError } from '../errors.js';
import { RECORD_DICTIONARY } from './dictionary.js';

export type Table = 'executions' | 'approvals' | 'entities' | 'meta';
export const TABLES: readonly Table[] = ['executions', 'approvals', 'entities', 'meta'];
export type IndexName = 'idx_kind' | 'idx_actor' | 'idx_exec' | 'idx_corr';
export const INDEXES: readonly IndexName[] = ['idx_kind', 'idx_actor', 'idx_exec', 'idx_corr'];

export const STORE_SUBDIR = 'store';
export const FORMAT_KEY = 'format';
/** The format a new store gets unless asked for another (plain text: the writer's thread does no compression). */
export const DEFAULT_FORMAT = '1';
export type StoreFormat = '1' | '2';
export const STORE_FORMATS: readonly string[] = ['1', '2'];
/** Values shorter than this are stored as they are in a format-2 store (too short to gain). */
const COMPRESSION_THRESHOLD = 64;

export type IndexKey = [string, number];
export type NodeKey = [number, number];

export interface StoreDbs {
  env: RootDatabase;
  /** The store's format: its marker, or for a store without one, the format it is being created in. */
  format: StoreFormat;
  records: Database<string, number>;
  merkle: Database<Buffer, NodeKey>;
  indexes: Record<IndexName, Database<string, IndexKey>>;
  tables: Record<Table, Database<string, string>>;
  internal: Database<string, string>;
}

export interface LayoutOptions {
  durability?: 'sync' | 'flushed';
  mapSizeBytes?: number;
  /** The format of a store that has no marker yet (a new one): DEFAULT_FORMAT unless the config asks for '2'. */
  newFormat?: StoreFormat;
}

/** Opens (creating when absent) the store of a data dir. LMDB-level failures become WritErrors. */
export function openStoreDbs(dataDir: string, o: LayoutOptions = {}): StoreDbs {
  const path = join(dataDir, STORE_SUBDIR);
  let env: RootDatabase;
  checkDataFileSize(dataDir, join(path, 'data.mdb'));
  try {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    env = open({
      path,
      // 'sync': every commit is fsync'd before its promise resolves. 'flushed': commits overlap their
      // fsync and the store awaits `env.flushed` before acknowledging.
      overlappingSync: o.durability === 'flushed',
      // The store does its own group commit (one LMDB transaction per batch of writes). lmdb-js's
      // event-turn batching also leaves an internal commit promise without a handler, which turns a
      // failed commit (ENOSPC) into an unhandled rejection that would crash the process.
      eventTurnBatching: false,
      maxDbs: 16,
      ...(o.mapSizeBytes !== undefined ? { mapSize: o.mapSizeBytes } : {}),
    });
  } catch (e) {
    throw lmdbOpenError(dataDir, e);
  }
  try {
    const internal = env.openDB<string, string>({ name: 'internal', encoding: 'string' });
    // An unknown marker opens as format 1 here; LmdbStore.open refuses it (it names the format it found).
    const format: StoreFormat = ((m) => (m === undefined ? (o.newFormat ?? DEFAULT_FORMAT) : m === '2' ? '2' : '1'))(internal.get(FORMAT_KEY));
    // Values of the records and tables: plain text in format 1, LZ4 against the dictionary in format 2.
    // Either way what a reader gets back is the text that was put (lmdb-js decompresses on read).
    const values = { encoding: 'string' as const, ...(format === '2' ? { compression: compressionOf() } : {}) };
    const indexes = {} as Record<IndexName, Database<string, IndexKey>>;
    for (const name of INDEXES) indexes[name] = env.openDB<string, IndexKey>({ name, encoding: 'string' });
    const tables = {} as Record<Table, Database<string, string>>;
    for (const t of TABLES) tables[t] = env.openDB<string, string>({ name: `t_${t}`, ...values });
    return {
      env,
      format,
      records: env.openDB<string, number>({ name: 'records', ...values }),
      merkle: env.openDB<Buffer, NodeKey>({ name: 'merkle', encoding: 'binary' }),
      indexes,
      tables,
      internal,
    };
  } catch (e) {
    void env.close();
    throw lmdbOpenError(dataDir, e);
  }
}

/**
 * Puts a record after the last one stored with MDB_APPEND, so full pages stay full (LMDB otherwise
 * splits the last page in half). The seq must be greater than every stored one, as a chain's next is;
 * lmdb-js takes the flag in an options object its put() types do not declare.
 */
export function appendRecord(dbs: StoreDbs, seq: number, text: string): void {
  // Inside a write transaction lmdb-js writes at once and throws on failure; the promise only reports an
  // ifVersion condition, which this put does not set.
  void (dbs.records.put as (key: number, value: string, options: { append: boolean }) => Promise<boolean>).call(dbs.records, seq, text, { append: true });
}

/** lmdb-js compression settings of a format-2 store (one object per open: it holds a decompression buffer). */
function compressionOf(): { threshold: number; dictionary: Buffer } {
  return { threshold: COMPRESSION_THRESHOLD, dictionary: RECORD_DICTIONARY };
}

function lmdbOpenError(dataDir: string, e: unknown): WritError {
  const message = (e as Error)?.message ?? String(e);
  // LMDB's own words for a file that is not (or no longer) a valid environment.
  if (/MDB_INVALID|MDB_CORRUPTED|MDB_VERSION_MISMATCH|MDB_PAGE_NOTFOUND|not an LMDB/i.test(message)) {
    return new WritError('STORE_CORRUPT', `store in ${dataDir} is corrupt: ${message}`, { details: { seq: null }, cause: e });
  }
  return new WritError('STORE_UNAVAILABLE', `cannot open the store in ${dataDir}: ${message}`, { cause: e });
}

/** The index entries a record gets: kind always; actor when it is an entity uid; execution_id when a string. */
export function indexTermsOf(record: Record<string, unknown>, uidKeyOf: (u: { type: string; id: string }) => string): Array<[IndexName, string]> {
  const out: Array<[IndexName, string]> = [['idx_kind', String(record.kind)]];
  const actor = record.actor as { type?: unknown; id?: unknown } | null | undefined;
  if (actor && typeof actor === 'object' && typeof actor.type === 'string' && typeof actor.id === 'string') {
    out.push(['idx_actor', uidKeyOf({ type: actor.type, id: actor.id })]);
  }
  if (typeof record.execution_id === 'string') out.push(['idx_exec', record.execution_id]);
  const env = record.envelope as { task_id?: unknown } | null | undefined;
  if (env && typeof env === 'object' && typeof env.task_id === 'string') out.push(['idx_corr', correlationTerm('task_id', env.task_id)]);
  if (typeof record.trace_id === 'string') out.push(['idx_corr', correlationTerm('trace_id', record.trace_id)]);
  return out;
}

/** The correlation index's term of a task id or a trace id (one index, two namespaces). */
export function correlationTerm(field: 'task_id' | 'trace_id', value: string): string {
  return `${field}\n${value}`;
}

/** Whether a record has the task id / trace id a listing asks for (the index may hold a digest of a long term). */
export function correlationMatches(record: Record<string, unknown>, q: { task_id?: string; trace_id?: string }): boolean {
  const env = record.envelope as { task_id?: unknown } | null | undefined;
  return (
    (q.task_id === undefined || (env !== null && typeof env === 'object' && env.task_id === q.task_id)) &&
    (q.trace_id === undefined || record.trace_id === q.trace_id)
  );
}

/** Attaches a handler to lmdb-js's `commitError` promise so a failed commit is not also an unhandled rejection. */
export function settleCommitError(e: unknown): void {
  const ce = (e as { commitError?: unknown } | null)?.commitError as Promise<unknown> | undefined;
  if (ce && typeof ce.catch === 'function') ce.catch(() => undefined);
}

/** The LMDB data file of a data dir's store. */
export function dataFileOf(dataDir: string): string {
  return join(dataDir, STORE_SUBDIR, 'data.mdb');
}

/**
 * For commands that work on a store that must already be there (`writ repair`, `writ keys rotate`): a
 * mistyped --data-dir is refused, rather than a new, empty store created at the wrong place.
 */
export function requireExistingStore(dataDir: string): void {
  if (!existsSync(dataFileOf(dataDir))) {
    throw new WritError('STORE_UNAVAILABLE', `no store in ${dataDir} (${STORE_SUBDIR}/data.mdb is missing): check --data-dir`);
  }
}

/**
 * LMDB maps data.mdb and reads pages in place: a file shorter than its newest meta page says kills the
 * process with SIGBUS on first read. Refuse such a file before mapping it. Meta pages are pages 0 and 1;
 * in each, at byte 24 (after the 24-byte page header): u32 magic 0xBEEFC0DE, u32 version, u64 address,
 * u64 mapsize, 2 × 48-byte MDB_db (the first's u32 md_pad is the page size), u64 last_pg, u64 txnid.
 */
function checkDataFileSize(dataDir: string, file: string): void {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return; // absent: LMDB creates it
  }
  try {
    const size = fstatSync(fd).size;
    const head = Buffer.alloc(160);
    const bad = (why: string) => new WritError('STORE_CORRUPT', `store in ${dataDir} is corrupt: data.mdb ${why}`, { details: { seq: null } });
    if (size === 0) return;
    if (readSync(fd, head, 0, 160, 0) < 160 || head.readUInt32LE(24) !== 0xbeefc0de) throw bad('has no LMDB meta page');
    const psize = head.readUInt32LE(48);
    if (psize < 512 || psize > 65536 || size < 2 * psize) throw bad(`is truncated (${size} bytes)`);
    let need = 0;
    let best = -1n;
    for (const page of [0, 1]) {
      const m = Buffer.alloc(160);
      readSync(fd, m, 0, 160, page * psize);
      if (m.readUInt32LE(24) !== 0xbeefc0de) continue;
      const txnid = m.readBigUInt64LE(152);
      if (txnid > best) {
        best = txnid;
        need = (Number(m.readBigUInt64LE(144)) + 1) * psize;
      }
    }
    if (size < need) throw bad(`is truncated: ${size} bytes, its meta page needs ${need}`);
  } finally {
    closeSync(fd);
  }
}
