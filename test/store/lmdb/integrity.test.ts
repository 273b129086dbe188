import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { LmdbStore } from '../../../src/store/lmdb/lmdb-store.js';
import { openStoreDbs } from '../../../src/store/layout.js';
import { chainBreakPayload, repairStore } from '../../../src/store/lmdb/repair.js';
import { ensureKeyRecord, loadOrCreateSigningKey } from '../../../src/checkpoints/keys.js';
import { startCheckpointer } from '../../../src/checkpoints/checkpointer.js';
import { recordHash, type LedgerRecord } from '../../../src/ledger/record.js';
import { verifyPayload } from '../../../src/ledger/signing.js';
import { hashToBytes } from '../../../src/ledger/merkle/hasher.js';
import { verifyConsistency } from '../../../src/ledger/merkle/verify.js';
import { jcs } from '../../../src/util/canonical.js';
import { WritError } from '../../../src/errors.js';
import { assertChain, runWrit, spawnSnippet, DIST_SRC, tempDir } from '../helpers.js';
import { join } from 'node:path';

/** A data dir of 32 records: a key record (seq 0), decisions, and checkpoints at seqs 11 and 22 (sizes 11, 22). */
async function populated(dataDir: string): Promise<void> {
  const store = await LmdbStore.open({ dataDir });
  const key = loadOrCreateSigningKey(dataDir);
  await ensureKeyRecord(store, key);
  const cp = startCheckpointer(store, { key, everyRecords: 1_000_000 });
  for (let i = 1; i < 30; i++) {
    await store.write((tx) => tx.append({ kind: 'decision', i, actor: { type: 'Agent', id: 'a' }, execution_id: `E-${i}` }));
    if (i === 10 || i === 20) await cp.checkpointNow();
  }
  await store.close();
}

/** Edits the raw store (no lock, no checks) as an attacker or a bad disk would. */
// Inside the transaction LMDB writes at once and throws on failure: fn may drop the promises of put() and remove().
async function tamper(dataDir: string, fn: (d: ReturnType<typeof openStoreDbs>) => unknown): Promise<void> {
  const d = openStoreDbs(dataDir);
  await d.env.transaction(() => fn(d));
  await d.env.close();
}

async function openError(dataDir: string, tailCheck?: number): Promise<WritError> {
  try {
    const s = await LmdbStore.open({ dataDir, ...(tailCheck ? { tailCheck } : {}) });
    await s.close();
  } catch (e) {
    assert.ok(e instanceof WritError, String(e));
    return e;
  }
  assert.fail('the store opened');
}

function chainOf(store: LmdbStore): LedgerRecord[] {
  const records = [...store.exportLines()].map((l) => JSON.parse(l) as LedgerRecord);
  assertChain(records);
  return records;
}

test('an edited record in the tail: open refuses with STORE_CORRUPT and its seq; repair cuts there with a signed chain_break', async (t) => {
  const dataDir = tempDir(t);
  await populated(dataDir);
  const before = await LmdbStore.open({ dataDir });
  const heldCheckpoint = before.latestCheckpoint()!;
  await before.close();
  await tamper(dataDir, (d) => {
    const r = JSON.parse(d.records.get(25)!);
    r.i = 999; // content changed, hash left as it was
    void d.records.put(25, jcs(r));
  });
  const e = await openError(dataDir);
  assert.equal(e.code, 'STORE_CORRUPT');
  assert.deepEqual(e.details, { seq: 25 });
  assert.match(e.message, /at seq 25: hash does not match/);
  assert.match(e.message, /writ repair/);

  const report = await repairStore(dataDir, { reason: 'disk fault on 2026-08-24' });
  assert.equal(report.outcome, 'cut');
  assert.equal(report.dropped_from_seq, 25);
  assert.equal(report.last_good_seq, 24);
  assert.equal(report.dropped_records, 7);
  const dropped = readFileSync(report.dropped_file!, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    dropped.map((x) => x.seq),
    [25, 26, 27, 28, 29, 30, 31],
  );

  const store = await LmdbStore.open({ dataDir });
  t.after(() => store.close());
  const records = chainOf(store);
  assert.equal(records.length, 26);
  const cb = records[25]!;
  assert.equal(cb.kind, 'chain_break');
  assert.equal(cb.prev, records[24]!.hash);
  assert.equal(cb.last_good_hash, records[24]!.hash);
  assert.equal(cb.last_good_seq, 24);
  assert.equal(cb.dropped_from_seq, 25);
  assert.equal(cb.reason, 'disk fault on 2026-08-24');
  const key = loadOrCreateSigningKey(dataDir);
  assert.equal(cb.key_id, key.key_id);
  assert.ok(
    verifyPayload(
      Buffer.from(key.public_key, 'base64'),
      chainBreakPayload({ last_good_hash: cb.last_good_hash, last_good_seq: 24, reason: cb.reason }),
      cb.signature as string,
    ),
  );
  // The store serves again: writes chain on, the indexes were rebuilt, and the held checkpoint (size 22,
  // below the cut) is still consistent with the repaired log.
  const next = await store.write((tx) => tx.append({ kind: 'decision', actor: { type: 'Agent', id: 'a' } }));
  assert.equal(next.record.prev, cb.hash);
  assert.deepEqual(
    store.listRecords({ kind: 'chain_break' }).records.map((r) => r.seq),
    [25],
  );
  const withActor = records.filter((r) => r.actor !== undefined).length;
  assert.equal(store.listRecords({ actor: 'Agent::"a"', limit: 1000 }).records.length, withActor + 1);
  const size = heldCheckpoint.size as number;
  verifyConsistency(
    size,
    store.size(),
    hashToBytes(heldCheckpoint.root as string),
    hashToBytes(store.root()),
    store.consistencyProof(size, store.size()).map((h) => Buffer.from(h, 'hex')),
  );
});

