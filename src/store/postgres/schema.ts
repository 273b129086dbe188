/**
 * The PostgreSQL schema of a shared store (docs/protocol.md §9), created or migrated idempotently. Replicas
 * that start together serialise on a transaction-scoped advisory lock, so exactly one of them creates
 * the tables and the others find them done.
 *
 *   writ_schema   (version)                        the schema version this writ wrote
 *   ledger_head   (id=1, size, head)               the one row every writer locks (FOR UPDATE): it
 *                                                  serialises all writers of all replicas, so seq and
 *                                                  prev are assigned gap-free in one chain
 *   records       (seq PK, text | packed, kind, actor, execution_id, task_id, trace_id)
 *                                                  text = the record's JCS (the export line)
 *   merkle        (level, idx) PK → hash (32 bytes)            complete subtree hashes, immutable
 *   state         (tbl, key) PK → value | packed (JSON text)   executions, approvals, entities, meta
 *
 * Schema 2 (new databases) writes a record's text and a row's value DEFLATE-packed in `packed`, the
 * plain column NULL (packing.ts); schema 1 (databases made before it) writes them plain, so replicas
 * of an earlier writ keep working on it. The database keeps the version it was created with, and a
 * writ refuses a version newer than it knows.
 */
import type pg from 'pg';
import { WritError } from '../../errors.js';
import { ZERO_HASH } from '../../ledger/record.js';

/** The schema new databases get. */
export const SCHEMA_VERSION = 2;
/** Key of the advisory lock held while migrating (any constant; 'writ' in ASCII). */
const MIGRATION_LOCK = 0x77726974;

const DDL = [
  `CREATE TABLE IF NOT EXISTS writ_schema (id int PRIMARY KEY CHECK (id = 1), version int NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS ledger_head (id int PRIMARY KEY CHECK (id = 1), size bigint NOT NULL, head text NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS records (
     seq bigint PRIMARY KEY CHECK (seq >= 0),
     text text,
     packed bytea,
     kind text COLLATE "C" NOT NULL,
     actor text COLLATE "C",
     execution_id text COLLATE "C")`,
  `CREATE INDEX IF NOT EXISTS records_by_kind ON records (kind, seq)`,
  `CREATE INDEX IF NOT EXISTS records_by_actor ON records (actor, seq) WHERE actor IS NOT NULL`,
  `CREATE INDEX IF NOT EXISTS records_by_execution ON records (execution_id, seq) WHERE execution_id IS NOT NULL`,
  `CREATE TABLE IF NOT EXISTS merkle (level int NOT NULL, idx bigint NOT NULL, hash bytea NOT NULL CHECK (length(hash) = 32), PRIMARY KEY (level, idx))`,
  `CREATE TABLE IF NOT EXISTS state (tbl text COLLATE "C" NOT NULL, key text COLLATE "C" NOT NULL, value text, packed bytea, PRIMARY KEY (tbl, key))`,
];

/**
 * The `packed` columns, added to a schema-1 database in place (it stays schema 1 and keeps writing the
 * plain columns; the ALTERs only let this writ read either). Run only when missing, as CORRELATION_DDL.
 */
const PACKED_DDL = [
  `ALTER TABLE records ADD COLUMN IF NOT EXISTS packed bytea`,
  `ALTER TABLE records ALTER COLUMN text DROP NOT NULL`,
  `ALTER TABLE state ADD COLUMN IF NOT EXISTS packed bytea`,
  `ALTER TABLE state ALTER COLUMN value DROP NOT NULL`,
];

/**
 * §17 correlation columns, added to a schema-1 database in place (nullable, so a replica of an earlier
 * writ on the same database keeps working; its records are simply not indexed by them). Run only when
 * missing: ALTER TABLE locks `records` against every reader, which replicas already serving must not wait on.
 */
const CORRELATION_DDL = [
  `ALTER TABLE records ADD COLUMN IF NOT EXISTS task_id text COLLATE "C"`,
  `ALTER TABLE records ADD COLUMN IF NOT EXISTS trace_id text COLLATE "C"`,
  `CREATE INDEX IF NOT EXISTS records_by_task ON records (task_id, seq) WHERE task_id IS NOT NULL`,
  `CREATE INDEX IF NOT EXISTS records_by_trace ON records (trace_id, seq) WHERE trace_id IS NOT NULL`,
];

/**
 * Creates or migrates the schema; safe to run from many processes at once. Returns the database's
 * version: SCHEMA_VERSION for a new database, the version it has for an existing one.
 */
export async function migrate(client: pg.ClientBase): Promise<number> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    let version = SCHEMA_VERSION;
    const exists = await client.query<{ t: string | null }>(`SELECT to_regclass('writ_schema')::text AS t`);
    if (exists.rows[0]?.t) {
      const found = await client.query<{ version: number }>(`SELECT version FROM writ_schema WHERE id = 1`);
      version = found.rows[0]?.version ?? SCHEMA_VERSION;
      checkVersion(version);
    }
    for (const statement of DDL) await client.query(statement);
    const columns = await client.query<{ n: string }>(
      `SELECT count(*) AS n FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'records' AND column_name IN ('task_id', 'trace_id')`,
    );
    if (Number(columns.rows[0]?.n) !== 2) for (const statement of CORRELATION_DDL) await client.query(statement);
    const packed = await client.query<{ n: string }>(
      `SELECT count(*) AS n FROM information_schema.columns WHERE table_schema = current_schema() AND table_name IN ('records', 'state') AND column_name = 'packed'`,
    );
    if (Number(packed.rows[0]?.n) !== 2) for (const statement of PACKED_DDL) await client.query(statement);
    await client.query(`INSERT INTO ledger_head (id, size, head) VALUES (1, 0, $1) ON CONFLICT (id) DO NOTHING`, [ZERO_HASH]);
    await client.query(`INSERT INTO writ_schema (id, version) VALUES (1, $1) ON CONFLICT (id) DO NOTHING`, [version]);
    await client.query('COMMIT');
    return version;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

/** The version of a database opened without migrating it (`migrate: false`). */
export async function schemaVersion(client: pg.ClientBase | pg.Pool): Promise<number> {
  const found = await client.query<{ version: number }>(`SELECT version FROM writ_schema WHERE id = 1`);
  const version = found.rows[0]?.version;
  if (version === undefined)
    throw new WritError('STORE_CORRUPT', 'the database has no writ schema version (run writ store migrate)', { details: { seq: null } });
  checkVersion(version);
  return version;
}

function checkVersion(version: number): void {
  if (version > SCHEMA_VERSION) {
    throw new WritError('STORE_CORRUPT', `the database has writ schema ${version}; this writ knows schema ${SCHEMA_VERSION}`, { details: { seq: null } });
  }
}
