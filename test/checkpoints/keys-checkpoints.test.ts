import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LmdbStore } from '../../src/store/lmdb/lmdb-store.js';
import { ensureKeyRecord, loadOrCreateSigningKey, readKeyFile, rotateSigningKey, SIGNING_KEY_FILE } from '../../src/checkpoints/keys.js';
import { startCheckpointer, WITNESS_FILE } from '../../src/checkpoints/checkpointer.js';
import { checkpointPayload, keyIdOf, keyPayload, verifyPayload } from '../../src/ledger/signing.js';
import { recordLine, type LedgerRecord } from '../../src/ledger/record.js';
import { hashToBytes } from '../../src/ledger/merkle/hasher.js';
import { verifyConsistency } from '../../src/ledger/merkle/verify.js';
import { WritError } from '../../src/errors.js';
import { runWrit, tempDir } from '../store/helpers.js';
import { waitUntil } from '../helpers/wait.js';

const raw = (b64: string) => Buffer.from(b64, 'base64');

function assertCheckpoint(store: LmdbStore, cp: LedgerRecord, publicKey: string): void {
  assert.equal(cp.kind, 'checkpoint');
  assert.equal(cp.size, cp.seq, 'a checkpoint covers every record before it');
  assert.equal(cp.root, store.root(cp.size));
  assert.ok(verifyPayload(raw(publicKey), checkpointPayload({ key_id: cp.key_id as string, root: cp.root, size: cp.size }), cp.signature as string));
}

