/**
 * Startup integrity (issue 7): the store checks its chain tail and latest checkpoint on open. A store
 * whose bytes were flipped, or whose records were cut out, refuses to serve — `writ serve` exits
 * non-zero naming the first bad seq — until the operator runs `writ repair --data-dir`, which appends
 * a signed `chain_break` record chaining from the last good hash; then it serves again and its export
 * verifies. A checkpoint an auditor held from before the break no longer verifies against the
 * repaired ledger (the break is visible, not papered over).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jcs } from '../../src/util/canonical.js';
import { verifyPayload } from '../../src/ledger/signing.js';
import { openStoreDbs } from '../../src/store/layout.js';
import { REPO, startTestServer, TEST_TOKENS, WRIT_BIN, type TestServer } from '../helpers/server.js';
import { assertLedgerVerifies, readBody, req, snapshotLedger, writVerify } from './harness.js';
import { waitFor } from '../helpers/wait.js';

const T = TEST_TOKENS;
/** The store matrix (kill.postgres.test.ts): every test here edits or repairs the LMDB files directly. */
const LMDB_ONLY =
  process.env.WRIT_TEST_STORE === 'postgres'
    ? 'PostgreSQL store: these tests flip bytes in, cut records out of and truncate the LMDB data file, and `writ repair --data-dir` repairs LMDB; none of that exists on PostgreSQL'
    : false;

/** A stopped data dir with `n` decisions in its ledger, and what the auditor saw before stopping. */
async function populated(n: number) {
  const base = mkdtempSync(join(tmpdir(), 'writ-chaos-integrity-'));
  const dataDir = join(base, 'data');
  mkdirSync(dataDir);
  const s = await startTestServer({ dataDir, config: { checkpoint: { every_records: 1000, every_ms: 150 } } });
  const decisions: Array<{ seq: number; hash: string; decision_id: string; id: string }> = [];
  for (let i = 0; i < n; i++) {
    const id = `integrity-${i}`;
    const r = await req(s.url, 'POST', '/v1/decisions', { token: T.pep, body: readBody(id, i % 3 === 2 ? 'execute' : 'propose') });
    assert.equal(r.status, 200, r.text);
    decisions.push({ seq: r.body.record.seq, hash: r.body.record.hash, decision_id: r.body.decision_id, id });
  }
  // The auditor holds a checkpoint covering every decision before the store is stopped.
  let snap = await snapshotLedger(s.url);
  await waitFor(async () => {
    if (snap.checkpoint.size <= decisions.at(-1)!.seq) snap = await snapshotLedger(s.url);
    return snap.checkpoint.size > decisions.at(-1)!.seq;
  }, 5_000);
  assert.ok(snap.checkpoint.size > decisions.at(-1)!.seq, 'a checkpoint covers every decision');
  assert.equal(await s.stop({ keepData: true }), 0);
  return { base, dataDir, decisions, snap };
}

/** Runs `writ serve` on a data dir and expects it to refuse: returns exit code and output. */
function serveRefuses(dataDir: string, base: string): Promise<{ code: number | null; signal: string | null; out: string }> {
  const configPath = join(base, `config-${Date.now()}.json`);
  writeFileSync(
    configPath,
    JSON.stringify({
      listen: '127.0.0.1:0',
      policy_dir: join(REPO, 'policies'),
      data_dir: dataDir,
      tokens: [{ token: T.auditor, role: 'auditor' }],
    }),
  );
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WRIT_BIN, 'serve', '--config', configPath], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`writ serve on a corrupt store did not exit within 20 s:\n${out}`));
    }, 20_000);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out });
    });
  });
}

function repair(dataDir: string): { code: number | null; report: any; out: string } {
  const r = spawnSync(process.execPath, [WRIT_BIN, 'repair', '--data-dir', dataDir, '--reason', 'chaos integrity test'], { encoding: 'utf8', timeout: 60_000 });
  let report: any;
  try {
    report = JSON.parse(r.stdout.trim().split('\n').pop() ?? '');
  } catch {
    report = undefined;
  }
  return { code: r.status, report, out: `${r.stdout}\n${r.stderr}` };
}

/** Flips one character of every copy of `needle` in the LMDB file (old page copies included). */
function flipInDataFile(dataDir: string, needle: string): number {
  const file = join(dataDir, 'store', 'data.mdb');
  const bytes = readFileSync(file);
  const pattern = Buffer.from(needle, 'utf8');
  let count = 0;
  for (let at = bytes.indexOf(pattern); at >= 0; at = bytes.indexOf(pattern, at + 1)) {
    const i = at + pattern.length - 1;
    // A hex digit for another one: the JSON stays valid, only the content (so the hash) changes.
    bytes[i] = bytes[i] === 0x30 ? 0x31 : 0x30;
    count++;
  }
  writeFileSync(file, bytes);
  return count;
}

