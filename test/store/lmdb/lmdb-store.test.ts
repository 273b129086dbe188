import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LmdbStore } from '../../../src/store/lmdb/lmdb-store.js';
import { recordLine, ZERO_HASH, type LedgerRecord } from '../../../src/ledger/record.js';
import { bytesToHash, hashToBytes } from '../../../src/ledger/merkle/hasher.js';
import { consistencyProof } from '../../../src/ledger/merkle/consistency.js';
import { inclusionProof } from '../../../src/ledger/merkle/inclusion.js';
import { memoryReader, rootAt } from '../../../src/ledger/merkle/tree.js';
import { verifyConsistency, verifyInclusion } from '../../../src/ledger/merkle/verify.js';
import { uidKey } from '../../../src/util/uid.js';
import { WritError } from '../../../src/errors.js';
import { assertChain, tempDir } from '../helpers.js';

const hex = (hs: string[]) => hs.map((h) => Buffer.from(h, 'hex'));

function checkChain(records: LedgerRecord[]): void {
  assertChain(records);
  for (const r of records) {
    assert.equal(r.v, 1);
    assert.match(r.ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  }
}

test('append assigns v, seq, ts, prev and hash; records and export lines round-trip byte for byte', async (t) => {
  const store = await LmdbStore.open({ dataDir: tempDir(t) });
  t.after(() => store.close());
  assert.equal(store.size(), 0);
  assert.equal(store.head(), ZERO_HASH);
  const first = await store.write((tx) => tx.append({ kind: 'policy', policy_version: `sha256:${'1'.repeat(64)}`, note: undefined }));
  assert.equal(first.seq, 0);
  assert.equal(first.record.prev, ZERO_HASH);
  assert.equal('note' in first.record, false, 'undefined fields are dropped as JCS drops them');
  const both = await store.write((tx) => [tx.append({ kind: 'a', n: 1.5, s: 'é\u2028' }), tx.append({ kind: 'b', nested: { z: 1, a: [true, null] } })]);
  assert.equal(both[1]!.record.prev, both[0]!.hash, 'a later append in the same tx chains from the earlier one');
  assert.equal(store.size(), 3);
  assert.equal(store.head(), both[1]!.hash);
  const all = [0, 1, 2].map((s) => store.getRecord(s)!);
  checkChain(all);
  assert.deepEqual([...store.exportLines()], all.map(recordLine));
  assert.deepEqual([...store.exportLines(1, 2)], [recordLine(all[1]!)]);
  assert.equal(store.getRecord(3), undefined);
  assert.equal(store.getRecord(-1), undefined);
  await assert.rejects(
    store.write((tx) => tx.append({ kind: 'x', seq: 5 })),
    /assigned by the store/,
  );
  await assert.rejects(
    store.write((tx) => tx.append({ kind: '' })),
    /non-empty string kind/,
  );
  assert.equal(store.size(), 3);
});

test('a restart continues the chain, and a consistency proof from a checkpoint-sized tree before it to one after verifies', async (t) => {
  const dataDir = tempDir(t);
  let store = await LmdbStore.open({ dataDir });
  for (let i = 0; i < 13; i++) await store.write((tx) => tx.append({ kind: 'k', i }));
  const beforeSize = store.size();
  const beforeRoot = store.root();
  const beforeHead = store.head();
  await store.close();

  store = await LmdbStore.open({ dataDir });
  t.after(() => store.close());
  assert.equal(store.size(), beforeSize);
  assert.equal(store.head(), beforeHead);
  assert.equal(store.root(beforeSize), beforeRoot);
  const next = await store.write((tx) => tx.append({ kind: 'k', i: 13 }));
  assert.equal(next.seq, beforeSize);
  assert.equal(next.record.prev, beforeHead);
  for (let i = 14; i < 40; i++) await store.write((tx) => tx.append({ kind: 'k', i }));
  const proof = store.consistencyProof(beforeSize, store.size());
  verifyConsistency(beforeSize, store.size(), hashToBytes(beforeRoot), hashToBytes(store.root()), hex(proof));
  checkChain([...store.exportLines()].map((l) => JSON.parse(l)));
});

test('roots and proofs from stored nodes equal the pure Merkle functions over the record hashes, and verify', async (t) => {
  const store = await LmdbStore.open({ dataDir: tempDir(t) });
  t.after(() => store.close());
  // Mixed batch sizes so nodes are completed both within one tx and across commits.
  let n = 0;
  while (n < 37) {
    const k = (n % 5) + 1;
    await store.write((tx) => {
      for (let i = 0; i < k; i++) tx.append({ kind: 'k', i: n + i });
    });
    n += k;
  }
  const leaves = [...store.exportLines()].map((l) => hashToBytes(JSON.parse(l).hash));
  const mem = memoryReader(leaves);
  for (let size = 1; size <= leaves.length; size++) {
    const root = rootAt(size, mem);
    assert.equal(store.root(size), bytesToHash(root));
    for (let seq = 0; seq < size; seq++) {
      const proof = store.inclusionProof(seq, size);
      assert.deepEqual(
        proof,
        inclusionProof(seq, size, mem).map((b) => b.toString('hex')),
      );
      verifyInclusion(seq, size, leaves[seq]!, hex(proof), root);
    }
    for (let m = 1; m <= size; m++) {
      const proof = store.consistencyProof(m, size);
      assert.deepEqual(
        proof,
        consistencyProof(m, size, mem).map((b) => b.toString('hex')),
      );
      verifyConsistency(m, size, rootAt(m, mem), root, hex(proof));
    }
  }
  assert.equal(store.root(0), 'sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  assert.throws(
    () => store.root(store.size() + 1),
    (e: unknown) => e instanceof WritError && e.code === 'INVALID_REQUEST',
  );
  assert.throws(
    () => store.inclusionProof(5, 5),
    (e: unknown) => e instanceof WritError && e.code === 'INVALID_REQUEST',
  );
  assert.throws(
    () => store.consistencyProof(6, 5),
    (e: unknown) => e instanceof WritError && e.code === 'INVALID_REQUEST',
  );
});

test('tables: a tx sees its own writes and earlier ones; get/entries read committed state; del removes', async (t) => {
  const store = await LmdbStore.open({ dataDir: tempDir(t) });
  t.after(() => store.close());
  const seen = await store.write((tx) => {
    tx.put('executions', 'a', { state: 'proposed' });
    const own = tx.get<{ state: string }>('executions', 'a');
    tx.put('executions', 'a', { state: 'invoking' });
    tx.put('executions', 'ab', { n: 1 });
    tx.put('approvals', 'a', 'other table');
    tx.put('meta', 'gone', 1);
    tx.del('meta', 'gone');
    return [own, tx.get('executions', 'a'), tx.get('meta', 'gone')];
  });
  assert.deepEqual(seen, [{ state: 'proposed' }, { state: 'invoking' }, undefined]);
  assert.deepEqual(store.get('executions', 'a'), { state: 'invoking' });
  assert.equal(store.get('meta', 'gone'), undefined);
  await store.write((tx) => {
    assert.deepEqual(tx.get('executions', 'ab'), { n: 1 });
    tx.put('executions', 'b', { n: 2 });
    tx.del('executions', 'ab');
  });
  assert.deepEqual(
    [...store.entries('executions')],
    [
      ['a', { state: 'invoking' }],
      ['b', { n: 2 }],
    ],
  );
  assert.deepEqual([...store.entries('executions', 'a')], [['a', { state: 'invoking' }]]);
  assert.deepEqual([...store.entries('approvals')], [['a', 'other table']]);
  const copy = store.get<{ state: string }>('executions', 'a')!;
  copy.state = 'mutated';
  assert.deepEqual(store.get('executions', 'a'), { state: 'invoking' }, 'reads return copies');
});

test('listRecords pages by kind, actor and execution_id from the indexes; next is the from of the next page', async (t) => {
  const store = await LmdbStore.open({ dataDir: tempDir(t) });
  t.after(() => store.close());
  const agents = [
    { type: 'Agent', id: 'a"1' },
    { type: 'Agent', id: 'b' },
  ];
  await store.write((tx) => {
    for (let i = 0; i < 60; i++) {
      tx.append({ kind: i % 3 === 0 ? 'decision' : 'outcome', actor: agents[i % 2], execution_id: `E-${i % 4}` });
    }
    tx.append({ kind: 'policy', actor: 'not a uid', execution_id: 7 });
    tx.append({ kind: 'decision', execution_id: 'x'.repeat(3000) });
  });
  const collect = (q: Parameters<LmdbStore['listRecords']>[0]) => {
    const out: number[] = [];
    let from: number | null = 0;
    let pages = 0;
    while (from !== null) {
      const page = store.listRecords({ ...q, from, limit: 7 });
      assert.ok(page.records.length <= 7);
      out.push(...page.records.map((r) => r.seq));
      from = page.next;
      pages++;
    }
    return { out, pages };
  };
  const all = [...store.exportLines()].map((l) => JSON.parse(l) as LedgerRecord);
  const expect = (pred: (r: LedgerRecord) => boolean) => all.filter(pred).map((r) => r.seq);
  assert.deepEqual(
    collect({}).out,
    expect(() => true),
  );
  assert.deepEqual(
    collect({ kind: 'decision' }).out,
    expect((r) => r.kind === 'decision'),
  );
  const a1 = uidKey(agents[0]!);
  assert.deepEqual(
    collect({ actor: a1 }).out,
    expect((r) => JSON.stringify(r.actor) === JSON.stringify({ id: 'a"1', type: 'Agent' })),
  );
  assert.deepEqual(
    collect({ execution_id: 'E-2' }).out,
    expect((r) => r.execution_id === 'E-2'),
  );
  assert.deepEqual(
    collect({ execution_id: 'E-2', kind: 'decision', actor: uidKey(agents[0]!) }).out,
    expect((r) => r.execution_id === 'E-2' && r.kind === 'decision'),
  );
  assert.deepEqual(collect({ execution_id: 'x'.repeat(3000) }).out, [61], 'long terms are indexed by digest');
  assert.deepEqual(collect({ kind: 'nope' }), { out: [], pages: 1 });
  const page = store.listRecords({ from: 55, limit: 1000 });
  assert.deepEqual(
    page.records.map((r) => r.seq),
    [55, 56, 57, 58, 59, 60, 61],
  );
  assert.equal(page.next, null);
  assert.equal(store.listRecords({ from: 10, limit: 5 }).next, 15);
  for (const limit of [0, 1001, 1.5])
    assert.throws(
      () => store.listRecords({ limit }),
      (e: unknown) => e instanceof WritError && e.code === 'INVALID_REQUEST',
    );
});

test('listRecords with disjoint large filters answers short pages with next (bounded work per call), and following next finds every match', async (t) => {
  const store = await LmdbStore.open({ dataDir: tempDir(t) });
  t.after(() => store.close());
  // Agent a writes decisions and outcomes; approvals are by User hr, but for two of them by Agent a.
  const N = 30_000;
  for (let b = 0; b < N; b += 5000) {
    await store.write((tx) => {
      for (let i = b; i < b + 5000; i++) {
        const approval = i % 3 === 2;
        const actor = approval && i !== 29_999 && i !== 14_999 ? { type: 'User', id: 'hr' } : { type: 'Agent', id: 'a' };
        tx.append({ kind: approval ? 'approval' : i % 3 === 0 ? 'decision' : 'outcome', actor });
      }
    });
  }
  const q = { actor: uidKey({ type: 'Agent', id: 'a' }), kind: 'approval', limit: 1000 };
  const first = store.listRecords(q);
  assert.ok(first.records.length < 2 && first.next !== null, `a short first page, ${first.records.length} records, next ${first.next}`);
  const found: number[] = [];
  let calls = 0;
  for (let from: number | null = 0; from !== null; calls++) {
    const page = store.listRecords({ ...q, from });
    found.push(...page.records.map((r) => r.seq));
    from = page.next;
  }
  assert.deepEqual(found, [14_999, 29_999]);
  assert.ok(calls >= 2 && calls < 20, `${calls} calls`);
});

test('concurrent writes group-commit: 50 writers share far fewer than 50 fsyncs, and seqs follow callback order', async (t) => {
  const store = await LmdbStore.open({ dataDir: tempDir(t) });
  t.after(() => store.close());
  const before = store.stats();
  const seqs = await Promise.all(Array.from({ length: 50 }, (_, i) => store.write((tx) => tx.append({ kind: 'k', i }).seq)));
  assert.deepEqual(
    seqs,
    Array.from({ length: 50 }, (_, i) => i),
  );
  const after = store.stats();
  assert.equal(after.writes - before.writes, 50);
  assert.ok(after.commits - before.commits < 10, `50 concurrent writes took ${after.commits - before.commits} commits`);
});

test('latestCheckpoint and keys come from the kind index; writable() commits a probe', async (t) => {
  const store = await LmdbStore.open({ dataDir: tempDir(t) });
  t.after(() => store.close());
  assert.equal(store.latestCheckpoint(), undefined);
  assert.deepEqual(store.keys(), []);
  await store.write((tx) => {
    tx.append({ kind: 'key', key_id: 'ed25519:1', public_key: 'AA==', signature: null });
    tx.append({ kind: 'checkpoint', size: 1, root: 'r1' });
    tx.append({ kind: 'key', key_id: 'ed25519:2', public_key: 'AQ==', signature: 'x' });
    tx.append({ kind: 'checkpoint', size: 3, root: 'r2' });
    tx.append({ kind: 'other' });
  });
  assert.equal(store.latestCheckpoint()!.seq, 3);
  assert.deepEqual(store.keys(), [
    { key_id: 'ed25519:1', public_key: 'AA==' },
    { key_id: 'ed25519:2', public_key: 'AQ==' },
  ]);
  const commits = store.stats().commits;
  assert.equal(await store.writable(), true);
  assert.equal(store.stats().commits, commits + 1);
  assert.equal(store.size(), 5, 'the probe is not a record');
});
