/**
 * The PostgreSQL store's own properties (docs/protocol.md §9) beside the shared contract suite: the schema
 * migration is idempotent and safe when many processes run it at once, and an unreachable database
 * fails fast and closed (STORE_UNAVAILABLE), never hangs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { migrate, SCHEMA_VERSION } from '../../../src/store/postgres/schema.js';
import { PgStore } from '../../../src/store/postgres/pg-store.js';
import { WritError } from '../../../src/errors.js';
import { freePort, sharedPostgres } from '../../helpers/postgres.js';

test('migration: eight concurrent runs on a fresh database all succeed, and leave one schema', async () => {
  const url = await (await sharedPostgres()).createDatabase();
  const clients = Array.from({ length: 8 }, () => new pg.Client({ connectionString: url }));
  await Promise.all(clients.map((c) => c.connect()));
  try {
    const versions = await Promise.all(clients.map((c) => migrate(c)));
    assert.deepEqual(versions, Array(8).fill(SCHEMA_VERSION));
    assert.equal(await migrate(clients[0]!), SCHEMA_VERSION, 'again: a no-op');
    const head = await clients[0]!.query('SELECT size FROM ledger_head');
    assert.equal(head.rows.length, 1);
    assert.equal(Number(head.rows[0].size), 0);
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
});

test('an unreachable database: open refuses with STORE_UNAVAILABLE quickly', async () => {
  const port = await freePort();
  await assert.rejects(
    PgStore.open({ url: `postgres://postgres@127.0.0.1:${port}/none`, connectTimeoutMs: 1000 }),
    (e: unknown) => e instanceof WritError && e.code === 'STORE_UNAVAILABLE',
  );
});

test('a database that goes away: writes and reads reject STORE_UNAVAILABLE, writable() is false, and the same store recovers', async () => {
  const server = await sharedPostgres();
  const store = await PgStore.open({ url: await server.createDatabase(), connectTimeoutMs: 1000 });
  try {
    await store.write((tx) => tx.append({ kind: 'before' }));
    server.pause();
    try {
      await assert.rejects(
        store.write((tx) => tx.append({ kind: 'during' })),
        (e: unknown) => e instanceof WritError && e.code === 'STORE_UNAVAILABLE',
      );
      await assert.rejects(Promise.resolve(store.size()), (e: unknown) => e instanceof WritError && e.code === 'STORE_UNAVAILABLE');
      assert.equal(await store.writable(), false);
    } finally {
      server.resume();
    }
    const after = await store.write((tx) => tx.append({ kind: 'after' }));
    assert.equal(after.seq, 1, 'nothing of the failed write landed');
    assert.equal(await store.writable(), true);
  } finally {
    await store.close();
  }
});

test('a replica frozen inside a transaction (the head row locked, then silent) holds the other replicas for about 5 s, not for ever', async () => {
  const url = await (await sharedPostgres()).createDatabase();
  const store = await PgStore.open({ url });
  // A writ connection, as a replica's, that took the lock every writer takes first and then stopped
  // (SIGSTOP, a VM pause, a network cut with the TCP connection still open).
  const frozenPool = PgStore.createPool({ url });
  const frozen = await frozenPool.connect();
  try {
    await store.write((tx) => tx.append({ kind: 'before' }));
    await frozen.query('BEGIN');
    await frozen.query('SELECT size FROM ledger_head WHERE id = 1 FOR UPDATE');
    // Without the idle-in-transaction limit this write waits for the lock until its own 10-s timeout
    // and fails STORE_UNAVAILABLE; with it, PostgreSQL ends the frozen session and the write commits.
    const appended = await store.write((tx) => tx.append({ kind: 'after' }));
    assert.equal(appended.seq, 1);
    await assert.rejects(frozen.query('SELECT 1'), 'the frozen session was ended by the server');
  } finally {
    frozen.release(true);
    await frozenPool.end().catch(() => undefined);
    await store.close();
  }
});
