/**
 * The PostgreSQL schema of a shared store (docs/protocol.md §9), created or migrated idempotently. Replicas
 * that start together serialise on a transaction-scoped advisory lock, so exactly one of them creates
 * the tables and the others find them done.
 *
 *   writ_schema   (version)                        the schema version this writ wrote
 *   ledger_head   (id=1, size, head)               the one row every writer locks (FOR UPDATE): it
 *                                                  serialises all writers of all replicas, so seq and
 *                                                  prev are assigned gap-free in one chain
 *   records       (seq PK, text, kind, actor, execution_id)   text = the record's JCS (the export line)
 *   merkle        (level, idx) PK → hash (32 bytes)            complete subtree hashes, immutable
 *   state         (tbl, key) PK → value (JSON text)            executions, approvals, entities, meta
 */
import type pg from 'pg';
import { WritError } from '../../errors.js';
import { ZERO_HASH } from '../../ledger/record.js';

export const SCHEMA_VERSION = 1;
/** Key of the advisory lock held while migrating (any constant; 'writ' in ASCII). */
const MIGRATION_LOCK = 0x77726974;

const DDL = [
  `CREATE TABLE IF NOT EXISTS writ_schema (id int PRIMARY KEY CHECK (id = 1), version int NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS ledger_head (id int PRIMARY KEY CHECK (id = 1), size bigint NOT NULL, head text NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS records (
     seq bigint PRIMARY KEY CHECK (seq >= 0),
     text text NOT NULL,
     kind text COLLATE "C" NOT NULL,
     actor text COLLATE "C",
     execution_id text COLLATE "C")`,
  `CREATE INDEX IF NOT EXISTS records_by_kind ON records (kind, seq)`,
  `CREATE INDEX IF NOT EXISTS records_by_actor ON records (actor, seq) WHERE actor IS NOT NULL`,
  `CREATE INDEX IF NOT EXISTS records_by_execution ON records (execution_id, seq) WHERE execution_id IS NOT NULL`,
  `CREATE TABLE IF NOT EXISTS merkle (level int NOT NULL, idx bigint NOT NULL, hash bytea NOT NULL CHECK (length(hash) = 32), PRIMARY KEY (level, idx))`,
  `CREATE TABLE IF NOT EXISTS state (tbl text COLLATE "C" NOT NULL, key text COLLATE "C" NOT NULL, value text NOT NULL, PRIMARY KEY (tbl, key))`,
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

/** Creates or migrates the schema; safe to run from many processes at once. Returns the version. */
export async function migrate(client: pg.ClientBase): Promise<number> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    const exists = await client.query<{ t: string | null }>(`SELECT to_regclass('writ_schema')::text AS t`);
    if (exists.rows[0]?.t) {
      const found = await client.query<{ version: number }>(`SELECT version FROM writ_schema WHERE id = 1`);
      const version = found.rows[0]?.version;
      if (version !== undefined && version > SCHEMA_VERSION) {
        throw new WritError('STORE_CORRUPT', `the database has writ schema ${version}; this writ knows schema ${SCHEMA_VERSION}`, { details: { seq: null } });
      }
    }
    for (const statement of DDL) await client.query(statement);
    const columns = await client.query<{ n: string }>(
      `SELECT count(*) AS n FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'records' AND column_name IN ('task_id', 'trace_id')`,
    );
    if (Number(columns.rows[0]?.n) !== 2) for (const statement of CORRELATION_DDL) await client.query(statement);
    await client.query(`INSERT INTO ledger_head (id, size, head) VALUES (1, 0, $1) ON CONFLICT (id) DO NOTHING`, [ZERO_HASH]);
    await client.query(`INSERT INTO writ_schema (id, version) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version`, [SCHEMA_VERSION]);
    await client.query('COMMIT');
    return SCHEMA_VERSION;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
}
