/**
 * A data dir whose ledger was lost must not start as a new, empty ledger under its old signing key
 * (found by a review: an emptied data.mdb started at "ledger 14 records" and allowed an execution that
 * had been `invoking` — a second invocation). Nor may a lost key file be replaced by a fresh key that
 * the ledger does not know, left where the operator must restore the old one. A key put in a fresh data
 * dir before the first start is still used.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, offboardingBody, startTestServer, WRIT_BIN } from '../helpers/server.js';

/** Runs `writ serve` on a config expected to refuse to start; its exit status and stderr. */
function refusedStart(configPath: string): { status: number | null; stderr: string } {
  const r = spawnSync(process.execPath, [WRIT_BIN, 'serve', '--config', configPath], { encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stderr: r.stderr };
}

async function ledgerWithAnInvokingExecution(dataDir: string): Promise<string> {
  const s = await startTestServer({ dataDir });
  const r = await call(s, 'POST', '/v1/decisions', {
    token: s.tokens.pep,
    body: offboardingBody({ execution_id: 'LOST-1', phase: 'execute', action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } } }),
  });
  assert.equal(r.body.state, 'invoking', r.text);
  // The server's config, kept beside the data dir (stop removes the test server's own copy).
  const configPath = `${dataDir}.config.json`;
  writeFileSync(configPath, readFileSync(s.configPath));
  assert.equal(await s.stop({ keepData: true }), 0);
  return configPath;
}

test('an emptied or deleted data.mdb beside the signing key: refused, not a new ledger', async () => {
  for (const damage of ['emptied', 'deleted'] as const) {
    const dataDir = mkdtempSync(join(tmpdir(), 'writ-lost-'));
    try {
      const config = await ledgerWithAnInvokingExecution(dataDir);
      const file = join(dataDir, 'store', 'data.mdb');
      if (damage === 'emptied') truncateSync(file, 0);
      else unlinkSync(file);
      const r = refusedStart(config);
      assert.notEqual(r.status, 0, damage);
      assert.match(r.stderr, /STORE_CORRUPT|has a signing key but its ledger/, `${damage}: ${r.stderr}`);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(`${dataDir}.config.json`, { force: true });
    }
  }
});

test('a missing key file for a ledger that has keys: refused, and no fresh key is left in its place', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'writ-lost-key-'));
  try {
    const config = await ledgerWithAnInvokingExecution(dataDir);
    unlinkSync(join(dataDir, 'signing-key.json'));
    const r = refusedStart(config);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /signing-key\.json is missing: restore it/, r.stderr);
    assert.equal(existsSync(join(dataDir, 'signing-key.json')), false);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(`${dataDir}.config.json`, { force: true });
  }
});

test("a key put in a fresh data dir before the first start is the ledger's first key", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'writ-prekey-'));
  try {
    mkdirSync(dataDir, { recursive: true });
    const out = spawnSync(process.execPath, [WRIT_BIN, 'keygen', '--out', join(dataDir, 'signing-key.json')], { encoding: 'utf8' });
    assert.equal(out.status, 0, out.stderr);
    const keyId = /ed25519:[0-9a-f]{16}/.exec(out.stdout + out.stderr)?.[0];
    assert.ok(keyId, out.stdout);
    const s = await startTestServer({ dataDir });
    try {
      const keys = await call(s, 'GET', '/v1/ledger/keys', { token: s.tokens.auditor });
      assert.deepEqual(
        keys.body.keys.map((k: { key_id: string }) => k.key_id),
        [keyId],
      );
    } finally {
      await s.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
