/**
 * Fault injection at every durable boundary (issue 7, docs/protocol.md §4, §8 "fail closed"): through
 * WRIT_FAULT_FILE the next durable write with a given label fails (error, ENOSPC, or a stall past the
 * store's write timeout) before it commits. Each test proves, for its boundary:
 *   - the request is answered 503 STORE_UNAVAILABLE (never 200, never 500);
 *   - no partial state: the execution is exactly as before, and no record of the failed write exists;
 *   - the next request sees a consistent store and the retry succeeds;
 *   - the ledger export still verifies (`writ verify`, keys + latest checkpoint).
 * Plus a real disk-full run on a 4 MiB tmpfs data dir where mounting is permitted (LMDB only).
 * The store matrix (kill.postgres.test.ts) runs the injected faults on PostgreSQL too: PgStore takes the
 * same test-only hooks.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, TEST_TOKENS, type TestServer } from '../helpers/server.js';
import { AGENT_Q, assertConsistent, assertLedgerVerifies, readBody, req, sleep, type Reply } from './harness.js';
import { waitFor, waitUntil } from '../helpers/wait.js';

const T = TEST_TOKENS;
/** The store matrix (kill.postgres.test.ts): the injected faults run on both stores; the tmpfs one is LMDB's. */
const ON_POSTGRES = process.env.WRIT_TEST_STORE === 'postgres';
const NO_PG_DATA_DIR_DISK = ON_POSTGRES
  ? 'PostgreSQL store: the records live in the database, not in the data dir, so a full tmpfs data dir proves nothing about them'
  : false;
/** Longer than the server's store write timeout (10 s, serve.ts). */
const STALL_MS = 12_500;

function assertUnavailable(r: Reply, what: string): void {
  assert.equal(r.status, 503, `${what}: expected 503, got ${r.status} ${r.text.slice(0, 300)}`);
  assert.equal(r.body?.error?.code, 'STORE_UNAVAILABLE', `${what}: ${r.text.slice(0, 300)}`);
  assert.equal(typeof r.body.error.message, 'string');
}