/** After a repair, the ledger serves, verifies, and the chain_break links the last good record. */
async function assertRepaired(dataDir: string, firstBad: number, before: Awaited<ReturnType<typeof populated>>['snap']) {
  let s: TestServer | undefined;
  try {
    s = await startTestServer({ dataDir });
    const snap = await assertLedgerVerifies(s.url);
    const brk = snap.records[firstBad]!;
    assert.equal(brk.kind, 'chain_break', `seq ${firstBad} is the chain_break`);
    assert.equal(brk.prev, before.records[firstBad - 1]!.hash, 'the chain_break chains from the last good hash');
    assert.equal(brk.last_good_hash, before.records[firstBad - 1]!.hash);
    assert.equal(brk.last_good_seq, firstBad - 1);
    const keys = (snap.keys as { keys: Array<{ key_id: string; public_key: string }> }).keys;
    const key = keys.find((k) => k.key_id === brk.key_id);
    assert.ok(key, `the chain_break is signed by a ledger key (${brk.key_id})`);
    const payload = `writ-chain-break/1\n${jcs({ last_good_hash: brk.last_good_hash, last_good_seq: brk.last_good_seq, reason: brk.reason })}`;
    assert.ok(verifyPayload(Buffer.from(key.public_key, 'base64'), payload, brk.signature), 'the chain_break signature verifies');
    // Everything before the break is exactly what the auditor saw before.
    assert.deepEqual(snap.lines.slice(0, firstBad), before.lines.slice(0, firstBad));
    // An auditor who held the pre-break checkpoint sees the break.
    const held = writVerify(snap.lines, snap.keys, before.checkpoint);
    assert.notEqual(held.code, 0, `a checkpoint held from before the cut must not verify against the repaired ledger: ${held.raw}`);
    // And the repaired store takes new decisions on top.
    const r = await req(s.url, 'POST', '/v1/decisions', { token: T.pep, body: readBody(`after-repair-${firstBad}`, 'propose') });
    assert.equal(r.status, 200, r.text);
    assert.ok(r.body.record.seq > firstBad);
    await assertLedgerVerifies(s.url);
  } finally {
    await s?.stop({ keepData: true });
  }
}

