/**
 * `writ store copy` (docs/protocol.md §9): an LMDB data dir's ledger and state into an empty PostgreSQL
 * database (no writ schema, or a migrated one holding no record), in ONE transaction, every record
 * text (hence every hash) and every Merkle node unchanged, so a deployment moves from one sidecar to
 * replicas without breaking its chain. A database holding records or state is refused. The data dir
 * is locked for the copy (its server must be stopped) and its chain tail checked first.
 */
import { existsSync } from 'node:fs';
import type pg from 'pg';
import { WritError } from '../../errors.js';
import type { LedgerRecord } from '../../ledger/record.js';
import { entitiesVersionOf, type EntityJson } from '../../policy/entities.js';
import { checkIntegrity } from '../lmdb/integrity.js';
import { dataFileOf, openStoreDbs, TABLES } from '../layout.js';
import { INSERT_RECORDS, insertRecordsParams, recordColumns, stateValueParams, type RecordColumns } from './columns.js';
import { lockDataDir } from '../lock.js';
import { PgStore, redactUrl } from './pg-store.js';
import { migrate } from './schema.js';

const CHUNK = 2000;

export interface CopyReport {
  records: number;
  head: string;
  merkle_nodes: number;
  rows: number;
}

export async function copyLmdbToPostgres(dataDir: string, url: string): Promise<CopyReport> {
  // Checked before the lock and the open, which would create files: a wrong path must leave no trace,
  // in the directory or in the database.
  if (!existsSync(dataDir)) throw new WritError('INVALID_REQUEST', `data dir ${dataDir} does not exist`);
  if (!existsSync(dataFileOf(dataDir)))
    throw new WritError('INVALID_REQUEST', `data dir ${dataDir} holds no writ store (no ${dataFileOf(dataDir)}): nothing to copy`);
  const lock = await lockDataDir(dataDir);
  const dbs = openStoreDbs(dataDir);
  // One long copy transaction, its process reading LMDB between statements: not the 5-s idle limit of serving.
  const pool = PgStore.createPool({ url, connectTimeoutMs: 5000, writeTimeoutMs: 600_000, idleInTransactionTimeoutMs: 600_000 });
  try {
    const { size, head } = checkIntegrity(dbs, dataDir);
    // A store with no record has no ledger to carry over; copying its state alone would only make the
    // database non-empty and refuse the real copy.
    if (size === 0) throw new WritError('INVALID_REQUEST', `the store in ${dataDir} holds no record: nothing to copy`);
    const client = await connectOrUnavailable(pool, url);
    try {
      const packed = (await migrate(client)) >= 2;
      await client.query('BEGIN');
      const lockedHead = await client.query<{ size: string }>('SELECT size FROM ledger_head WHERE id = 1 FOR UPDATE');
      const held = await client.query<{ n: string }>(
        'SELECT (SELECT count(*) FROM records) + (SELECT count(*) FROM state) + (SELECT count(*) FROM merkle) AS n',
      );
      if (Number(lockedHead.rows[0]?.size ?? 0) !== 0 || Number(held.rows[0]!.n) !== 0) {
        throw new WritError('INVALID_REQUEST', `${redactUrl(url)} already holds a writ ledger or state; store copy only fills an empty database`);
      }
      // Records: the stored JCS text as is (the hash is inside it), with the index columns.
      let batch: Array<{ seq: number; text: string } & RecordColumns> = [];
      const flushRecords = async () => {
        if (batch.length === 0) return;
        await client.query(INSERT_RECORDS, insertRecordsParams(batch, packed));
        batch = [];
      };
      let lastKey: LedgerRecord | undefined;
      let lastCheckpoint: LedgerRecord | undefined;
      let lastPolicy: LedgerRecord | undefined;
      for (const { key: seq, value: text } of dbs.records.getRange({ start: 0, end: size })) {
        const r = JSON.parse(text) as LedgerRecord;
        if (r.kind === 'key') lastKey = r;
        if (r.kind === 'checkpoint') lastCheckpoint = r;
        if (r.kind === 'policy' && r.result === 'loaded') lastPolicy = r;
        batch.push({ seq, text, ...recordColumns(r) });
        if (batch.length >= CHUNK) await flushRecords();
      }
      await flushRecords();
      let nodes: Array<[number, number, Buffer]> = [];
      let nodeCount = 0;
      const flushNodes = async () => {
        if (nodes.length === 0) return;
        await client.query('INSERT INTO merkle (level, idx, hash) SELECT * FROM unnest($1::int[], $2::bigint[], $3::bytea[])', [
          nodes.map((n) => n[0]),
          nodes.map((n) => n[1]),
          nodes.map((n) => n[2]),
        ]);
        nodeCount += nodes.length;
        nodes = [];
      };
      for (const { key, value } of dbs.merkle.getRange({})) {
        nodes.push([key[0], key[1], Buffer.from(value)]);
        if (nodes.length >= CHUNK) await flushNodes();
      }
      await flushNodes();
      // State tables, plus the meta rows replicas check inside their writes (see entity-cache.ts,
      // checkpointer.ts, keys.ts, pdp/policy-reload.ts).
      const rows: Array<[string, string, string]> = [];
      const entities: EntityJson[] = [];
      for (const t of TABLES) {
        for (const { key, value } of dbs.tables[t].getRange({})) {
          rows.push([t, key, value]);
          if (t === 'entities') entities.push(JSON.parse(value) as EntityJson);
        }
      }
      const meta = new Map<string, unknown>();
      meta.set('entities_version', entitiesVersionOf(entities));
      if (lastKey) meta.set('ledger_key', { key_id: lastKey.key_id, public_key: lastKey.public_key });
      if (lastCheckpoint) meta.set('checkpoint_end', lastCheckpoint.seq + 1);
      if (lastPolicy) meta.set('policy_version', lastPolicy.policy_version);
      for (const [k, v] of meta) {
        const i = rows.findIndex((r) => r[0] === 'meta' && r[1] === k);
        if (i >= 0) rows.splice(i, 1);
        rows.push(['meta', k, JSON.stringify(v)]);
      }
      for (let i = 0; i < rows.length; i += CHUNK) {
        const part = rows.slice(i, i + CHUNK);
        await client.query('INSERT INTO state (tbl, key, value, packed) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[])', [
          part.map((r) => r[0]),
          part.map((r) => r[1]),
          ...stateValueParams(
            part.map((r) => r[2]),
            packed,
          ),
        ]);
      }
      await client.query('UPDATE ledger_head SET size = $1, head = $2 WHERE id = 1', [size, head]);
      await client.query('COMMIT');
      return { records: size, head, merkle_nodes: nodeCount, rows: rows.length };
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      client.release();
    }
  } finally {
    await pool.end().catch(() => undefined);
    await dbs.env.close().catch(() => undefined);
    lock.release();
  }
}

/** `writ store migrate`: creates or migrates the schema and returns its version. */
export async function migrateDatabase(url: string): Promise<number> {
  const pool = PgStore.createPool({ url, connectTimeoutMs: 5000 });
  try {
    const client = await connectOrUnavailable(pool, url);
    try {
      return await migrate(client);
    } finally {
      client.release();
    }
  } finally {
    await pool.end().catch(() => undefined);
  }
}

/** One client of `pool`, or STORE_UNAVAILABLE naming the (redacted) URL it could not reach. */
async function connectOrUnavailable(pool: pg.Pool, url: string): Promise<pg.PoolClient> {
  try {
    return await pool.connect();
  } catch (e) {
    throw new WritError('STORE_UNAVAILABLE', `cannot connect to ${redactUrl(url)}: ${(e as Error).message}`);
  }
}