describe('injected store faults', () => {
  let s: TestServer;
  let base: string;
  let faultFile: string;
  let n = 0;
  const fresh = (tag: string) => `fault-${tag}-${process.pid}-${n++}`;
  const inject = (spec: Record<string, unknown>) => writeFileSync(faultFile, JSON.stringify(spec));

  const decide = (id: string, phase: 'propose' | 'execute') => req(s.url, 'POST', '/v1/decisions', { token: T.pep, body: readBody(id, phase) });
  const outcome = (id: string, status: string) => req(s.url, 'POST', `/v1/executions/${encodeURIComponent(id)}/outcome`, { token: T.pep, body: { status } });
  const getExec = (id: string) => req(s.url, 'GET', `/v1/executions/${encodeURIComponent(id)}?actor=${AGENT_Q}`, { token: T.auditor });
  /** Every record naming the execution, as the ledger index serves it. */
  const recordsOf = async (id: string) => {
    const r = await req(s.url, 'GET', `/v1/ledger/records?execution_id=${encodeURIComponent(id)}&limit=1000`, { token: T.auditor });
    assert.equal(r.status, 200, r.text);
    return r.body.records as Array<Record<string, any>>;
  };
  /** The execution is in `state` with exactly the acknowledged records, and the ledger agrees. */
  const assertExecution = async (id: string, state: string, acked: number[]) => {
    const g = await getExec(id);
    assert.equal(g.status, 200, g.text);
    assert.equal(g.body.state, state);
    assert.deepEqual(g.body.records, acked, 'the execution lists exactly the acknowledged records');
    assert.deepEqual(
      (await recordsOf(id)).map((r) => r.seq),
      acked,
      'the ledger holds no record of the failed write',
    );
  };
  const toInvoking = async (id: string) => {
    const p = await decide(id, 'propose');
    assert.equal(p.status, 200, p.text);
    const x = await decide(id, 'execute');
    assert.equal(x.status, 200, x.text);
    assert.equal(x.body.state, 'invoking');
    return [p.body.record.seq as number, x.body.record.seq as number];
  };
  const consumed = () => assert.ok(!existsSync(faultFile), 'the injected fault was used');

  before(async () => {
    base = mkdtempSync(join(tmpdir(), 'writ-chaos-faults-'));
    faultFile = join(base, 'fault.json');
    mkdirSync(join(base, 'data'));
    s = await startTestServer({
      dataDir: join(base, 'data'),
      env: { WRIT_FAULT_FILE: faultFile },
      config: { checkpoint: { every_records: 10, every_ms: 250 } },
    });
  });
  after(async () => {
    let code: number | null | undefined;
    try {
      rmSync(faultFile, { force: true });
      code = await s?.stop({ keepData: true });
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
    if (s) assert.equal(code, 0, 'the server still stops cleanly after every fault');
  });

  test('before reservation: a failed reserve write leaves no execution; the retry reserves afresh', async () => {
    const id = fresh('reserve');
    inject({ label: 'reserve', mode: 'fail', remaining: 1 });
    assertUnavailable(await decide(id, 'propose'), 'propose');
    consumed();
    const g = await getExec(id);
    assert.equal(g.status, 404, g.text);
    assert.equal(g.body.error.code, 'EXECUTION_NOT_FOUND');
    assert.deepEqual(await recordsOf(id), []);
    const retry = await decide(id, 'propose');
    assert.equal(retry.status, 200, retry.text);
    assert.equal(retry.body.state, 'proposed');
    await assertExecution(id, 'proposed', [retry.body.record.seq]);
    // The same holds for an execute that would reserve (first request of an execution).
    const id2 = fresh('reserve-exec');
    inject({ label: 'reserve', mode: 'fail', remaining: 1 });
    assertUnavailable(await decide(id2, 'execute'), 'execute (reserving)');
    assert.equal((await getExec(id2)).status, 404);
    const x = await decide(id2, 'execute');
    assert.equal(x.status, 200, x.text);
    assert.equal(x.body.state, 'invoking');
    await assertExecution(id2, 'invoking', [x.body.record.seq]);
    await assertLedgerVerifies(s.url);
  });

  test('after reservation: a failed decision write of an execute leaves the execution proposed', async () => {
    const id = fresh('decision');
    const p = await decide(id, 'propose');
    assert.equal(p.status, 200, p.text);
    inject({ label: 'decision', mode: 'fail', remaining: 1 });
    assertUnavailable(await decide(id, 'execute'), 'execute');
    consumed();
    await assertExecution(id, 'proposed', [p.body.record.seq]);
    const x = await decide(id, 'execute');
    assert.equal(x.status, 200, x.text);
    assert.equal(x.body.state, 'invoking', 'the retry moves it to invoking exactly once');
    await assertExecution(id, 'invoking', [p.body.record.seq, x.body.record.seq]);
    await assertLedgerVerifies(s.url);
  });

  test('before terminal state: a failed outcome write leaves the execution invoking (still refusing execute)', async () => {
    const id = fresh('terminal');
    const seqs = await toInvoking(id);
    inject({ label: 'terminal', mode: 'fail', remaining: 1 });
    assertUnavailable(await outcome(id, 'committed'), 'outcome');
    consumed();
    await assertExecution(id, 'invoking', seqs);
    const again = await decide(id, 'execute');
    assert.equal(again.status, 409, again.text);
    assert.equal(again.body.error.code, 'EXECUTION_IN_FLIGHT');
    const o = await outcome(id, 'committed');
    assert.equal(o.status, 200, o.text);
    assert.equal(o.body.state, 'committed');
    const recs = await recordsOf(id);
    assert.deepEqual(
      recs.map((r) => r.kind),
      ['decision', 'decision', 'refusal', 'outcome'],
    );
    await assertLedgerVerifies(s.url);
  });

  test('after terminal state: a failed refusal write is 503 and the terminal state is intact', async () => {
    const id = fresh('after-terminal');
    await toInvoking(id);
    const o = await outcome(id, 'rejected');
    assert.equal(o.status, 200, o.text);
    const before = (await recordsOf(id)).map((r) => r.seq);
    inject({ label: 'refusal', mode: 'fail', remaining: 1 });
    assertUnavailable(await decide(id, 'execute'), 'execute after terminal (refusal not ledgered)');
    consumed();
    inject({ label: 'refusal', mode: 'enospc', remaining: 1 });
    assertUnavailable(await outcome(id, 'committed'), 'outcome after terminal (refusal not ledgered)');
    consumed();
    await assertExecution(id, 'rejected', before);
    const x = await decide(id, 'execute');
    assert.equal(x.status, 409, x.text);
    assert.equal(x.body.error.code, 'EXECUTION_TERMINAL');
    const o2 = await outcome(id, 'committed');
    assert.equal(o2.status, 409, o2.text);
    assert.equal(o2.body.error.code, 'EXECUTION_TERMINAL');
    assert.equal((await getExec(id)).body.state, 'rejected');
    await assertLedgerVerifies(s.url);
  });

  test('during checkpoint: failing checkpoint writes do not break decisions; a later checkpoint covers them', async () => {
    const cp0 = await req(s.url, 'GET', '/v1/ledger/checkpoint', { token: T.auditor });
    assert.equal(cp0.status, 200, cp0.text);
    inject({ label: 'checkpoint', mode: 'fail', remaining: 2 });
    // every_records 10 / every_ms 250: decisions trigger checkpoints; the first two fail, the decisions do not.
    for (let i = 0; i < 200 && existsSync(faultFile); i++) {
      const r = await decide(fresh('cp'), 'propose');
      assert.equal(r.status, 200, r.text);
      await sleep(10); // the pace of the decisions that trigger checkpoints until the fault is used up
    }
    consumed();
    let cp1: Reply | undefined;
    for (let i = 0; i < 60; i++) {
      const r = await decide(fresh('cp'), 'propose');
      assert.equal(r.status, 200, r.text);
      cp1 = await req(s.url, 'GET', '/v1/ledger/checkpoint', { token: T.auditor });
      if (cp1.body.seq > cp0.body.seq) break;
      await sleep(5); // a poll's pace: a decision, then a look at the latest checkpoint
    }
    assert.ok(cp1!.body.seq > cp0.body.seq, 'a checkpoint is written again once the store accepts it');
    assert.match(s.output(), /checkpoint failed/, 'the failed checkpoint was reported');
    await assertConsistent(s.url, cp0.body, cp1!.body);
    await assertLedgerVerifies(s.url, [cp0.body]);
  });

  test('disk full (injected ENOSPC) at reservation and at the outcome: 503, nothing written, then recovery', async () => {
    const id = fresh('enospc');
    inject({ label: 'reserve', mode: 'enospc', remaining: 1 });
    const r = await decide(id, 'propose');
    assertUnavailable(r, 'propose on a full disk');
    assert.match(r.body.error.message, /ENOSPC|space/i);
    // Said where an operator looks, not only on /readyz: a line on stderr (at most one per 10 s) and the count.
    assert.match(s.output(), /writ: refused with STORE_UNAVAILABLE: /);
    assert.match((await req(s.url, 'GET', '/metrics', {})).text, /^writ_refusals_total\{code="STORE_UNAVAILABLE"\} [1-9]/m);
    consumed();
    assert.equal((await getExec(id)).status, 404);
    const seqs = await toInvoking(id);
    inject({ label: 'terminal', mode: 'enospc', remaining: 1 });
    assertUnavailable(await outcome(id, 'unknown'), 'outcome on a full disk');
    await assertExecution(id, 'invoking', seqs);
    const o = await outcome(id, 'unknown');
    assert.equal(o.status, 200, o.text);
    assert.equal(o.body.state, 'unknown');
    await assertLedgerVerifies(s.url);
  });

  test('store timeout: a stalled write is answered 503 in bounded time, others proceed, nothing lands', async () => {
    const id = fresh('timeout');
    inject({ label: 'reserve', mode: 'timeout', timeout_ms: STALL_MS, remaining: 1 });
    const t0 = Date.now();
    const stalled = decide(id, 'propose');
    // The fault file goes once a write has taken the fault: the stalled write is then in the store.
    await waitUntil(() => !existsSync(faultFile), 'the write to reach the injected stall');
    // Another execution's writes are not queued behind the stalled one.
    const other = fresh('timeout-other');
    const seqs = await toInvoking(other);
    assert.ok(Date.now() - t0 < 5000, 'writes of other executions are not stalled');
    const r = await stalled;
    const took = Date.now() - t0;
    assertUnavailable(r, 'stalled propose');
    assert.ok(took < STALL_MS - 800, `answered at the store's write timeout (10 s), before the stall ends (${took} ms)`);
    assert.equal((await getExec(id)).status, 404);
    // Let the stalled hook finish (it then fails): still nothing of it is written. A fixed wait, kept: the
    // injected stall lasts STALL_MS, and its end (a failure nobody is waiting for any more) leaves no trace.
    await sleep(Math.max(0, STALL_MS + 500 - (Date.now() - t0)));
    assert.equal((await getExec(id)).status, 404);
    assert.deepEqual(await recordsOf(id), []);
    const retry = await decide(id, 'propose');
    assert.equal(retry.status, 200, retry.text);
    await assertExecution(id, 'proposed', [retry.body.record.seq]);
    await assertExecution(other, 'invoking', seqs);
    await assertLedgerVerifies(s.url);
  });

  test('a disk that hangs inside the commit: the front refuses with 503 in bounded time; a later read tells the fate', {
    skip: ON_POSTGRES ? 'LMDB only: the hang holds the thread that commits to LMDB' : false,
  }, async () => {
    // The ledger writer commits on its own thread and fsyncs there; a hung fsync holds that thread, so the
    // store's own write timeout cannot fire. The HTTP front answers the request itself at its deadline (15 s).
    const id = fresh('hang');
    const HANG_MS = 17_500;
    inject({ label: 'reserve', mode: 'hang', timeout_ms: HANG_MS, remaining: 1 });
    const t0 = Date.now();
    const r = await decide(id, 'propose');
    const took = Date.now() - t0;
    assertUnavailable(r, 'propose on a hung disk');
    assert.ok(took >= 14_000 && took < HANG_MS, `refused at the front's deadline, before the disk came back (${took} ms)`);
    consumed();
    // The disk comes back and the commit completes: the reservation was recorded after all, and a read says so.
    const g = await waitFor(
      async () => {
        const r = await getExec(id);
        return r.status === 200 ? r : undefined;
      },
      HANG_MS + 10_000,
      100,
    );
    assert.ok(g, 'the execution is recorded once the disk comes back');
    assert.equal(g.body.state, 'proposed');
    assert.equal(g.body.records.length, 1);
    // The operator is told why the front refused (once the writer's thread is free to hear it).
    await waitUntil(() => /writ: refused with STORE_UNAVAILABLE: by an HTTP front/.test(s.output()), 'the refusal to be logged', 10_000);
    assert.match(s.output(), /writ: refused with STORE_UNAVAILABLE: by an HTTP front: the ledger writer did not answer within 15 s/);
    const again = await decide(id, 'propose');
    assert.equal(again.status, 200, again.text);
    await assertLedgerVerifies(s.url);
  });

  test('approval, reconciliation and entity writes fail closed too', async () => {
    // approval: needs a proposed execution that requires approval (the offboarding story).
    const id = fresh('approval');
    const p = await decide(id, 'propose');
    assert.equal(p.status, 200, p.text);
    const approval = {
      actor: { type: 'Agent', id: 'offboarding-agent-prod' },
      execution_id: id,
      binding: p.body.binding,
      envelope_digest: p.body.envelope_digest,
      expires_at: new Date(Date.now() + 3600_000).toISOString(),
    };
    inject({ label: 'approval', mode: 'fail', remaining: 1 });
    assertUnavailable(await req(s.url, 'POST', '/v1/approvals', { token: T.approver, body: approval }), 'approval');
    consumed();
    const g = await getExec(id);
    assert.deepEqual(g.body.approvals, []);
    assert.deepEqual(g.body.records, [p.body.record.seq]);
    const a = await req(s.url, 'POST', '/v1/approvals', { token: T.approver, body: approval });
    assert.equal(a.status, 201, a.text);

    // reconciliation of an unknown execution
    const u = fresh('reconcile');
    await toInvoking(u);
    assert.equal((await outcome(u, 'unknown')).status, 200);
    const path = `/v1/executions/${encodeURIComponent(u)}/reconcile?actor=${AGENT_Q}`;
    const body = { resolution: 'absent', evidence_ref: 'idp:audit:1' };
    inject({ label: 'reconcile', mode: 'fail', remaining: 1 });
    assertUnavailable(await req(s.url, 'POST', path, { token: T.reconciler, body }), 'reconcile');
    consumed();
    assert.equal((await getExec(u)).body.state, 'unknown');
    const rc = await req(s.url, 'POST', path, { token: T.reconciler, body });
    assert.equal(rc.status, 200, rc.text);
    assert.equal(rc.body.state, 'reconciled');

    // entity change: entities_version must not move on a failed write
    const e0 = await req(s.url, 'GET', '/v1/entities/Employee/7721', { token: T.admin });
    assert.equal(e0.status, 200, e0.text);
    const before = await decide(fresh('ev'), 'propose');
    inject({ label: 'entity', mode: 'fail', remaining: 1 });
    const put = await req(s.url, 'PUT', '/v1/entities/Employee/7721', {
      token: T.admin,
      body: { attrs: { ...e0.body.attrs, status: 'terminated-chaos' }, parents: e0.body.parents },
    });
    assertUnavailable(put, 'entity upsert');
    consumed();
    const e1 = await req(s.url, 'GET', '/v1/entities/Employee/7721', { token: T.admin });
    assert.deepEqual(e1.body, e0.body, 'the entity is unchanged');
    const afterFail = await decide(fresh('ev'), 'propose');
    assert.equal(afterFail.body.entities_version, before.body.entities_version, 'entities_version did not move');
    await assertLedgerVerifies(s.url);
  });
});

describe('checkpoint cadence (the boundary the checkpoint fault test relies on)', () => {
  test('a checkpoint is written after every_records records, without waiting for every_ms', async () => {
    const s = await startTestServer({ config: { checkpoint: { every_records: 10, every_ms: 600_000 } } });
    try {
      const cp0 = await req(s.url, 'GET', '/v1/ledger/checkpoint', { token: T.auditor });
      assert.equal(cp0.status, 200, cp0.text);
      for (let i = 0; i < 25; i++) {
        const r = await req(s.url, 'POST', '/v1/decisions', { token: T.pep, body: readBody(`cadence-${i}`, 'propose') });
        assert.equal(r.status, 200, r.text);
      }
      let cp1: Reply | undefined;
      await waitFor(async () => {
        cp1 = await req(s.url, 'GET', '/v1/ledger/checkpoint', { token: T.auditor });
        return cp1.body.seq > cp0.body.seq;
      }, 2_000);
      assert.ok(cp1!.body.seq > cp0.body.seq, `25 records with every_records 10 wrote no checkpoint (latest still seq ${cp1!.body.seq})`);
      await assertConsistent(s.url, cp0.body, cp1!.body);
    } finally {
      await s.stop();
    }
  });
});

/** Whether this process may mount a tmpfs (root with CAP_SYS_ADMIN, not a locked-down container). */
function tryMountTmpfs(dir: string, size: string): string | undefined {
  if (process.platform !== 'linux') return 'not Linux';
  if (typeof process.getuid === 'function' && process.getuid() !== 0) return 'not root';
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir], { encoding: 'utf8' });
  if (r.error) return `mount: ${r.error.message}`;
  if (r.status !== 0) return `mount not permitted: ${(r.stderr || r.stdout).trim()}`;
  return undefined;
}

