/**
 * The one proof code (src/store/proofs.ts) over both backends, from a store opened cold on a ledger
 * another store wrote: every node is fetched (PostgreSQL: one query per proof for the nodes not
 * cached), and roots and proofs equal the in-memory tree's.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { LmdbStore } from '../../src/store/lmdb/lmdb-store.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import type { LedgerStore } from '../../src/store/types.js';
import { WritError } from '../../src/errors.js';
import { consistencyProof } from '../../src/ledger/merkle/consistency.js';
import { bytesToHash, hashToBytes } from '../../src/ledger/merkle/hasher.js';
import { inclusionProof } from '../../src/ledger/merkle/inclusion.js';
import { memoryReader, rootAt } from '../../src/ledger/merkle/tree.js';
import { sharedPostgres } from '../helpers/postgres.js';

const SIZE = 70;
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A place for a ledger, and how to open a store on it. */
const backends: Array<[string, () => Promise<() => Promise<LedgerStore>>]> = [
  [
    'lmdb',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'writ-proofs-'));
      dirs.push(dir);
      return () => LmdbStore.open({ dataDir: dir });
    },
  ],
  [
    'postgres',
    async () => {
      const url = await (await sharedPostgres()).createDatabase();
      return () => PgStore.open({ url });
    },
  ],
];

/** The code a store call fails with (synchronously on LMDB, as a rejection on PostgreSQL), or 'answered'. */
const codeOf = async (call: () => unknown): Promise<string> => {
  try {
    await call();
  } catch (e) {
    return e instanceof WritError ? e.code : String(e);
  }
  return 'answered';
};

for (const [name, place] of backends) {
  describe(`store proofs: ${name}`, () => {
    test('roots and proofs from a cold store equal the in-memory tree, and requests outside it are INVALID_REQUEST', async () => {
      const open = await place();
      const writer = await open();
      for (let i = 0; i < SIZE; i += 10)
        await writer.write((tx) => {
          for (let k = i; k < i + 10; k++) tx.append({ kind: 'note', k });
        });
      await writer.close();
      const store = await open();
      try {
        const leaves: Buffer[] = [];
        for (let s = 0; s < SIZE; s++) leaves.push(hashToBytes((await store.getRecord(s))!.hash));
        const mem = memoryReader(leaves);
        const hex = (bs: Buffer[]) => bs.map((b) => b.toString('hex'));
        for (let n = 0; n <= SIZE; n++) assert.equal(await store.root(n), bytesToHash(rootAt(n, mem)), `root ${n}`);
        assert.equal(await store.root(), bytesToHash(rootAt(SIZE, mem)));
        for (const [seq, size] of [
          [0, 1],
          [5, 8],
          [6, 7],
          [13, 70],
          [69, 70],
          [40, 41],
        ] as const) {
          assert.deepEqual(await store.inclusionProof(seq, size), hex(inclusionProof(seq, size, mem)), `inclusion ${seq}/${size}`);
        }
        for (const [m, n] of [
          [0, 70],
          [1, 70],
          [6, 7],
          [13, 70],
          [64, 70],
          [70, 70],
        ] as const) {
          assert.deepEqual(await store.consistencyProof(m, n), hex(consistencyProof(m, n, mem)), `consistency ${m} → ${n}`);
        }
        assert.equal(await codeOf(() => store.root(SIZE + 1)), 'INVALID_REQUEST');
        assert.equal(await codeOf(() => store.inclusionProof(70, 70)), 'INVALID_REQUEST');
        assert.equal(await codeOf(() => store.inclusionProof(0, 71)), 'INVALID_REQUEST');
        assert.equal(await codeOf(() => store.consistencyProof(8, 7)), 'INVALID_REQUEST');
        assert.equal(await codeOf(() => store.consistencyProof(0, 71)), 'INVALID_REQUEST');
      } finally {
        await store.close();
      }
    });
  });
}

test('store proofs: postgres answers STORE_CORRUPT when a node a proof needs is missing', async () => {
  const url = await (await sharedPostgres()).createDatabase();
  const writer = await PgStore.open({ url });
  await writer.write((tx) => {
    for (let k = 0; k < 8; k++) tx.append({ kind: 'note', k });
  });
  await writer.close();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('DELETE FROM merkle WHERE level = 0 AND idx = 5');
  await client.end();
  const store = await PgStore.open({ url });
  try {
    assert.equal(await codeOf(() => store.inclusionProof(4, 8)), 'STORE_CORRUPT');
    assert.equal(await codeOf(() => store.inclusionProof(0, 4)), 'answered');
  } finally {
    await store.close();
  }
});
