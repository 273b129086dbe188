/**
 * Interoperability with an independent implementation: Go's golang.org/x/mod/sumdb/note and sumdb/tlog
 * (Debian: golang-go, golang-golang-x-mod-dev; .ci/run installs them) read what `writ ledger tiles`
 * writes — the signed checkpoint verifies under writ's vkey, the tiles give its root, every entry hashes
 * to its leaf and proves its inclusion (test/interop/tlog-check.go). Skipped, saying why, where the Go
 * toolchain or those sources are absent.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO, WRIT_BIN, startTestServer } from '../helpers/server.js';

const GOPATH = '/usr/share/gocode';
const goMissing =
  spawnSync('go', ['version'], { encoding: 'utf8' }).status !== 0
    ? 'the Go toolchain is not installed (apt-get install golang-go)'
    : !existsSync(join(GOPATH, 'src/golang.org/x/mod/sumdb/tlog/tile.go'))
      ? `golang.org/x/mod sources are not in ${GOPATH} (apt-get install golang-golang-x-mod-dev)`
      : undefined;

test("Go sumdb/note and sumdb/tlog accept writ's signed checkpoint, tiles, entry bundles and proofs", { timeout: 180_000, skip: goMissing }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'writ-go-'));
  const s = await startTestServer({ config: { checkpoint: { every_records: 50, every_ms: 600_000 } } });
  let stopped = false;
  try {
    for (let i = 0; i < 300; i++) {
      const r = await fetch(`${s.url}/v1/entities/Role/r${i}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${s.tokens.admin}`, 'content-type': 'application/json' },
        body: '{"attrs":{},"parents":[]}',
      });
      assert.equal(r.status, 200);
    }
    const keys = (await (await fetch(`${s.url}/v1/ledger/keys`, { headers: { authorization: `Bearer ${s.tokens.auditor}` } })).json()) as {
      keys: Array<{ vkey: string }>;
    };
    const vkey = keys.keys[0]!.vkey;
    const config = join(dir, 'config.json');
    writeFileSync(config, readFileSync(s.configPath));
    await s.stop({ keepData: true });
    stopped = true;
    const out = join(dir, 'static');
    const tiles = spawnSync(process.execPath, [WRIT_BIN, 'ledger', 'tiles', '--config', config, '--out', out], { encoding: 'utf8' });
    assert.equal(tiles.status, 0, tiles.stderr);
    const size = (JSON.parse(tiles.stdout) as { size: number }).size;
    assert.ok(size > 256);
    const go = spawnSync('go', ['run', join(REPO, 'test/interop/tlog-check.go'), out, vkey], {
      encoding: 'utf8',
      cwd: dir,
      env: { ...process.env, GO111MODULE: 'off', GOPATH, GOCACHE: join(dir, 'go-cache'), GOFLAGS: '' },
    });
    assert.equal(go.status, 0, `${go.stdout}\n${go.stderr}`);
    assert.equal(go.stdout.trim(), `ok ${vkey.split('+')[0]} ${size}`);
  } finally {
    if (!stopped) await s.stop();
    rmSync(s.dataDir, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  }
});
