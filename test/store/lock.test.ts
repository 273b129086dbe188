import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LmdbStore } from '../../src/store/lmdb/lmdb-store.js';
import { LOCK_FILE } from '../../src/store/lock.js';
import { WritError } from '../../src/errors.js';
import { DIST_SRC, spawnSnippet, tempDir } from './helpers.js';

/** A child process that opens the store, appends one record, prints READY and waits. */
function holder(dataDir: string) {
  return spawnSnippet(`
    const { LmdbStore } = await import(${JSON.stringify(join(DIST_SRC, 'store/lmdb/lmdb-store.js'))});
    const s = await LmdbStore.open({ dataDir: ${JSON.stringify(dataDir)} });
    await s.write((tx) => tx.append({ kind: 'child', pid: process.pid }));
    console.log('READY ' + process.pid);
    setInterval(() => {}, 1000);
  `);
}

/** A child process that tries to open the store and prints the outcome as JSON. */
function opener(dataDir: string) {
  return spawnSnippet(`
    const { LmdbStore } = await import(${JSON.stringify(join(DIST_SRC, 'store/lmdb/lmdb-store.js'))});
    try {
      const s = await LmdbStore.open({ dataDir: ${JSON.stringify(dataDir)} });
      console.log(JSON.stringify({ ok: true, size: s.size() }));
      await s.close();
    } catch (e) {
      console.log(JSON.stringify({ ok: false, code: e.code, message: e.message }));
      process.exitCode = 1;
    }
  `);
}

test('a second live process on the same data dir fails with STORE_LOCKED naming the holder pid', async (t) => {
  const dataDir = tempDir(t);
  const h = holder(dataDir);
  t.after(() => h.child.kill('SIGKILL'));
  const line = await h.firstLine;
  assert.match(line, /^READY \d+$/);
  const pid = Number(line.split(' ')[1]);
  const o = opener(dataDir);
  const res = await o.exit;
  assert.equal(res.code, 1);
  const out = JSON.parse(res.stdout.trim());
  assert.equal(out.code, 'STORE_LOCKED');
  assert.equal(out.message, `data dir ${dataDir} is in use by pid ${pid}`);
  // In this process too.
  await assert.rejects(LmdbStore.open({ dataDir }), (e: unknown) => e instanceof WritError && e.code === 'STORE_LOCKED' && e.message.includes(`pid ${pid}`));
});

test('a lock left by a SIGKILLed process is stale: the next open takes over at once and the chain continues', async (t) => {
  const dataDir = tempDir(t);
  const h = holder(dataDir);
  t.after(() => h.child.kill('SIGKILL'));
  assert.match(await h.firstLine, /^READY/);
  h.child.kill('SIGKILL');
  const exited = await h.exit;
  assert.equal(exited.signal, 'SIGKILL');
  assert.ok(readFileSync(join(dataDir, LOCK_FILE), 'utf8').includes(String(h.child.pid)), 'the lock file is still there');
  const store = await LmdbStore.open({ dataDir });
  t.after(() => store.close());
  assert.equal(store.size(), 1);
  assert.equal((await store.write((tx) => tx.append({ kind: 'after-kill' }))).record.prev, store.getRecord(0)!.hash);
});

test('stale locks: a dead pid, a reused pid with another start time, this pid (container pid 1), garbage', async (t) => {
  const dataDir = tempDir(t);
  const lockPath = join(dataDir, LOCK_FILE);
  const { hostname } = await import('node:os');
  const stale = [
    { pid: 2 ** 22 + 12345, started: '1', host: hostname() }, // no such process
    { pid: process.ppid, started: 'not-its-start-time', host: hostname() }, // a live pid, but another process
    { pid: process.pid, started: null, host: hostname() }, // our own pid, not taken by this process
  ];
  for (const info of stale) {
    writeFileSync(lockPath, JSON.stringify(info));
    const s = await LmdbStore.open({ dataDir });
    assert.equal(JSON.parse(readFileSync(lockPath, 'utf8')).pid, process.pid);
    await s.close();
  }
  writeFileSync(lockPath, 'garbage');
  const s = await LmdbStore.open({ dataDir });
  await s.close();
  assert.throws(() => readFileSync(lockPath), /ENOENT/, 'close removes the lock');
  // A live holder with a matching start time (here: the parent of this process) is respected.
  const parentStart = readFileSync(`/proc/${process.ppid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19];
  writeFileSync(lockPath, JSON.stringify({ pid: process.ppid, started: parentStart, host: hostname() }));
  await assert.rejects(
    LmdbStore.open({ dataDir }),
    (e: unknown) => e instanceof WritError && e.code === 'STORE_LOCKED' && e.message === `data dir ${dataDir} is in use by pid ${process.ppid}`,
  );
});

test('a stale lock taken over by several processes at once: exactly one holds the dir (seeded rounds)', { timeout: 120_000 }, async (t) => {
  const { hostname } = await import('node:os');
  // Each contender waits for the same instant, then takes the lock; a holder keeps it until killed.
  const contender = (dataDir: string, at: number) =>
    spawnSnippet(`
    const { lockDataDir } = await import(${JSON.stringify(join(DIST_SRC, 'store/lock.js'))});
    while (Date.now() < ${at}) {}
    try {
      await lockDataDir(${JSON.stringify(dataDir)});
      console.log('HELD');
      setInterval(() => {}, 1000);
    } catch (e) {
      console.log('REFUSED ' + e.code);
    }
  `);
  for (let round = 0; round < 8; round++) {
    const dataDir = tempDir(t);
    writeFileSync(join(dataDir, LOCK_FILE), `${JSON.stringify({ pid: 2 ** 22 + 4321, started: '1', host: hostname() })}\n`);
    const at = Date.now() + 1500;
    const cs = Array.from({ length: 4 }, () => contender(dataDir, at));
    try {
      const lines = await Promise.all(cs.map((c) => c.firstLine));
      assert.equal(lines.filter((l) => l === 'HELD').length, 1, `round ${round}: ${lines.join(', ')}`);
      assert.deepEqual(
        lines.filter((l) => l !== 'HELD'),
        ['REFUSED STORE_LOCKED', 'REFUSED STORE_LOCKED', 'REFUSED STORE_LOCKED'],
      );
    } finally {
      for (const c of cs) c.child.kill('SIGKILL');
      await Promise.all(cs.map((c) => c.exit));
    }
  }
});
