/**
 * ONE contract suite for the store seam (src/store/types.ts), run against both implementations: the
 * LMDB store of a data dir (in both its formats) and the PostgreSQL store (a real server started by the test).
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbStore } from '../../src/store/lmdb/lmdb-store.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import type { LedgerStore } from '../../src/store/types.js';
import { recordLine, ZERO_HASH, type LedgerRecord } from '../../src/ledger/record.js';
import { bytesToHash, hashToBytes } from '../../src/ledger/merkle/hasher.js';
import { memoryReader, rootAt } from '../../src/ledger/merkle/tree.js';
import { verifyConsistency, verifyInclusion } from '../../src/ledger/merkle/verify.js';
import { uidKey } from '../../src/util/uid.js';
import { sharedPostgres } from '../helpers/postgres.js';
import { assertChain } from './helpers.js';

const hex = (hs: string[]) => hs.map((h) => Buffer.from(h, 'hex'));

async function collect<T>(it: Iterable<T> | AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const implementations: Array<[string, () => Promise<LedgerStore>]> = [
  [
    'lmdb',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'writ-contract-'));
      dirs.push(dir);
      return LmdbStore.open({ dataDir: dir });
    },
  ],
  [
    // The same suite over a data dir made with store_compression "lz4" (records and rows LZ4-compressed).
    'lmdb format 2',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'writ-contract-'));
      dirs.push(dir);
      return LmdbStore.open({ dataDir: dir, format: '2' });
    },
  ],
  ['postgres', async () => PgStore.open({ url: await (await sharedPostgres()).createDatabase() })],
];

for (const [name, open] of implementations) {
  describe(`store contract: ${name}`, () => {
    test('appends chain gap-free; records, exports, roots and proofs agree with the records', async (t) => {
      const store = await open();
      t.after(() => store.close());
      assert.equal(await store.size(), 0);
      assert.equal(await store.head(), ZERO_HASH);
      const first = await store.write((tx) => tx.append({ kind: 'policy', note: undefined, actor: { type: 'Agent', id: 'a' }, execution_id: 'E1' }));
      assert.equal(first.seq, 0);
      assert.equal('note' in first.record, false);
      // Concurrent writers share batches; seqs are still one gap-free chain.
      const many = await Promise.all(
        Array.from({ length: 40 }, (_, i) => store.write((tx) => tx.append({ kind: i % 2 ? 'odd' : 'even', i, execution_id: `E${i % 3}` }))),
      );
      assert.deepEqual(
        many.map((r) => r.seq).sort((a, b) => a - b),
        Array.from({ length: 40 }, (_, i) => i + 1),
      );
      const size = await store.size();
      assert.equal(size, 41);
      const records: LedgerRecord[] = [];
      for (let s = 0; s < size; s++) records.push((await store.getRecord(s))!);
      assert.equal(await store.head(), assertChain(records));
      assert.equal(await store.getRecord(size), undefined);
      assert.deepEqual(await collect(store.exportLines()), records.map(recordLine));
      assert.deepEqual(await collect(store.exportLines(3, 5)), records.slice(3, 5).map(recordLine));
      const leaves = records.map((r) => hashToBytes(r.hash));
      const memRoot = (n: number) => bytesToHash(rootAt(n, memoryReader(leaves.slice(0, n))));
      assert.equal(await store.root(), memRoot(size));
      assert.equal(await store.root(17), memRoot(17));
      const incl = await store.inclusionProof(9, 30);
      verifyInclusion(9, 30, leaves[9]!, hex(incl), hashToBytes(memRoot(30)));
      const cons = await store.consistencyProof(11, 41);
      verifyConsistency(11, 41, hashToBytes(memRoot(11)), hashToBytes(memRoot(41)), hex(cons));
      assert.equal(await store.write((tx) => tx.root()), memRoot(41));
      // Queries by index, paged.
      const odd = await store.listRecords({ kind: 'odd', limit: 5 });
      assert.deepEqual(
        odd.records.map((r) => r.i),
        [1, 3, 5, 7, 9],
      );
      assert.equal(odd.next, records.find((r) => r.i === 11)!.seq);
      const byExec = await store.listRecords({ execution_id: 'E1', from: 2 });
      assert.ok(byExec.records.every((r) => r.execution_id === 'E1' && r.seq >= 2));
      assert.equal(byExec.next, null);
      const byActor = await store.listRecords({ actor: uidKey({ type: 'Agent', id: 'a' }) });
      assert.deepEqual(
        byActor.records.map((r) => r.seq),
        [0],
      );
      assert.deepEqual(
        (await store.listRecords({ from: 39 })).records.map((r) => r.seq),
        [39, 40],
      );
    });

    test('combined filters: following next gives exactly the records every filter selects, in seq order', async (t) => {
      const store = await open();
      t.after(() => store.close());
      let seed = 7;
      const rand = (n: number) => {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        return seed % n;
      };
      const kinds = ['decision', 'outcome', 'approval', 'refusal'];
      const actors = [{ type: 'Agent', id: 'a' }, { type: 'Agent', id: 'b' }, { type: 'User', id: 'hr' }, null];
      await store.write((tx) => {
        for (let i = 0; i < 1500; i++) {
          const actor = actors[rand(actors.length)];
          const exec = rand(5) === 0 ? undefined : `E${rand(40)}`;
          tx.append({ kind: kinds[rand(kinds.length)]!, ...(actor ? { actor } : {}), ...(exec ? { execution_id: exec } : {}) });
        }
      });
      const all: LedgerRecord[] = [];
      for (let s = 0; s < 1500; s++) all.push((await store.getRecord(s))!);
      const actorKey = (r: LedgerRecord) => (r.actor && typeof r.actor === 'object' ? uidKey(r.actor as { type: string; id: string }) : undefined);
      let checked = 0;
      for (let q = 0; q < 60; q++) {
        const filter: { kind?: string; actor?: string; execution_id?: string } = {};
        if (rand(3) > 0) filter.kind = kinds[rand(kinds.length)]!;
        if (rand(3) > 0) filter.actor = uidKey(actors[rand(3)]!);
        if (rand(2) > 0) filter.execution_id = `E${rand(40)}`;
        const from = rand(3) === 0 ? rand(1500) : 0;
        const limit = 1 + rand(60);
        const expected = all.filter(
          (r) =>
            r.seq >= from &&
            (filter.kind === undefined || r.kind === filter.kind) &&
            (filter.actor === undefined || actorKey(r) === filter.actor) &&
            (filter.execution_id === undefined || r.execution_id === filter.execution_id),
        );
        const got: number[] = [];
        let cursor: number | null = from;
        for (let pages = 0; cursor !== null; pages++) {
          assert.ok(pages < 2000, 'paging ends');
          const page: { records: LedgerRecord[]; next: number | null } = await store.listRecords({ ...filter, from: cursor, limit });
          assert.ok(page.records.length <= limit);
          for (const r of page.records) got.push(r.seq);
          if (page.next !== null) assert.ok(page.next > (page.records.at(-1)?.seq ?? cursor - 1) && page.next >= cursor, 'next moves forward');
          cursor = page.next;
        }
        assert.deepEqual(
          got,
          expected.map((r) => r.seq),
          JSON.stringify({ filter, from, limit }),
        );
        checked += got.length;
      }
      assert.ok(checked > 100, `${checked} records matched across the queries`);
    });

    test('tables: read-your-writes in a tx, a throwing callback drops only its own writes, entries in key order', async (t) => {
      const store = await open();
      t.after(() => store.close());
      const seen = await store.write((tx) => {
        tx.put('executions', 'k1', { n: 1 });
        return tx.get<{ n: number }>('executions', 'k1');
      });
      assert.deepEqual(seen, { n: 1 });
      const results = await Promise.allSettled([
        store.write((tx) => tx.put('approvals', 'b', { ok: true })),
        store.write((tx) => {
          tx.put('approvals', 'lost', 1);
          tx.append({ kind: 'lost' });
          throw new Error('boom');
        }),
        store.write((tx) => tx.append({ kind: 'kept' }).seq),
      ]);
      assert.equal(results[1].status, 'rejected');
      assert.equal((results[2] as PromiseFulfilledResult<number>).value, 0);
      assert.equal(await store.get('approvals', 'lost'), undefined);
      assert.equal(await store.size(), 1);
      assert.equal((await store.getRecord(0))!.kind, 'kept');
      await store.write((tx) => {
        tx.put('entities', 'T::"b"', 2);
        tx.put('entities', 'T::"a"', 1);
        tx.put('entities', 'U::"c"', 3);
      });
      assert.deepEqual(await collect(store.entries('entities')), [
        ['T::"a"', 1],
        ['T::"b"', 2],
        ['U::"c"', 3],
      ]);
      assert.deepEqual(await collect(store.entries('entities', 'T::')), [
        ['T::"a"', 1],
        ['T::"b"', 2],
      ]);
      await store.write((tx) => tx.del('entities', 'T::"a"'));
      assert.equal(await store.get('entities', 'T::"a"'), undefined);
      assert.equal(await store.write((tx) => tx.get('entities', 'T::"a"')), undefined);
      await assert.rejects(
        store.write((tx) => tx.append({ kind: 'x', seq: 1 })),
        /assigned by the store/,
      );
      assert.equal(await store.writable(), true);
    });

    test('keys and the latest checkpoint are read from the ledger', async (t) => {
      const store = await open();
      t.after(() => store.close());
      assert.deepEqual(await store.keys(), []);
      assert.equal(await store.latestCheckpoint(), undefined);
      await store.write((tx) => tx.append({ kind: 'key', key_id: 'k1', public_key: 'p1', signature: null }));
      await store.write((tx) => tx.append({ kind: 'checkpoint', size: 1, root: 'r', key_id: 'k1', signature: 's' }));
      await store.write((tx) => tx.append({ kind: 'checkpoint', size: 2, root: 'r2', key_id: 'k1', signature: 's' }));
      assert.deepEqual(await store.keys(), [{ key_id: 'k1', public_key: 'p1' }]);
      assert.equal((await store.latestCheckpoint())!.seq, 2);
      assert.equal(store.knownSize(), 3);
    });
  });
}