test('the data dir key: created once (0600), reloaded, announced by one unsigned key record', async (t) => {
  const dataDir = tempDir(t);
  const key = loadOrCreateSigningKey(dataDir);
  const path = join(dataDir, SIGNING_KEY_FILE);
  assert.equal(statSync(path).mode & 0o777, 0o600);
  const file = JSON.parse(readFileSync(path, 'utf8'));
  assert.equal(raw(file.seed).length, 32);
  assert.equal(key.key_id, keyIdOf(raw(key.public_key)));
  assert.deepEqual([file.key_id, file.public_key], [key.key_id, key.public_key]);
  assert.equal(loadOrCreateSigningKey(dataDir).key_id, key.key_id);
  const store = await LmdbStore.open({ dataDir });
  t.after(() => store.close());
  const rec = await ensureKeyRecord(store, key);
  assert.deepEqual([rec!.kind, rec!.key_id, rec!.public_key, rec!.signature], ['key', key.key_id, key.public_key, null]);
  assert.equal(await ensureKeyRecord(store, key), undefined);
  assert.equal(store.size(), 1);
  assert.deepEqual(store.keys(), [{ key_id: key.key_id, public_key: key.public_key }]);
  const other = loadOrCreateSigningKey(tempDir(t));
  await assert.rejects(ensureKeyRecord(store, other), (e: unknown) => e instanceof WritError && /not the ledger's current key/.test(e.message));
});

test('checkpointer: every N records, none when nothing is new, a final one on stop, witness lines in order', async (t) => {
  const dataDir = tempDir(t);
  const witnessDir = join(tempDir(t), 'witness');
  const store = await LmdbStore.open({ dataDir });
  const key = loadOrCreateSigningKey(dataDir);
  await ensureKeyRecord(store, key);
  const cp = startCheckpointer(store, { key, everyRecords: 5, witnessDir });
  const first = (await cp.checkpointNow())!;
  assertCheckpoint(store, first, key.public_key);
  assert.equal(first.size, 1);
  assert.equal(await cp.checkpointNow(), undefined, 'nothing new since the last checkpoint');
  for (let i = 0; i < 12; i++) {
    await store.write((tx) => tx.append({ kind: 'decision', i }));
    cp.maybeCheckpoint();
  }
  await cp.stop();
  const cps = store.listRecords({ kind: 'checkpoint' }).records;
  assert.ok(cps.length >= 3, `expected periodic checkpoints, got ${cps.length}`);
  for (const c of cps) assertCheckpoint(store, c, key.public_key);
  assert.equal(cps.at(-1)!.seq, store.size() - 1, 'the final checkpoint covers everything');
  const lines = readFileSync(join(witnessDir, WITNESS_FILE), 'utf8').trim().split('\n');
  assert.deepEqual(lines, cps.map(recordLine));
  // Consistency between consecutive checkpoints verifies.
  for (let i = 1; i < cps.length; i++) {
    const [a, b] = [cps[i - 1]!, cps[i]!];
    const proof = store.consistencyProof(a.size as number, b.size as number).map((h) => Buffer.from(h, 'hex'));
    verifyConsistency(a.size as number, b.size as number, hashToBytes(a.root as string), hashToBytes(b.root as string), proof);
  }
  // A restart knows where the last checkpoint is.
  await store.close();
  const again = await LmdbStore.open({ dataDir });
  t.after(() => again.close());
  const cp2 = startCheckpointer(again, { key, everyRecords: 5 });
  assert.equal(await cp2.checkpointNow(), undefined);
  // A stop (SIGTERM) always writes one, even right after another (docs/protocol.md §1).
  await cp2.stop();
  const after = again.listRecords({ kind: 'checkpoint' }).records;
  assert.equal(after.length, cps.length + 1);
  assert.equal(after.at(-1)!.seq, again.size() - 1);
  assertCheckpoint(again, after.at(-1)!, key.public_key);
});

test('checkpointer: the timer writes one when records are new; a failed checkpoint write is reported, not thrown', async (t) => {
  let failCheckpoints = false;
  const store = await LmdbStore.open({
    dataDir: tempDir(t),
    faults: {
      beforeCommit: (l) => {
        if (failCheckpoints && l === 'checkpoint') throw new Error('injected');
      },
    },
  });
  t.after(() => store.close());
  const key = loadOrCreateSigningKey(tempDir(t));
  await ensureKeyRecord(store, key);
  const errors: unknown[] = [];
  const cp = startCheckpointer(store, { key, everyRecords: 2, everyMs: 20, onError: (e) => errors.push(e) });
  await store.write((tx) => tx.append({ kind: 'x' }));
  await waitUntil(async () => (await store.latestCheckpoint()) !== undefined, 'the first checkpoint', 5_000, 10);
  assertCheckpoint(store, store.latestCheckpoint()!, key.public_key);
  failCheckpoints = true;
  await store.write((tx) => {
    tx.append({ kind: 'x' });
    tx.append({ kind: 'x' });
  });
  cp.maybeCheckpoint();
  await waitUntil(() => errors.length > 0, 'the failed checkpoint to be reported', 5_000, 10);
  assert.ok(errors.length > 0 && errors.every((e) => e instanceof WritError && e.code === 'STORE_UNAVAILABLE'));
  failCheckpoints = false;
  await cp.stop();
  assert.equal(store.latestCheckpoint()!.seq, store.size() - 1);
});

test('key rotation: a key record signed by the previous key, the old key file kept, checkpoints switch keys', async (t) => {
  const dataDir = tempDir(t);
  const store = await LmdbStore.open({ dataDir });
  const oldKey = loadOrCreateSigningKey(dataDir);
  await ensureKeyRecord(store, oldKey);
  const { previous, next, record, file } = await rotateSigningKey(store, { keyFile: join(dataDir, SIGNING_KEY_FILE) });
  assert.equal(file, join(dataDir, SIGNING_KEY_FILE));
  assert.equal(previous.key_id, oldKey.key_id);
  assert.deepEqual([record.kind, record.key_id, record.public_key], ['key', next.key_id, next.public_key]);
  assert.ok(verifyPayload(raw(oldKey.public_key), keyPayload({ key_id: next.key_id, public_key: next.public_key }), record.signature as string));
  assert.equal(readKeyFile(join(dataDir, `signing-key.${oldKey.key_id}.json`)).key_id, oldKey.key_id);
  assert.equal(loadOrCreateSigningKey(dataDir).key_id, next.key_id);
  assert.deepEqual(
    store.keys().map((k) => k.key_id),
    [oldKey.key_id, next.key_id],
  );
  await ensureKeyRecord(store, loadOrCreateSigningKey(dataDir));
  const cp = startCheckpointer(store, { key: loadOrCreateSigningKey(dataDir) });
  assertCheckpoint(store, (await cp.checkpointNow())!, next.public_key);
  await cp.stop();
  await store.close();
});

test('writ keygen and writ keys rotate', async (t) => {
  const dir = tempDir(t);
  const out = join(dir, 'k.json');
  const gen = await runWrit(['keygen', '--out', out]);
  assert.equal(gen.code, 0, gen.stderr);
  const printed = JSON.parse(gen.stdout);
  assert.deepEqual(printed, { key_id: readKeyFile(out).key_id, public_key: readKeyFile(out).public_key, file: out });
  assert.equal(statSync(out).mode & 0o777, 0o600);
  const again = await runWrit(['keygen', '--out', out]);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /refusing to overwrite/);
  assert.equal(readKeyFile(out).key_id, printed.key_id);

  const dataDir = join(dir, 'data');
  const inDir = await runWrit(['keygen', '--data-dir', dataDir]);
  assert.equal(inDir.code, 0, inDir.stderr);
  const first = JSON.parse(inDir.stdout);
  assert.ok(existsSync(join(dataDir, SIGNING_KEY_FILE)));
  const rotated = await runWrit(['keys', 'rotate', '--data-dir', dataDir]);
  assert.equal(rotated.code, 0, rotated.stderr);
  const r = JSON.parse(rotated.stdout);
  assert.equal(r.previous_key_id, first.key_id);
  assert.equal(r.seq, 1, 'the first key record, then the rotation');
  const store = await LmdbStore.open({ dataDir });
  assert.deepEqual(
    store.keys().map((k) => k.key_id),
    [first.key_id, r.key_id],
  );
  // While the store is open (a running server), rotation is refused by the lock.
  const refused = await runWrit(['keys', 'rotate', '--data-dir', dataDir]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, new RegExp(`is in use by pid ${process.pid}`));
  await store.close();
  assert.equal((await runWrit(['keys', 'bogus'])).code, 2);
  assert.equal((await runWrit(['keygen', '--help'])).code, 0);
});

