// Which failures to open the PostgreSQL store a starting replica waits out (docs/protocol.md §9,
// src/server/waiting.ts): a database that is down or unreachable, yes; one that answers and refuses
// (no such database), no: that is a configuration error and the start still fails at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { isUnreachableDatabase } from '../../src/server/waiting.js';
import { WritError } from '../../src/errors.js';
import { freePort, sharedPostgres } from '../helpers/postgres.js';

async function openError(url: string): Promise<unknown> {
  try {
    const s = await PgStore.open({ url, connectTimeoutMs: 1000 });
    await s.close();
  } catch (e) {
    return e;
  }
  assert.fail('the store opened');
}

test('a database nobody listens for is waited for; a database that does not exist is not', async () => {
  const port = await freePort();
  assert.equal(isUnreachableDatabase(await openError(`postgres://postgres@127.0.0.1:${port}/db`)), true, 'connection refused');
  const pg = await sharedPostgres();
  assert.equal(isUnreachableDatabase(await openError(pg.url('no_such_database_here'))), false, 'no such database (3D000)');
});

test('only STORE_UNAVAILABLE with a connection-level cause counts', () => {
  const withCause = (code: string | undefined, message = 'x') =>
    new WritError('STORE_UNAVAILABLE', 'cannot open', { cause: Object.assign(new Error(message), code ? { code } : {}) });
  for (const code of ['ECONNREFUSED', 'ETIMEDOUT', 'EHOSTUNREACH', '57P03', '08006']) assert.equal(isUnreachableDatabase(withCause(code)), true, code);
  for (const code of ['28P01', '28000', '3D000', '42501']) assert.equal(isUnreachableDatabase(withCause(code)), false, code);
  assert.equal(isUnreachableDatabase(withCause(undefined, 'timeout expired')), true, "the driver's connect timeout");
  assert.equal(isUnreachableDatabase(new WritError('STORE_CORRUPT', 'x')), false);
  assert.equal(isUnreachableDatabase(new Error('ECONNREFUSED')), false);
});