test('repair drops the approvals whose approval record was cut: an approval the ledger no longer holds authorizes nothing', async (t) => {
  const dataDir = tempDir(t);
  const store0 = await LmdbStore.open({ dataDir });
  const key = loadOrCreateSigningKey(dataDir);
  await ensureKeyRecord(store0, key);
  const approve = (id: string) =>
    store0.write((tx) => {
      const approval = { approval_id: id, execution_id: 'E-1' };
      tx.put('approvals', id, approval);
      const rec = tx.append({ kind: 'approval', ...approval });
      const e = tx.get<{ approvals: string[]; records: number[]; rev: number }>('executions', 'E-1') ?? { approvals: [], records: [], rev: 0 };
      tx.put('executions', 'E-1', { ...e, approvals: [...e.approvals, id], records: [...e.records, rec.seq], rev: e.rev + 1 });
      return rec.seq;
    });
  for (let i = 1; i < 5; i++) await store0.write((tx) => tx.append({ kind: 'decision', i }));
  const keptSeq = await approve('apr_kept');
  for (let i = 6; i < 10; i++) await store0.write((tx) => tx.append({ kind: 'decision', i }));
  const cutSeq = await approve('apr_cut');
  await store0.close();
  assert.deepEqual([keptSeq, cutSeq], [5, 10]);
  await tamper(dataDir, (d) => {
    const r = JSON.parse(d.records.get(8)!);
    r.i = 999;
    void d.records.put(8, jcs(r));
  });
  const report = await repairStore(dataDir);
  assert.equal(report.dropped_from_seq, 8);
  const store = await LmdbStore.open({ dataDir });
  t.after(() => store.close());
  assert.deepEqual(await store.get('approvals', 'apr_kept'), { approval_id: 'apr_kept', execution_id: 'E-1' });
  assert.equal(await store.get('approvals', 'apr_cut'), undefined, 'the cut approval is gone');
  assert.deepEqual(await store.get('executions', 'E-1'), { approvals: ['apr_kept'], records: [5], rev: 3 });
});

test('a missing record (gap) is found wherever it is, by the entry count', async (t) => {
  const dataDir = tempDir(t);
  await populated(dataDir);
  await tamper(dataDir, (d) => d.records.remove(3));
  const e = await openError(dataDir, 5);
  assert.deepEqual([e.code, e.details], ['STORE_CORRUPT', { seq: 3 }]);
  const report = await repairStore(dataDir);
  assert.equal(report.dropped_from_seq, 3);
  const store = await LmdbStore.open({ dataDir });
  assert.equal(chainOf(store).length, 4);
  await store.close();
});