describe('startup integrity', { skip: LMDB_ONLY }, () => {
  test('flipped bytes in a record: serve exits non-zero naming the seq; repair cuts there and it serves again', async () => {
    const p = await populated(30);
    try {
      const victim = p.decisions[12]!;
      const copies = flipInDataFile(p.dataDir, victim.decision_id);
      assert.ok(copies >= 1, 'the record was found in the LMDB file');
      const refused = await serveRefuses(p.dataDir, p.base);
      assert.notEqual(refused.code, 0, `serve must refuse a corrupt store:\n${refused.out}`);
      assert.equal(refused.signal, null, `serve exits, it does not crash:\n${refused.out}`);
      assert.match(refused.out, new RegExp(`\\bseq ${victim.seq}\\b`), `the message names the first bad seq ${victim.seq}:\n${refused.out}`);
      assert.doesNotMatch(refused.out, /listening on/);
      // Refuses again on a second try: nothing was "fixed" silently.
      assert.notEqual((await serveRefuses(p.dataDir, p.base)).code, 0);

      const fixed = repair(p.dataDir);
      assert.equal(fixed.code, 0, fixed.out);
      assert.equal(fixed.report?.outcome, 'cut', fixed.out);
      assert.equal(fixed.report.dropped_from_seq, victim.seq);
      assert.equal(fixed.report.last_good_seq, victim.seq - 1);
      assert.equal(fixed.report.last_good_hash, p.snap.records[victim.seq - 1]!.hash);
      await assertRepaired(p.dataDir, victim.seq, p.snap);
      // A second repair finds nothing to do.
      assert.equal(repair(p.dataDir).report?.outcome, 'intact');
    } finally {
      rmSync(p.base, { recursive: true, force: true });
    }
  });

  test('records cut out of the chain (truncated store): serve names the first missing seq; repair restores service', async () => {
    const p = await populated(20);
    try {
      const first = p.decisions[8]!.seq;
      const dbs = openStoreDbs(p.dataDir);
      const size = p.snap.lines.length;
      assert.ok(size > first + 5);
      // Cut a run of records out of the middle (a lost range of pages, as after a bad restore).
      await dbs.env.transaction(() => {
        for (let seq = first; seq < first + 3; seq++) void dbs.records.remove(seq);
      });
      await dbs.env.close();
      const refused = await serveRefuses(p.dataDir, p.base);
      assert.notEqual(refused.code, 0, refused.out);
      assert.match(refused.out, new RegExp(`\\bseq ${first}\\b`), `names seq ${first}:\n${refused.out}`);
      const fixed = repair(p.dataDir);
      assert.equal(fixed.code, 0, fixed.out);
      assert.equal(fixed.report?.dropped_from_seq, first);
      await assertRepaired(p.dataDir, first, p.snap);
    } finally {
      rmSync(p.base, { recursive: true, force: true });
    }
  });

  test('the tail cut off (last records and the final checkpoint gone): serve names the first missing seq; repair restores service', async () => {
    const p = await populated(20);
    try {
      const dbs = openStoreDbs(p.dataDir);
      const lines = [...dbs.records.getRange({ start: 0 })].map(({ value }) => value);
      const records = lines.map((l) => JSON.parse(l));
      const size = lines.length;
      const first = size - 4;
      assert.equal(records[size - 1].kind, 'checkpoint', 'the chain ends with the final (SIGTERM) checkpoint');
      await dbs.env.transaction(() => {
        for (let seq = first; seq < size; seq++) void dbs.records.remove(seq);
      });
      await dbs.env.close();
      const refused = await serveRefuses(p.dataDir, p.base);
      assert.notEqual(refused.code, 0, `a store missing its acknowledged tail must not serve as if whole:\n${refused.out}`);
      assert.match(refused.out, new RegExp(`\\bseq ${first}\\b`), `names seq ${first}:\n${refused.out}`);
      const fixed = repair(p.dataDir);
      assert.equal(fixed.code, 0, fixed.out);
      assert.equal(fixed.report?.dropped_from_seq, first, fixed.out);
      // The auditor held the final checkpoint, which the cut removed.
      await assertRepaired(p.dataDir, first, { ...p.snap, lines, records, checkpoint: records[size - 1] });
    } finally {
      rmSync(p.base, { recursive: true, force: true });
    }
  });

  // BUG (repair): the state tables are left as they were, so an execution whose records were cut
  // still lists their seqs — which after the repair hold the chain_break and later, unrelated records.
  test('after a repair, executions keep their acknowledged state but list only records that name them', async () => {
    const p = await populated(12);
    try {
      const cut = p.decisions[6]!;
      const dbs = openStoreDbs(p.dataDir);
      await dbs.env.transaction(() => {
        void dbs.records.remove(cut.seq);
      });
      await dbs.env.close();
      assert.equal(repair(p.dataDir).code, 0);
      const s = await startTestServer({ dataDir: p.dataDir });
      try {
        // New records take the seqs after the break.
        for (let i = 0; i < 4; i++)
          assert.equal((await req(s.url, 'POST', '/v1/decisions', { token: T.pep, body: readBody(`post-repair-${i}`, 'propose') })).status, 200);
        const wrong: string[] = [];
        for (const d of p.decisions) {
          const g = await req(s.url, 'GET', `/v1/executions/${d.id}`, { token: T.pep });
          assert.equal(g.status, 200, `${d.id} still exists (never reusable): ${g.text}`);
          for (const seq of g.body.records as number[]) {
            const r = await req(s.url, 'GET', `/v1/ledger/records/${seq}`, { token: T.auditor });
            if (r.status !== 200 || r.body.execution_id !== d.id) wrong.push(`${d.id} lists seq ${seq}, which is ${r.body?.kind} of ${r.body?.execution_id}`);
          }
          if (g.body.state === 'invoking') {
            const x = await req(s.url, 'POST', '/v1/decisions', { token: T.pep, body: readBody(d.id, 'execute') });
            assert.equal(x.body?.error?.code, 'EXECUTION_IN_FLIGHT', `${d.id}: ${x.text}`);
          }
        }
        assert.deepEqual(wrong, []);
      } finally {
        await s.stop({ keepData: true });
      }
    } finally {
      rmSync(p.base, { recursive: true, force: true });
    }
  });

  // LMDB maps the file and would read pages past its end (SIGBUS): openStoreDbs checks the file size
  // against the newest meta page first.
  test('a truncated LMDB file: serve exits non-zero with a clear message (no crash, no serving)', async () => {
    const p = await populated(20);
    try {
      const file = join(p.dataDir, 'store', 'data.mdb');
      truncateSync(file, Math.floor(statSync(file).size / 3));
      const refused = await serveRefuses(p.dataDir, p.base);
      assert.notEqual(refused.code, 0, refused.out);
      assert.equal(refused.signal, null, `serve must exit with a message, not die by a signal:\n${refused.out}`);
      assert.match(refused.out, /corrupt|invalid|cannot open/i, refused.out);
      assert.doesNotMatch(refused.out, /listening on/);
    } finally {
      rmSync(p.base, { recursive: true, force: true });
    }
  });
});