test('writ keys rotate of a signing_key_file: in place keeps the old key beside it; --out leaves the file in force untouched', async (t) => {
  const dir = tempDir(t);
  const keyFile = join(dir, 'secrets', 'writ-key.json');
  assert.equal((await runWrit(['keygen', '--out', keyFile])).code, 0);
  const first = readKeyFile(keyFile);
  const dataDir = join(dir, 'data');
  const store = await LmdbStore.open({ dataDir });
  await ensureKeyRecord(store, first);
  await store.close();

  const inPlace = await runWrit(['keys', 'rotate', '--data-dir', dataDir, '--signing-key-file', keyFile]);
  assert.equal(inPlace.code, 0, inPlace.stderr);
  const r1 = JSON.parse(inPlace.stdout);
  assert.deepEqual([r1.previous_key_id, r1.file, readKeyFile(keyFile).key_id], [first.key_id, keyFile, r1.key_id]);
  assert.equal(readKeyFile(join(dir, 'secrets', `writ-key.${first.key_id}.json`)).key_id, first.key_id);
  assert.equal(existsSync(join(dataDir, SIGNING_KEY_FILE)), false, 'the data dir key is not the deployment key');

  // The deployment named by a config file, as writ serve reads it; the new key written elsewhere.
  const config = join(dir, 'writ.json');
  writeFileSync(config, JSON.stringify({ data_dir: dataDir, signing_key_file: keyFile }));
  const out = join(dir, 'next-key.json');
  const toOut = await runWrit(['keys', 'rotate', '--config', config, '--out', out]);
  assert.equal(toOut.code, 0, toOut.stderr);
  const r2 = JSON.parse(toOut.stdout);
  assert.deepEqual([r2.previous_key_id, r2.file, readKeyFile(out).key_id], [r1.key_id, out, r2.key_id]);
  assert.equal(readKeyFile(keyFile).key_id, r1.key_id, '--out leaves the key file in force as it was');
  assert.equal(statSync(out).mode & 0o777, 0o600);

  // The file in force is now behind the ledger: rotating from it again is refused, and nothing is written.
  const stale = await runWrit(['keys', 'rotate', '--config', config, '--out', join(dir, 'stale.json')]);
  assert.equal(stale.code, 1);
  assert.match(stale.stderr, /not the ledger's current key/);
  assert.equal(existsSync(join(dir, 'stale.json')), false);
  const reopened = await LmdbStore.open({ dataDir });
  assert.deepEqual(
    reopened.keys().map((k) => k.key_id),
    [first.key_id, r1.key_id, r2.key_id],
  );
  await reopened.close();
});