test('a corrupted Merkle node fails the latest checkpoint root; repair rebuilds derived data without cutting', async (t) => {
  const dataDir = tempDir(t);
  await populated(dataDir);
  await tamper(dataDir, (d) => d.merkle.put([2, 4], Buffer.alloc(32, 7)) /* leaves 16..19: read for the root at 22 */);
  const e = await openError(dataDir);
  assert.equal(e.code, 'STORE_CORRUPT');
  assert.deepEqual(e.details, { seq: 22 }, 'no record is bad: the checkpoint that fails is named');
  assert.match(e.message, /root/);
  const report = await repairStore(dataDir);
  assert.equal(report.outcome, 'rebuilt');
  const store = await LmdbStore.open({ dataDir });
  assert.equal(chainOf(store).length, 32);
  assert.equal(store.root(22), store.latestCheckpoint()!.root);
  await store.close();
  assert.equal((await repairStore(dataDir)).outcome, 'intact');
});

test('a forged checkpoint signature is refused on open', async (t) => {
  const dataDir = tempDir(t);
  await populated(dataDir);
  await tamper(dataDir, (d) => {
    const r = JSON.parse(d.records.get(22)!);
    r.signature = Buffer.alloc(64, 1).toString('base64');
    const { hash: _h, ...body } = r;
    void d.records.put(22, jcs({ ...body, hash: recordHash(body) }));
  });
  const e = await openError(dataDir, 5);
  assert.deepEqual([e.code, e.details], ['STORE_CORRUPT', { seq: 22 }]);
  assert.match(e.message, /signature/);
});

test('records lost from the end (truncation) are detected by the dangling Merkle leaf, and repair records the break', async (t) => {
  const dataDir = tempDir(t);
  await populated(dataDir);
  await tamper(dataDir, (d) => {
    for (const seq of [29, 30, 31]) void d.records.remove(seq);
  });
  const e = await openError(dataDir);
  assert.deepEqual([e.code, e.details], ['STORE_CORRUPT', { seq: 29 }]);
  assert.match(e.message, /truncated/);
  const report = await repairStore(dataDir);
  assert.equal(report.outcome, 'cut');
  assert.equal(report.dropped_from_seq, 29);
  assert.equal(report.dropped_records, 0);
  const store = await LmdbStore.open({ dataDir });
  const records = chainOf(store);
  assert.equal(records.at(-1)!.kind, 'chain_break');
  assert.equal(records.length, 30);
  await store.close();
});

test('writ repair: refused while the data dir is in use; says what it did and exits 0 afterwards', async (t) => {
  const dataDir = tempDir(t);
  await populated(dataDir);
  await tamper(dataDir, (d) => {
    const r = JSON.parse(d.records.get(29)!);
    r.kind = 'forged';
    void d.records.put(29, jcs(r));
  });
  const h = spawnSnippet(`
    const { lockDataDir } = await import(${JSON.stringify(join(DIST_SRC, 'store/lock.js'))});
    await lockDataDir(${JSON.stringify(dataDir)});
    console.log('LOCKED');
    setInterval(() => {}, 1000);
  `);
  t.after(() => h.child.kill('SIGKILL'));
  assert.equal(await h.firstLine, 'LOCKED');
  const refused = await runWrit(['repair', '--data-dir', dataDir]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, new RegExp(`data dir ${dataDir} is in use by pid ${h.child.pid}`));
  h.child.kill('SIGKILL');
  await h.exit;

  const done = await runWrit(['repair', '--data-dir', dataDir, '--reason', 'forged kind']);
  assert.equal(done.code, 0, done.stderr);
  assert.match(done.stderr, /at seq 29/);
  assert.match(done.stderr, /dropped 3 record\(s\) from seq 29/);
  assert.match(done.stderr, /appended chain_break record seq 29/);
  const report = JSON.parse(done.stdout);
  assert.equal(report.chain_break.reason, 'forged kind');
  const again = await runWrit(['repair', '--data-dir', dataDir]);
  assert.equal(again.code, 0);
  assert.match(again.stderr, /intact; nothing to repair/);
  assert.equal((await runWrit(['repair', '--help'])).code, 0);
  assert.equal((await runWrit(['repair', '--bogus'])).code, 2);
});

test('repair and keys rotate refuse a data dir that holds no store, creating nothing there', async (t) => {
  const dir = tempDir(t);
  const wrong = join(dir, 'typo');
  for (const args of [
    ['repair', '--data-dir', wrong],
    ['keys', 'rotate', '--data-dir', wrong],
  ]) {
    const r = await runWrit(args);
    assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
    assert.match(
      r.stderr,
      args[0] === 'repair'
        ? /no store in .*typo \(store\/data\.mdb is missing\): check --data-dir/
        : /no signing key at .*typo\/signing-key\.json: check --data-dir/,
    );
    assert.equal(existsSync(wrong), false, `${args[0]} created nothing`);
  }
});
