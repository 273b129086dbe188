/**
 * The witness dir holds the store to what this deployment already signed (src/checkpoints/witness.ts):
 * a store restored from an older copy, a fresh store, or another ledger under a witness that saw more is
 * refused at start (WITNESS_MISMATCH), and starts once the operator moves the witness file aside. A
 * normal restart, and a witness line torn by a crash, start as before.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, offboardingBody, startTestServer, WRIT_BIN } from '../helpers/server.js';
import { latestWitnessed, WITNESS_FILE } from '../../src/checkpoints/witness.js';

function refusedStart(configPath: string): { status: number | null; stderr: string } {
  const r = spawnSync(process.execPath, [WRIT_BIN, 'serve', '--config', configPath], { encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stderr: r.stderr };
}

/** Starts a sidecar on `dataDir` with `witnessDir`, makes `decisions` decisions, stops it (SIGTERM: a checkpoint). */
async function serveAndStop(dataDir: string, witnessDir: string, decisions: number, prefix: string): Promise<string> {
  const s = await startTestServer({ dataDir, config: { witness_dir: witnessDir } });
  for (let i = 0; i < decisions; i++) {
    const r = await call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, body: offboardingBody({ execution_id: `${prefix}-${i}` }) });
    assert.equal(r.status, 200, r.text);
  }
  const configPath = `${dataDir}.config.json`;
  writeFileSync(configPath, readFileSync(s.configPath));
  assert.equal(await s.stop({ keepData: true }), 0, s.output());
  return configPath;
}

test('a store older than its witness, a fresh one, or another ledger is refused at start', async () => {
  const root = mkdtempSync(join(tmpdir(), 'writ-witness-'));
  const witness = join(root, 'witness');
  const data = join(root, 'data');
  try {
    await serveAndStop(data, witness, 2, 'W-A');
    const backup = join(root, 'backup');
    cpSync(data, backup, { recursive: true });
    // A normal restart under the same witness starts, and signs more.
    const config = await serveAndStop(data, witness, 3, 'W-B');
    const latest = latestWitnessed(witness)!;
    assert.ok(latest.seq > 4, JSON.stringify(latest));

    // Restored from the older copy: refused, naming the witness file.
    rmSync(data, { recursive: true, force: true });
    cpSync(backup, data, { recursive: true });
    let r = refusedStart(config);
    assert.notEqual(r.status, 0, r.stderr);
    assert.match(r.stderr, /WITNESS_MISMATCH/, r.stderr);
    assert.match(r.stderr, new RegExp(`checkpoint at seq ${latest.seq}`), r.stderr);
    assert.ok(r.stderr.includes(join(witness, WITNESS_FILE)), r.stderr);

    // Another ledger, longer than the witness's latest checkpoint: refused as a different record.
    const other = join(root, 'other');
    const otherConfig = await serveAndStop(other, join(root, 'other-witness'), 8, 'W-O');
    const otherJson = JSON.parse(readFileSync(otherConfig, 'utf8'));
    writeFileSync(otherConfig, JSON.stringify({ ...otherJson, witness_dir: witness }));
    r = refusedStart(otherConfig);
    assert.notEqual(r.status, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`WITNESS_MISMATCH: .* holds a different record at seq ${latest.seq}`), r.stderr);

    // A fresh data dir under the same witness: refused too (the ledger it signed is gone).
    const fresh = join(root, 'fresh');
    writeFileSync(`${fresh}.config.json`, JSON.stringify({ ...otherJson, data_dir: fresh, witness_dir: witness }));
    r = refusedStart(`${fresh}.config.json`);
    assert.notEqual(r.status, 0, r.stderr);
    assert.match(r.stderr, /WITNESS_MISMATCH/, r.stderr);

    // The operator moves the witness file aside: the restored store starts.
    renameSync(join(witness, WITNESS_FILE), join(witness, `${WITNESS_FILE}.before-restore`));
    const s = await startTestServer({ dataDir: data, config: { witness_dir: witness } });
    const keys = await call(s, 'GET', '/v1/ledger/checkpoint', { token: s.tokens.auditor });
    assert.equal(keys.status, 200, keys.text);
    assert.equal(await s.stop({ keepData: true }), 0);
  } finally {
    rmSync(root, { recursive: true, force: true });
    for (const name of ['data', 'other', 'fresh']) rmSync(join(root, `${name}.config.json`), { force: true });
    rmSync(`${root}`, { recursive: true, force: true });
  }
});

test('a witness line torn by a crash is skipped; the store still matches the last whole one', async () => {
  const root = mkdtempSync(join(tmpdir(), 'writ-witness-torn-'));
  const witness = join(root, 'witness');
  const data = join(root, 'data');
  try {
    const config = await serveAndStop(data, witness, 2, 'T');
    const whole = latestWitnessed(witness)!;
    // A later checkpoint's line, cut off mid-write (no newline, not JSON).
    appendFileSync(join(witness, WITNESS_FILE), '{"from_a_crash":true,"hash":"sha256:00","kind":"checkpoint","seq":99');
    assert.deepEqual(latestWitnessed(witness), whole);
    const s = await startTestServer({ dataDir: data, config: { witness_dir: witness } });
    assert.equal(await s.stop({ keepData: true }), 0, s.output());
    // The checkpoints written after it are whole lines of their own, not glued to the fragment.
    const after = latestWitnessed(witness)!;
    assert.ok(after.seq > whole.seq, JSON.stringify({ after, whole }));
    const lines = readFileSync(join(witness, WITNESS_FILE), 'utf8').split('\n');
    assert.ok(
      lines.some((l) => l.startsWith('{"from_a_crash"') && l.endsWith('"seq":99')),
      'the fragment stays, ended by a newline',
    );
    rmSync(config, { force: true });
  } finally {
    rmSync(root, { recursive: true, force: true });
    rmSync(join(root, 'data.config.json'), { force: true });
  }
});

test('a checkpoint made durable but never witnessed (a crash between the two) is appended at the next start', async () => {
  const root = mkdtempSync(join(tmpdir(), 'writ-witness-gap-'));
  const witness = join(root, 'witness');
  const data = join(root, 'data');
  try {
    await serveAndStop(data, witness, 2, 'W-GAP');
    // The crash window: the last checkpoint is in the ledger, its witness line never written.
    const file = join(witness, WITNESS_FILE);
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    assert.ok(lines.length >= 2, lines.join('\n'));
    const lost = JSON.parse(lines.at(-1)!) as { seq: number };
    writeFileSync(file, `${lines.slice(0, -1).join('\n')}\n`);
    const s = await startTestServer({ dataDir: data, config: { witness_dir: witness } });
    try {
      const ledger = await call(s, 'GET', '/v1/ledger/records?kind=checkpoint&limit=1000', { token: s.tokens.auditor });
      const witnessed = readFileSync(file, 'utf8').trimEnd().split('\n');
      for (const record of ledger.body.records as Array<{ seq: number }>) {
        assert.ok(
          witnessed.some((l) => JSON.parse(l).seq === record.seq),
          `checkpoint ${record.seq} is witnessed`,
        );
      }
      assert.ok(witnessed.some((l) => JSON.parse(l).seq === lost.seq));
      assert.equal(new Set(witnessed).size, witnessed.length, 'no line twice');
    } finally {
      assert.equal(await s.stop({ keepData: true }), 0);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
    rmSync(`${data}.config.json`, { force: true });
  }
});