/** Fills the file system holding `dir` with one file until ENOSPC; returns its path. */
function fillDisk(dir: string): string {
  const path = join(dir, 'filler.bin');
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(64 * 1024, 0xab);
  try {
    for (;;) {
      try {
        writeSync(fd, chunk);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
        // Fill the last partial block too.
        for (let size = 32 * 1024; size >= 512; size /= 2) {
          try {
            writeSync(fd, chunk.subarray(0, size));
          } catch {
            /* smaller next */
          }
        }
        return path;
      }
    }
  } finally {
    closeSync(fd);
  }
}

describe('real disk full (4 MiB tmpfs data dir)', { skip: NO_PG_DATA_DIR_DISK }, () => {
  test('writes fail closed with 503 while the disk is full; freeing space or a restart recovers; nothing is corrupted', async (t) => {
    const base = mkdtempSync(join(tmpdir(), 'writ-chaos-tmpfs-'));
    const mnt = join(base, 'mnt');
    mkdirSync(mnt);
    const why = tryMountTmpfs(mnt, '4m');
    if (why !== undefined) {
      rmSync(base, { recursive: true, force: true });
      t.skip(`no tmpfs (${why}); disk full is covered by the injected ENOSPC test`);
      return;
    }
    let s: TestServer | undefined;
    try {
      const dataDir = join(mnt, 'data');
      mkdirSync(dataDir);
      s = await startTestServer({ dataDir, config: { checkpoint: { every_records: 25, every_ms: 600_000 } } });
      const acked: Array<{ seq: number; hash: string; id: string }> = [];
      const ok = async (id: string, phase: 'propose' | 'execute') => {
        const r = await req(s!.url, 'POST', '/v1/decisions', { token: T.pep, body: readBody(id, phase) });
        if (r.status === 200) acked.push({ seq: r.body.record.seq, hash: r.body.record.hash, id });
        return r;
      };
      for (let i = 0; i < 20; i++) assert.equal((await ok(`tmpfs-pre-${i}`, 'propose')).status, 200);
      const cp0 = (await req(s.url, 'GET', '/v1/ledger/checkpoint', { token: T.auditor })).body;

      const filler = fillDisk(mnt);
      // LMDB may still find free pages in its file for a while: push until the disk says no.
      let refused: Reply | undefined;
      const statuses = new Map<number, number>();
      for (let i = 0; i < 3000 && !refused; i++) {
        const r = await ok(`tmpfs-full-${i}`, 'propose');
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        if (r.status !== 200) refused = r;
      }
      assert.ok(refused, `a full disk refused a write (statuses ${JSON.stringify([...statuses])})`);
      assertUnavailable(refused, 'decision on a full disk');
      // Still refusing, still answering reads, still not lying.
      assertUnavailable(await ok('tmpfs-full-again', 'propose'), 'decision on a full disk (again)');
      const seen = await req(s.url, 'GET', `/v1/ledger/records/${acked.at(-1)!.seq}`, { token: T.auditor });
      assert.equal(seen.status, 200, seen.text);

      // Free the space: the same process recovers without a restart.
      rmSync(filler);
      let recovered: Reply | undefined;
      for (let i = 0; i < 50; i++) {
        recovered = await ok(`tmpfs-after-${i}`, 'propose');
        if (recovered.status === 200) break;
        await sleep(100); // a poll's pace: a decision tried again until the freed space lets it through
      }
      assert.equal(recovered!.status, 200, `recovered after freeing space: ${recovered!.text}`);
      let snap = await assertLedgerVerifies(s.url, [cp0]);
      for (const a of acked) assert.equal(snap.records[a.seq]?.hash, a.hash, `acknowledged seq ${a.seq} intact`);

      // Full again, then a hard kill and a restart after freeing space: the store opens (integrity
      // check passes) and nothing acknowledged is lost.
      const filler2 = fillDisk(mnt);
      for (let i = 0; i < 3000; i++) if ((await ok(`tmpfs-full2-${i}`, 'propose')).status !== 200) break;
      await s.kill();
      rmSync(filler2);
      s = await startTestServer({ dataDir, config: { checkpoint: { every_records: 25, every_ms: 600_000 } } });
      snap = await assertLedgerVerifies(s.url, [cp0]);
      for (const a of acked) assert.equal(snap.records[a.seq]?.hash, a.hash, `acknowledged seq ${a.seq} intact after restart`);
      assert.equal((await ok('tmpfs-restarted', 'propose')).status, 200);
    } finally {
      await s?.stop({ keepData: true }).catch(() => undefined);
      spawnSync('umount', ['-l', mnt]);
      rmSync(base, { recursive: true, force: true });
    }
  });
});
