import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbStore, type FaultHooks } from '../../../src/store/lmdb/lmdb-store.js';
import type { LedgerRecord } from '../../../src/ledger/record.js';
import { WritError } from '../../../src/errors.js';
import { assertChain, tempDir } from '../helpers.js';

const isUnavailable = (e: unknown) => e instanceof WritError && e.code === 'STORE_UNAVAILABLE';

/** The whole chain is contiguous, linked and hashed, and matches size() and head(). */
function assertConsistent(store: LmdbStore): LedgerRecord[] {
  const records = [...store.exportLines()].map((l) => JSON.parse(l) as LedgerRecord);
  const head = assertChain(records);
  assert.equal(store.size(), records.length);
  assert.equal(store.head(), head);
  return records;
}

test('a throwing callback leaves no trace — records, tables, nodes — and its concurrent siblings commit', async (t) => {
  const store = await LmdbStore.open({ dataDir: tempDir(t) });
  t.after(() => store.close());
  await store.write((tx) => tx.put('executions', 'keep', { v: 0 }));
  const outcomes = await Promise.allSettled(
    Array.from({ length: 30 }, (_, i) =>
      store.write((tx) => {
        tx.put('executions', `e${i}`, { i });
        tx.put('executions', 'keep', { v: i });
        const r = tx.append({ kind: 'k', i });
        if (i % 3 === 0) throw new WritError('EXECUTION_CONFLICT', `refused ${i}`);
        return r.seq;
      }),
    ),
  );
  const failed = outcomes.flatMap((o, i) => (o.status === 'rejected' ? [i] : []));
  assert.deepEqual(
    failed,
    Array.from({ length: 10 }, (_, k) => k * 3),
  );
  for (const i of failed) {
    const reason = (outcomes[i] as PromiseRejectedResult).reason;
    assert.ok(reason instanceof WritError && reason.code === 'EXECUTION_CONFLICT', 'the callback’s own error propagates unchanged');
    assert.equal(store.get('executions', `e${i}`), undefined);
  }
  const records = assertConsistent(store);
  assert.deepEqual(
    records.map((r) => r.i),
    Array.from({ length: 30 }, (_, i) => i).filter((i) => i % 3 !== 0),
  );
  assert.deepEqual(store.get('executions', 'keep'), { v: 29 }, 'the last successful write wins');
  // The refused caller writes a different record instead, in a separate write.
  const refusal = await store.write((tx) => tx.append({ kind: 'refusal', code: 'EXECUTION_CONFLICT' }));
  assert.equal(refusal.seq, 20);
  assertConsistent(store);
});

test('an async or non-JSON callback result is refused without writing', async (t) => {
  const store = await LmdbStore.open({ dataDir: tempDir(t) });
  t.after(() => store.close());
  await assert.rejects(
    store.write(async (tx) => tx.append({ kind: 'k' })),
    /synchronous/,
  );
  await assert.rejects(
    store.write((tx) => tx.put('meta', 'm', undefined)),
    /no JSON form/,
  );
  assert.equal(store.size(), 0);
});

test('beforeCommit fault: the write fails with STORE_UNAVAILABLE, nothing of it lands, the next write is consistent', async (t) => {
  let failLabel: string | undefined = 'reserve';
  const seen: Array<string | undefined> = [];
  const faults: FaultHooks = {
    beforeCommit(label) {
      seen.push(label);
      if (label === failLabel) {
        const e = new Error('ENOSPC: no space left on device (injected)') as NodeJS.ErrnoException;
        e.code = 'ENOSPC';
        throw e;
      }
    },
  };
  const store = await LmdbStore.open({ dataDir: tempDir(t), faults });
  t.after(() => store.close());
  await store.write((tx) => tx.append({ kind: 'a' }), { label: 'decision' });
  let ran = false;
  await assert.rejects(
    store.write(
      (tx) => {
        ran = true;
        tx.put('executions', 'x', { state: 'invoking' });
        return tx.append({ kind: 'b' });
      },
      { label: 'reserve' },
    ),
    (e: unknown) => isUnavailable(e) && /ENOSPC/.test((e as Error).message),
  );
  assert.equal(ran, false);
  assert.equal(store.get('executions', 'x'), undefined);
  assert.equal(store.size(), 1);
  failLabel = undefined;
  const next = await store.write((tx) => tx.append({ kind: 'c' }), { label: 'reserve' });
  assert.equal(next.seq, 1);
  assert.deepEqual(seen, ['decision', 'reserve', 'reserve']);
  assertConsistent(store);
});

