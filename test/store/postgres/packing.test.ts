// How a PostgreSQL store holds texts (src/store/postgres/schema.ts, packing.ts): a new database is schema 2
// and packs every record text and state row, giving each back byte for byte; a schema-1 database (as an
// earlier writ made it) opens, reads its plain rows, keeps writing plain rows and stays schema 1, so
// replicas of the earlier writ keep working on it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { PgStore } from '../../../src/store/postgres/pg-store.js';
import { recordLine, ZERO_HASH } from '../../../src/ledger/record.js';
import { WritError } from '../../../src/errors.js';
import { sharedPostgres } from '../../helpers/postgres.js';

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

/** Records of several shapes (short, long, non-ASCII) and a state row beside each. */
async function writeSome(store: PgStore, from: number, count: number): Promise<string[]> {
  const lines: string[] = [];
  for (let i = from; i < from + count; i++) {
    const fields =
      i % 3 === 0
        ? { kind: 'decision', actor: { type: 'Agent', id: `a-${i}` }, execution_id: `E-${i}`, decision: 'allow', note: 'é\u2028 東京 🙂 "\\' }
        : i % 3 === 1
          ? { kind: 'entity', attrs: { blob: 'z'.repeat(20_000 + i) } }
          : { kind: 'k' };
    const a = await store.write((tx) => {
      tx.put('executions', `key-${i}`, { execution_id: `E-${i}`, state: 'proposed', n: i });
      return tx.append(fields);
    });
    lines.push(recordLine(a.record));
  }
  return lines;
}

async function query<R extends pg.QueryResultRow>(url: string, sql: string): Promise<R[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<R>(sql)).rows;
  } finally {
    await c.end();
  }
}

test('a new database is schema 2: records and rows are stored packed and read back byte for byte', async () => {
  const url = await (await sharedPostgres()).createDatabase();
  const store = await PgStore.open({ url });
  try {
    const lines = await writeSome(store, 0, 12);
    assert.deepEqual(await collect(store.exportLines()), lines);
    for (const [seq, line] of lines.entries()) assert.equal(recordLine((await store.getRecord(seq))!), line);
    assert.deepEqual(
      (await store.listRecords({ kind: 'decision' })).records.map(recordLine),
      lines.filter((l) => l.includes('"kind":"decision"')),
    );
    assert.deepEqual(await store.get('executions', 'key-4'), { execution_id: 'E-4', state: 'proposed', n: 4 });
    assert.equal((await collect(store.entries('executions'))).length, 12);
  } finally {
    await store.close();
  }
  const [schema] = await query<{ version: number }>(url, 'SELECT version FROM writ_schema');
  assert.equal(schema!.version, 2);
  const [rows] = await query<{ plain: string; packed: string; plain_values: string }>(
    url,
    `SELECT count(text) AS plain, count(packed) AS packed, (SELECT count(value) FROM state) AS plain_values FROM records`,
  );
  assert.equal(Number(rows!.plain), 0, 'no plain text in a schema-2 database');
  assert.equal(Number(rows!.plain_values), 0, 'no plain state value either');
  assert.equal(Number(rows!.packed), 12);
});

test('a schema-1 database opens, reads rows an earlier writ wrote, writes plain rows, and stays schema 1', async () => {
  const url = await (await sharedPostgres()).createDatabase();
  // The schema as writ made it before schema 2, and a record and a row written as that writ wrote them.
  const earlier = `{"hash":"sha256:${'1'.repeat(64)}","kind":"k","prev":"${ZERO_HASH}","seq":0,"ts":"2026-01-01T00:00:00.000Z","v":1}`;
  await query(
    url,
    `CREATE TABLE writ_schema (id int PRIMARY KEY CHECK (id = 1), version int NOT NULL);
     CREATE TABLE ledger_head (id int PRIMARY KEY CHECK (id = 1), size bigint NOT NULL, head text NOT NULL);
     CREATE TABLE records (seq bigint PRIMARY KEY CHECK (seq >= 0), text text NOT NULL, kind text COLLATE "C" NOT NULL,
       actor text COLLATE "C", execution_id text COLLATE "C", task_id text COLLATE "C", trace_id text COLLATE "C");
     CREATE TABLE merkle (level int NOT NULL, idx bigint NOT NULL, hash bytea NOT NULL CHECK (length(hash) = 32), PRIMARY KEY (level, idx));
     CREATE TABLE state (tbl text COLLATE "C" NOT NULL, key text COLLATE "C" NOT NULL, value text NOT NULL, PRIMARY KEY (tbl, key));
     INSERT INTO writ_schema VALUES (1, 1);
     INSERT INTO ledger_head VALUES (1, 0, '${ZERO_HASH}');
     INSERT INTO records (seq, text, kind) VALUES (100, '${earlier}', 'k');
     INSERT INTO state VALUES ('executions', 'old', '{"execution_id":"old"}');`,
  );
  const store = await PgStore.open({ url });
  try {
    assert.deepEqual(await store.get('executions', 'old'), { execution_id: 'old' }, 'a plain row of the earlier writ');
    const lines = await writeSome(store, 0, 6);
    assert.deepEqual(await collect(store.exportLines()), lines);
    assert.deepEqual(await store.get('executions', 'key-3'), { execution_id: 'E-3', state: 'proposed', n: 3 });
  } finally {
    await store.close();
  }
  const [schema] = await query<{ version: number }>(url, 'SELECT version FROM writ_schema');
  assert.equal(schema!.version, 1, 'an existing database keeps its schema');
  const plain = await query<{ seq: string; text: string | null; packed: Buffer | null }>(url, 'SELECT seq, text, packed FROM records ORDER BY seq');
  assert.ok(
    plain.every((r) => r.text !== null && r.packed === null),
    'every record is plain text, readable by the earlier writ',
  );
  assert.equal(plain.at(-1)!.text, earlier);
  const [rows] = await query<{ n: string }>(url, 'SELECT count(*) AS n FROM state WHERE value IS NULL OR packed IS NOT NULL');
  assert.equal(Number(rows!.n), 0, 'every state row is plain');
});

test('a database of a newer schema is refused as STORE_CORRUPT', async () => {
  const url = await (await sharedPostgres()).createDatabase();
  await (await PgStore.open({ url })).close();
  await query(url, 'UPDATE writ_schema SET version = 99');
  await assert.rejects(PgStore.open({ url }), (e: unknown) => e instanceof WritError && e.code === 'STORE_CORRUPT' && /schema 99/.test(e.message));
});
