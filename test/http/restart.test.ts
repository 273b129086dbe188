/**
 * SIGTERM writes a checkpoint covering everything acknowledged, exits 0; a restart on the same data dir
 * continues the chain, and a consistency proof from the checkpoint held before the restart to one after
 * verifies (issue 3 "Done when", docs/protocol.md §1, §6).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, offboardingBody, REPO, startTestServer } from '../helpers/server.js';
import { freePort } from '../helpers/postgres.js';
import { waitUntil } from '../helpers/wait.js';
import { hashToBytes } from '../../src/ledger/merkle/hasher.js';
import { verifyConsistency } from '../../src/ledger/merkle/verify.js';

test('SIGTERM checkpoint, restart continuity, consistency across the restart', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'writ-restart-'));
  try {
    const s1 = await startTestServer({ dataDir });
    const acked: Array<{ seq: number; hash: string }> = [];
    for (let i = 0; i < 5; i++) {
      const r = await call(s1, 'POST', '/v1/decisions', {
        token: s1.tokens.pep,
        body: offboardingBody({ execution_id: `RS-${i}`, action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } } }),
      });
      assert.equal(r.status, 200, r.text);
      acked.push(r.body.record);
    }
    const held = (await call(s1, 'GET', '/v1/ledger/checkpoint', { token: s1.tokens.auditor })).body;
    assert.equal(await s1.stop({ keepData: true }), 0);

    const s2 = await startTestServer({ dataDir });
    try {
      const a = s2.tokens.auditor;
      const last = acked[acked.length - 1]!;
      const shutdownCp = (await call(s2, 'GET', `/v1/ledger/records/${last.seq + 1}`, { token: a })).body;
      assert.equal(shutdownCp.kind, 'checkpoint', 'the record after the last acknowledged one is the SIGTERM checkpoint');
      assert.equal(shutdownCp.size, last.seq + 1);
      for (const r of acked) assert.equal((await call(s2, 'GET', `/v1/ledger/records/${r.seq}`, { token: a })).body.hash, r.hash);
      const more = await call(s2, 'POST', '/v1/decisions', {
        token: s2.tokens.pep,
        body: offboardingBody({ execution_id: 'RS-after', action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } } }),
      });
      assert.equal(more.status, 200);
      const prev = (await call(s2, 'GET', `/v1/ledger/records/${more.body.record.seq - 1}`, { token: a })).body;
      assert.equal((await call(s2, 'GET', `/v1/ledger/records/${more.body.record.seq}`, { token: a })).body.prev, prev.hash);
      const now = (await call(s2, 'GET', '/v1/ledger/checkpoint', { token: a })).body;
      const proof = (await call(s2, 'GET', `/v1/ledger/proofs/consistency?from=${held.size}&to=${now.size}`, { token: a })).body;
      verifyConsistency(
        held.size,
        now.size,
        hashToBytes(held.root),
        hashToBytes(now.root),
        proof.path.map((h: string) => Buffer.from(h, 'hex')),
      );
      // A restart does not reuse an execution id: the acknowledged invoking ones still refuse execute.
      const again = await call(s2, 'POST', '/v1/decisions', {
        token: s2.tokens.pep,
        body: offboardingBody({
          execution_id: 'RS-0',
          phase: 'execute',
          action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } },
        }),
      });
      assert.equal(again.status, 200, 'RS-0 was only proposed, so execute is fine');
      const inflight = await call(s2, 'POST', '/v1/decisions', {
        token: s2.tokens.pep,
        body: offboardingBody({
          execution_id: 'RS-0',
          phase: 'execute',
          action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } },
        }),
      });
      assert.equal(inflight.body.error.code, 'EXECUTION_IN_FLIGHT');
    } finally {
      await s2.stop({ keepData: true });
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('SIGTERM the moment the sidecar says it listens: a clean stop (exit 0, final checkpoint), not the default kill', { timeout: 120_000 }, async () => {
  // The sidecar printed more lines (and read its store) after "listening on" before its signal handlers
  // existed: a SIGTERM in that window killed it (exit by signal, no final checkpoint).
  for (let round = 0; round < 5; round++) {
    const s = await startTestServer();
    const code = await s.stop();
    assert.equal(code, 0, `round ${round}: ${s.output()}`);
    assert.match(s.output(), /SIGTERM: finishing in-flight requests, writing a final checkpoint/);
  }
});

test('`npm start` hands SIGTERM to writ itself: a clean stop, not an orphan holding the port and the data dir', { timeout: 120_000 }, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'writ-npm-start-'));
  try {
    const port = await freePort();
    const npm = spawn('npm', ['start', '--silent', '--', '--listen', `127.0.0.1:${port}`, '--data-dir', dataDir], {
      cwd: REPO,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    npm.stdout.on('data', (d) => (output += d));
    npm.stderr.on('data', (d) => (output += d));
    const exited = new Promise<void>((resolve) => npm.on('exit', () => resolve()));
    await waitUntil(
      () => output.includes('writ serve: listening on'),
      () => `writ to start under npm start:\n${output}`,
      60_000,
      100,
    );
    npm.kill('SIGTERM');
    await exited;
    // writ got the signal (its own words), wrote its checkpoint and is gone: nothing runs on this data dir.
    await waitUntil(
      () => runningWith(dataDir).length === 0,
      () => `writ to stop after SIGTERM to npm; still running: ${runningWith(dataDir).join(', ')}\n${output}`,
      30_000,
      100,
    );
    assert.match(output, /SIGTERM: finishing in-flight requests, writing a final checkpoint/);
  } finally {
    for (const pid of runningWith(dataDir)) process.kill(pid, 'SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});

/** Pids of the processes whose command line names `dir` (the writ an `npm start` spawned). */
function runningWith(dir: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(dir)) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

test('shutdown_delay_ms: after SIGTERM /readyz answers 503 at once while decisions are still answered, then a clean stop', { timeout: 60_000 }, async () => {
  const s = await startTestServer({ config: { shutdown_delay_ms: 2000 } });
  const exited = new Promise<number | null>((resolve) => s.child.once('exit', (code) => resolve(code)));
  const t0 = Date.now();
  s.child.kill('SIGTERM');
  // The readiness probe fails first, so a load balancer stops sending; the port still answers meanwhile.
  let ready = 200;
  while (ready === 200 && Date.now() - t0 < 1500) ready = (await call(s, 'GET', '/readyz')).status;
  assert.equal(ready, 503, 'readyz fails while draining');
  const late = await call(s, 'POST', '/v1/decisions', {
    token: s.tokens.pep,
    body: offboardingBody({ execution_id: 'DRAIN-1', action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } } }),
  });
  assert.equal(late.status, 200, late.text);
  assert.ok(Date.now() - t0 < 2000, 'answered within the delay');
  assert.equal(await exited, 0);
  assert.ok(Date.now() - t0 >= 2000, 'the port stayed open for the delay');
  assert.match(s.output(), /draining: \/readyz answers 503; serving 2000 ms more/);
  await s.stop();
});
