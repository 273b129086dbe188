/**
 * `writ keys rotate` on a PostgreSQL deployment (docs/protocol.md §6, §9) while its replicas keep serving:
 * the key record is signed by the previous key, a replica still holding that key writes no more
 * checkpoints (and says so), one restarted with it refuses to start, one started with the new key signs
 * checkpoints with it, and the whole ledger verifies offline with both keys.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readKeyFile } from '../../src/checkpoints/keys.js';
import { keyPayload, verifyPayload } from '../../src/ledger/signing.js';
import { call, startTestServer, WRIT_BIN, type TestServer } from '../helpers/server.js';
import { readBody, replicasOnOneDatabase, startReplicas } from './helpers.js';
import { until } from '../helpers/wait.js';

const CHECKPOINTS = { checkpoint: { every_records: 4, every_ms: 100 } };

function writ(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [WRIT_BIN, ...args], { encoding: 'utf8', env: { ...process.env, WRIT_CONFIG: '', WRIT_DATABASE_URL: '' } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('writ keys rotate on replicas of one PostgreSQL database', () => {
  const f = replicasOnOneDatabase(2, CHECKPOINTS);

  test('replicas keep deciding; the retired key signs no checkpoint after the key record; the new key does', async () => {
    const d = f.d;
    const [a, b] = f.rs as [TestServer, TestServer];
    const auditor = a.tokens.auditor;
    for (let i = 0; i < 6; i++)
      assert.equal((await call(f.rs[i % 2]!, 'POST', '/v1/decisions', { token: a.tokens.pep, body: readBody(`ROT-A-${i}`) })).status, 200);
    const oldKey = readKeyFile(d.keyFile);
    const newFile = join(d.dir, 'signing-key.new.json');

    const rotated = writ(['keys', 'rotate', '--database-url', d.databaseUrl, '--signing-key-file', d.keyFile, '--out', newFile]);
    assert.equal(rotated.code, 0, rotated.stderr);
    const r = JSON.parse(rotated.stdout);
    const newKey = readKeyFile(newFile);
    assert.deepEqual(r, { key_id: newKey.key_id, public_key: newKey.public_key, previous_key_id: oldKey.key_id, seq: r.seq, file: newFile });
    assert.equal(readKeyFile(d.keyFile).key_id, oldKey.key_id, '--out leaves the key file in force untouched');
    const keyRecord = (await call(a, 'GET', `/v1/ledger/records/${r.seq}`, { token: auditor })).body;
    assert.deepEqual([keyRecord.kind, keyRecord.key_id, keyRecord.public_key], ['key', newKey.key_id, newKey.public_key]);
    assert.ok(
      verifyPayload(Buffer.from(oldKey.public_key, 'base64'), keyPayload({ key_id: newKey.key_id, public_key: newKey.public_key }), keyRecord.signature),
    );
    const keys = (await call(b, 'GET', '/v1/ledger/keys', { token: auditor })).body.keys;
    assert.deepEqual(
      keys.map((k: { key_id: string }) => k.key_id),
      [oldKey.key_id, newKey.key_id],
    );

    // A rotation from a key that is no longer the ledger's is refused, and its new key file set aside.
    const stale = writ(['keys', 'rotate', '--database-url', d.databaseUrl, '--signing-key-file', d.keyFile, '--out', join(d.dir, 'stale.json')]);
    assert.equal(stale.code, 1, stale.stdout);
    assert.match(stale.stderr, /not the ledger's current key/);
    assert.equal(existsSync(join(d.dir, 'stale.json')), false);

    // The running replicas (old key) still decide — well past every_records — but write no checkpoint.
    for (let i = 0; i < 12; i++)
      assert.equal((await call(f.rs[i % 2]!, 'POST', '/v1/decisions', { token: a.tokens.pep, body: readBody(`ROT-B-${i}`) })).status, 200);
    await until(
      async () => (a.output().includes('was rotated out') && b.output().includes('was rotated out')) || undefined,
      'both replicas report their key rotated out',
    );
    for (const s of [a, b]) assert.match((await call(s, 'GET', '/metrics')).text, /^writ_signing_key_retired 1$/m, 'and say so on /metrics');
    const checkpointsAfter = async (s: TestServer) =>
      (await call(s, 'GET', `/v1/ledger/records?kind=checkpoint&from=${r.seq}&limit=1000`, { token: auditor })).body.records;
    assert.deepEqual(await checkpointsAfter(a), [], 'no checkpoint after the key record while only retired keys run');
    // SIGTERM on a retired replica: exit 0, and it says that it wrote no final checkpoint.
    assert.equal(await a.stop(), 0);
    assert.match(a.output(), /no final checkpoint from this replica: its signing key \S+ was rotated out/);
    f.rs = f.rs.filter((s) => s !== a);
    assert.deepEqual(await checkpointsAfter(b), [], 'still none');

    // Restarted with the retired key: refused. With the new key: it starts and signs with it.
    await assert.rejects(startReplicas(d, 1, { config: CHECKPOINTS }), /not the ledger's current key/);
    const c = await startTestServer({ config: { database_url: d.databaseUrl, signing_key_file: newFile, ...CHECKPOINTS } });
    f.rs.push(c);
    const after = await checkpointsAfter(c);
    assert.ok(after.length >= 1, 'the new replica checkpoints at start');
    for (const cp of after) assert.equal(cp.key_id, newKey.key_id);
    assert.equal((await call(c, 'GET', '/v1/ledger/checkpoint', { token: auditor })).body.key_id, newKey.key_id);
    const cMetrics = (await call(c, 'GET', '/metrics')).text;
    assert.match(cMetrics, /^writ_signing_key_retired 0$/m);
    assert.match(cMetrics, /^writ_checkpoints_written_total [1-9]\d*$/m);

    // Offline: the whole ledger verifies against the keys the auditor API serves (each key record signed by the one before).
    const dir = mkdtempSync(join(tmpdir(), 'writ-rot-'));
    try {
      const exported = await call(c, 'GET', '/v1/ledger/export', { token: auditor });
      writeFileSync(join(dir, 'export.jsonl'), exported.text);
      writeFileSync(join(dir, 'keys.json'), (await call(c, 'GET', '/v1/ledger/keys', { token: auditor })).text);
      const v = writ(['verify', join(dir, 'export.jsonl'), '--keys', join(dir, 'keys.json')]);
      assert.equal(v.code, 0, v.stdout + v.stderr);
      assert.equal(JSON.parse(v.stdout).ok, true);
      assert.ok(readFileSync(join(dir, 'export.jsonl'), 'utf8').includes(`"kind":"key"`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