test('async beforeCommit rejection fails only that write; siblings commit', async (t) => {
  const store = await LmdbStore.open({
    dataDir: tempDir(t),
    faults: {
      async beforeCommit(label) {
        if (label === 'terminal') throw new Error('injected store failure');
      },
    },
  });
  t.after(() => store.close());
  const results = await Promise.allSettled([
    store.write((tx) => tx.append({ kind: 'a' }).seq, { label: 'decision' }),
    store.write((tx) => tx.append({ kind: 'b' }).seq, { label: 'terminal' }),
    store.write((tx) => tx.append({ kind: 'c' }).seq, { label: 'decision' }),
  ]);
  assert.deepEqual(
    results.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  assert.ok(isUnavailable((results[1] as PromiseRejectedResult).reason));
  assert.deepEqual(
    assertConsistent(store).map((r) => r.kind),
    ['a', 'c'],
  );
});

test('a stalled write times out with STORE_UNAVAILABLE and never lands', async (t) => {
  let release!: () => void;
  const stalled = new Promise<void>((r) => (release = r));
  const store = await LmdbStore.open({
    dataDir: tempDir(t),
    writeTimeoutMs: 150,
    faults: { beforeCommit: (label) => (label === 'slow' ? stalled : undefined) },
  });
  t.after(() => store.close());
  let ran = false;
  await assert.rejects(
    store.write(
      (tx) => {
        ran = true;
        tx.append({ kind: 'late' });
      },
      { label: 'slow' },
    ),
    (e: unknown) => isUnavailable(e) && /timed out/.test((e as Error).message),
  );
  release();
  // Writes commit in order: once the next one has, the released one is done with, and its body never ran.
  await store.write((tx) => tx.append({ kind: 'next' }));
  assert.equal(ran, false);
  assert.deepEqual(
    assertConsistent(store).map((r) => r.kind),
    ['next'],
  );
});

test('a failed LMDB commit rolls back the whole batch and everything queued behind it; the head is reloaded from disk', async (t) => {
  let failNext = false;
  const store = await LmdbStore.open({
    dataDir: tempDir(t),
    faults: {
      insideCommit(labels) {
        if (failNext && labels.includes('doomed')) {
          failNext = false;
          throw new Error('EIO: injected commit failure');
        }
      },
    },
  });
  t.after(() => store.close());
  await store.write((tx) => {
    tx.append({ kind: 'base' });
    tx.put('executions', 'e', { state: 'proposed' });
  });
  failNext = true;
  // The doomed write and its batch mates share a commit; a write queued while that commit runs builds
  // on it, so it must fail too.
  const doomed = [
    store.write((tx) => tx.append({ kind: 'd1' }), { label: 'doomed' }),
    store.write((tx) => {
      tx.put('executions', 'e', { state: 'invoking' });
      return tx.append({ kind: 'd2' });
    }),
  ];
  const results = await Promise.allSettled(doomed);
  for (const r of results) assert.ok(r.status === 'rejected' && isUnavailable(r.reason), 'every write of the failed batch is STORE_UNAVAILABLE');
  assert.equal(store.stats().failedCommits, 1);
  assert.deepEqual(store.get('executions', 'e'), { state: 'proposed' });
  assert.deepEqual(
    assertConsistent(store).map((r) => r.kind),
    ['base'],
  );
  const after = await store.write((tx) => {
    assert.deepEqual(tx.get('executions', 'e'), { state: 'proposed' }, 'later writes do not see the failed batch');
    return tx.append({ kind: 'after' });
  });
  assert.equal(after.seq, 1);
  assertConsistent(store);
  assert.equal(store.root(2), store.root());
});

test('a commit failure cascades to writes that ran while it was in flight', async (t) => {
  let gate = false;
  const store = await LmdbStore.open({
    dataDir: tempDir(t),
    // Only 'flushed' commits run beside the event loop; a 'sync' commit is over before the next write
    // can run (the test above covers its batch mates).
    durability: 'flushed',
    faults: {
      insideCommit(labels) {
        if (labels.includes('first') && gate) throw new Error('EIO: injected');
      },
    },
  });
  t.after(() => store.close());
  gate = true;
  const first = store.write((tx) => tx.append({ kind: 'first' }), { label: 'first' });
  // Runs after the first batch was handed to LMDB: it sees the first record as pending.
  await new Promise((r) => setImmediate(r));
  const second = store.write((tx) => {
    assert.equal(tx.size(), 1);
    return tx.append({ kind: 'second' });
  });
  const results = await Promise.allSettled([first, second]);
  assert.deepEqual(
    results.map((r) => r.status),
    ['rejected', 'rejected'],
  );
  assert.equal(store.size(), 0);
  gate = false;
  assert.equal((await store.write((tx) => tx.append({ kind: 'third' }))).seq, 0);
  assertConsistent(store);
});

test('writes after close are refused with STORE_UNAVAILABLE; close waits for queued writes', async (t) => {
  const dataDir = tempDir(t);
  const store = await LmdbStore.open({ dataDir });
  const pending = store.write((tx) => tx.append({ kind: 'queued' }));
  await store.close();
  assert.equal((await pending).seq, 0);
  await assert.rejects(
    store.write((tx) => tx.append({ kind: 'late' })),
    isUnavailable,
  );
  assert.equal(await store.writable(), false);
  const again = await LmdbStore.open({ dataDir });
  assert.equal(again.size(), 1);
  await again.close();
});

// A real full disk: a 2 MiB tmpfs. Needs mount(2) (root in a container with CAP_SYS_ADMIN).
function mountTmpfs(dir: string): boolean {
  mkdirSync(dir, { recursive: true });
  return spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', dir], { stdio: 'ignore' }).status === 0;
}

test('ENOSPC on a real 2 MiB tmpfs: writes fail with STORE_UNAVAILABLE, the store stays consistent and reopens', async (t) => {
  const base = mkdtempSync(join(tmpdir(), 'writ-tmpfs-'));
  const mnt = join(base, 'tmpfs');
  const mounted = mountTmpfs(mnt);
  t.after(() => {
    if (mounted) spawnSync('umount', [mnt], { stdio: 'ignore' });
    rmSync(base, { recursive: true, force: true });
  });
  if (!mounted) {
    t.skip('mount -t tmpfs is not permitted here; the injected-ENOSPC tests cover the same path');
    return;
  }
  const dataDir = join(mnt, 'data');
  const store = await LmdbStore.open({ dataDir });
  let acknowledged = 0;
  let failures = 0;
  // Random text: the store compresses its records, and a repeated character would not fill the disk.
  const blob = () => randomBytes(3000).toString('base64');
  // Quiet lmdb-js's own console.error of the I/O error while the disk is full.
  const origError = console.error;
  console.error = () => undefined;
  try {
    for (let i = 0; i < 2000 && failures < 3; i++) {
      try {
        await store.write((tx) => {
          tx.append({ kind: 'fill', blob: blob() });
          tx.put('meta', `m${i}`, i);
        });
        acknowledged++;
      } catch (e) {
        assert.ok(isUnavailable(e), `expected STORE_UNAVAILABLE, got ${(e as Error).message}`);
        failures++;
      }
    }
  } finally {
    console.error = origError;
  }
  assert.ok(failures > 0, 'the disk filled up');
  assert.ok(acknowledged > 10);
  assert.equal(assertConsistent(store).length, acknowledged, 'every acknowledged write is there, nothing else');
  assert.equal(await store.writable(), true, 'a small write still fits after the failed big ones were rolled back');
  await store.close();
  const reopened = await LmdbStore.open({ dataDir });
  assert.equal(reopened.size(), acknowledged);
  assertConsistent(reopened);
  await reopened.close();
});
