// `writ proxy` when its child exits while calls are still with the PDP (contract §7: "When the child
// exits, calls in flight are answered as unknown and the proxy exits with the child's status"), against
// the fake PDP and the real sidecar, with a gate in front of the PDP that holds chosen decision answers:
//   - a call allowed only after the child exited is never dispatched: outcome `unknown` ("the server
//     exited … before the call was dispatched"), the client gets an OUTCOME_UNKNOWN tool result;
//   - a new tools/call arriving after the child exited is refused SERVER_EXITED before the PDP is
//     asked (nothing reserved: the same execution id runs later, once a server is up), both after the
//     child's pipes closed and in the window between its exit and the close of its pipes.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startBackend, type Backend } from './backends.js';
import { startGate, type Gate } from './gate.js';
import { proxyArgs, spawnProxy } from '../helpers/proxy-process.js';
import { TEST_TOKENS } from '../helpers/server.js';
import { HOSTILE, meta, readEffects, tempDir, waitFor } from './helpers.js';

const t = tempDir();
const backends: Partial<Record<'fake' | 'real', Backend>> = {};
before(async () => {
  backends.fake = await startBackend('fake');
  backends.real = await startBackend('real');
});
after(async () => {
  await backends.fake?.stop();
  await backends.real?.stop();
  t.cleanup();
});

/** `writ proxy` on raw pipes in front of `command` (default: the hostile fixture); it may be sent lines after it exited. */
function rawProxy(pdpUrl: string, token: string, effects: string, command: string[] = [process.execPath, HOSTILE]) {
  const args = proxyArgs({ pdpUrl, token, server: 'hostile', dir: t.dir, callTimeoutMs: 10000, command });
  return spawnProxy({ args, env: { HOSTILE_EFFECTS: effects }, ignoreStdinErrors: true });
}

function callLine(id: number, args: Record<string, unknown>, executionId: string): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'apply', arguments: args, _meta: meta(executionId) } });
}

/** The outcome bodies the PEP posted for `id`, as the PDP received them. */
function outcomesPosted(gate: Gate, id: string): Array<Record<string, unknown>> {
  return gate.log.filter((e) => e.method === 'POST' && e.path === `/v1/executions/${encodeURIComponent(id)}/outcome`).map((e) => JSON.parse(e.body));
}

for (const kind of ['fake', 'real'] as const) {
  test(`child exits while a call waits for the PDP → unknown (not dispatched); a later call → SERVER_EXITED before the PDP (${kind} PDP)`, {
    timeout: 60_000,
  }, async () => {
    const b = backends[kind]!;
    const gate = await startGate(b.url);
    const tag = `${kind}-${Date.now().toString(36)}`;
    const heldId = `cx-held-${tag}`;
    const exitId = `cx-exit-${tag}`;
    const lateId = `cx-late-${tag}`;
    const effects = join(t.dir, `effects-${tag}.jsonl`);
    gate.hold(heldId);
    const p = rawProxy(gate.url, b.tokens.pep, effects);
    let stopped = false;
    try {
      // 1. A call the PDP allows, but whose answer the gate holds: the execution is `invoking`.
      p.send(callLine(1, { key: 'held', mode: 'clean' }, heldId));
      await gate.heldAnswer(heldId);
      assert.equal((await b.execution(heldId)).body.state, 'invoking');
      // 2. Another call makes the child exit (status 3) mid-call: answered unknown, as before.
      p.send(callLine(2, { key: 'boom', mode: 'commit-then-exit' }, exitId));
      const a2 = await p.answer(2);
      assert.equal(a2.result._meta['io.writ/decision'].code, 'OUTCOME_UNKNOWN', JSON.stringify(a2));
      // 3. The child is gone (its pipes closed), call 1 still waits for the PDP, so the proxy is still
      //    running: a brand-new call is refused before the PDP is asked.
      p.send(callLine(3, { key: 'late', mode: 'clean' }, lateId));
      const a3 = await p.answer(3);
      assert.equal(a3.error, undefined, 'a tool result, not a JSON-RPC error');
      assert.equal(a3.result.isError, true);
      assert.deepEqual(a3.result._meta['io.writ/decision'], { code: 'SERVER_EXITED', reasons: [], obligations: [], execution_id: lateId });
      assert.match(a3.result.content[0].text, /server has exited \(status 3\).*did not run/);
      assert.equal(gate.log.filter((e) => e.executionId === lateId).length, 0, 'SERVER_EXITED: the PDP was not asked');
      assert.equal((await b.execution(lateId)).status, 404, 'nothing reserved for the refused call');
      // 4. The PDP's allow for call 1 arrives now: not dispatched, reported unknown, answered OUTCOME_UNKNOWN.
      gate.release(heldId);
      const a1 = await p.answer(1);
      assert.equal(a1.error, undefined, `a tool result, not a JSON-RPC error: ${JSON.stringify(a1)}`);
      assert.equal(a1.result.isError, true);
      const d1 = a1.result._meta['io.writ/decision'];
      assert.deepEqual(Object.keys(d1).sort(), ['binding', 'code', 'decision', 'envelope_digest', 'execution_id', 'obligations', 'reasons']);
      assert.equal(d1.code, 'OUTCOME_UNKNOWN');
      assert.equal(d1.decision, 'allow');
      assert.equal(d1.execution_id, heldId);
      assert.match(a1.result.content[0].text, /server exited \(status 3\) before the call was dispatched/);
      assert.equal(await p.exited, 3, 'the proxy exits with the child status');
      stopped = true;

      const posted = outcomesPosted(gate, heldId);
      assert.equal(posted.length, 1, JSON.stringify(posted));
      assert.equal(posted[0]!.status, 'unknown');
      assert.notEqual(posted[0]!.confirmation, 'system_of_record');
      assert.match(String(posted[0]!.detail), /^the server exited \(status 3\) before the call was dispatched$/);
      assert.equal((await b.execution(heldId)).body.state, 'unknown');
      assert.equal((await b.execution(exitId)).body.state, 'unknown');
      if (kind === 'real') {
        const recs = await b.http('GET', `/v1/ledger/records?execution_id=${encodeURIComponent(heldId)}&kind=outcome`, TEST_TOKENS.auditor);
        assert.equal(recs.status, 200);
        const outs = (recs.body.records as Array<Record<string, unknown>>).filter((r) => r.kind === 'outcome');
        assert.equal(outs.length, 1);
        assert.equal(outs[0]!.status, 'unknown');
        assert.match(String(outs[0]!.detail), /before the call was dispatched/);
      }
      assert.deepEqual(
        readEffects(effects).map((e) => e.execution_id),
        [exitId],
        'only the call that reached the child had an effect',
      );
      assert.doesNotMatch(p.stderr(), /internal error/);

      // With a server again: the refused call's id was never used, so it runs; the unknown one is terminal.
      const q = rawProxy(b.url, b.tokens.pep, effects);
      try {
        q.send(callLine(1, { key: 'late', mode: 'clean' }, lateId));
        assert.deepEqual((await q.answer(1)).result, { content: [{ type: 'text', text: 'applied late' }] });
        q.send(callLine(2, { key: 'held', mode: 'clean' }, heldId));
        assert.equal((await q.answer(2)).result._meta['io.writ/decision'].code, 'EXECUTION_TERMINAL');
      } finally {
        assert.equal(await q.stop(), 0);
      }
      assert.deepEqual(
        readEffects(effects).map((e) => e.execution_id),
        [exitId, lateId],
      );
    } finally {
      gate.release(heldId);
      if (!stopped) await p.stop();
      await gate.stop();
    }
  });
}

test('a call arriving between the child exit and the close of its pipes is refused SERVER_EXITED, the PDP never asked', { timeout: 60_000 }, async () => {
  const b = backends.fake!;
  const gate = await startGate(b.url);
  const tag = `win-${Date.now().toString(36)}`;
  const effects = join(t.dir, `effects-${tag}.jsonl`);
  const pidFile = join(t.dir, `pid-${tag}`);
  // The shell records its pid, leaves a grandchild holding the child's stdout for 60 s (its pid in a
  // file of its own), and becomes the hostile server: when the server exits, its pipes stay open.
  const holderFile = join(t.dir, `holder-${tag}`);
  const script = `echo $$ > '${pidFile}'; sleep 60 & echo $! > '${holderFile}'; exec '${process.execPath}' '${HOSTILE}'`;
  const started = Date.now();
  const p = rawProxy(gate.url, b.tokens.pep, effects, ['/bin/sh', '-c', script]);
  try {
    const exitId = `cx-${tag}-exit`;
    const lateId = `cx-${tag}-late`;
    p.send(callLine(1, { key: 'boom', mode: 'commit-then-exit' }, exitId));
    const pid = Number(
      await waitFor(() => {
        try {
          return readFileSync(pidFile, 'utf8').trim();
        } catch {
          return '';
        }
      }),
    );
    assert.ok(pid > 0);
    // Once the pid is gone the proxy has reaped the child (and seen its exit); its pipes are still open.
    const gone = await waitFor(
      () => {
        try {
          process.kill(pid, 0);
          return false;
        } catch {
          return true;
        }
      },
      10_000,
      10,
    );
    assert.ok(gone, 'the server exited');
    assert.equal(p.lines.length, 0, 'call 1 is not answered yet: the pipes are still open');
    p.send(callLine(2, { key: 'late', mode: 'clean' }, lateId));
    const a2 = await p.answer(2, 2_000);
    assert.deepEqual(a2.result._meta['io.writ/decision'], { code: 'SERVER_EXITED', reasons: [], obligations: [], execution_id: lateId });
    assert.equal(gate.log.filter((e) => e.executionId === lateId).length, 0, 'the PDP was not asked');
    // The pipes stay open as long as the grandchild lives: call 1 is answered unknown a moment after
    // the exit all the same, and the proxy exits with the child's status (contract §7).
    const a1 = await p.answer(1);
    assert.equal(a1.result._meta['io.writ/decision'].code, 'OUTCOME_UNKNOWN');
    assert.equal(await p.exited, 3);
    assert.ok(Date.now() - started < 20_000, `answered and exited in ${Date.now() - started} ms, not when the grandchild ends`);
    assert.match(p.stderr(), /its stdout is still open/);
    assert.equal((await b.execution(lateId)).status, 404);
    assert.deepEqual(
      readEffects(effects).map((e) => e.execution_id),
      [exitId],
    );
  } finally {
    await p.stop();
    await gate.stop();
    try {
      process.kill(Number(readFileSync(holderFile, 'utf8').trim()));
    } catch {
      /* already gone */
    }
  }
});
