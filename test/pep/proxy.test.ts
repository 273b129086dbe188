// `writ proxy` mechanics against the fake PDP and the hostile fixture: pass-through, raw arguments,
// admitted arguments, context/defaults, refusals, PDP failure, child exit.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { startFakePdp } from './fake-pdp.js';
import { envelope, fakePdpPerTestFile, HOSTILE, meta, readEffects, waitFor, WRIT_BIN } from './helpers.js';
import { proxyArgs, spawnProxy } from '../helpers/proxy-process.js';

const fx = fakePdpPerTestFile();

/** `writ proxy` on raw pipes: send lines, read lines; `answerLine` gives the answer unparsed. */
function rawProxy(opts: { pdpUrl?: string; token?: string; defaults?: unknown; effects: string; extra?: string[] }) {
  const args = proxyArgs({
    pdpUrl: opts.pdpUrl ?? fx.pdp.url,
    token: opts.token ?? fx.pdp.tokens.pep,
    server: 'hostile',
    dir: fx.dir,
    callTimeoutMs: 5000,
    defaults: opts.defaults,
    extra: opts.extra,
    command: [process.execPath, HOSTILE],
  });
  return spawnProxy({ args, env: { HOSTILE_EFFECTS: opts.effects }, answerTimeoutMs: 10_000, killAfterMs: 5000 });
}

function callLine(id: unknown, args: string, m?: Record<string, unknown>, name = 'apply'): string {
  const metaText = m ? `,"_meta":${JSON.stringify(m)}` : '';
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"tools/call","params":{"name":${JSON.stringify(name)},"arguments":${args}${metaText}}}`;
}

test('every message except tools/call passes through byte for byte, both directions', { timeout: 30_000 }, async () => {
  const effects = join(fx.dir, 'e-pass.jsonl');
  const p = rawProxy({ effects });
  try {
    const odd = '{ "jsonrpc":"2.0",  "id" : 7 ,"method":"test/echo","params":{"a":1.0,"b":"\\u00e9","c":12345678901234567890}}';
    p.send(odd);
    const echo = JSON.parse(await p.answerLine(7));
    assert.equal(echo.result.line, odd, 'the server received the exact bytes');
    p.send('{"jsonrpc":"2.0","id":"L","method":"tools/list"}');
    const list = await p.answerLine('L');
    assert.ok(list.startsWith('{ "jsonrpc" : "2.0", "id" : "L", "result" : {"tools":'), `the client received the exact bytes: ${list}`);
    // Order: a burst of pings comes back in order.
    for (let i = 100; i < 110; i++) p.send(`{"jsonrpc":"2.0","id":${i},"method":"ping"}`);
    await p.answerLine(109);
    const ids = p.lines.map((l) => JSON.parse(l).id).filter((id) => typeof id === 'number' && id >= 100);
    assert.deepEqual(ids, [100, 101, 102, 103, 104, 105, 106, 107, 108, 109]);
    assert.equal(readEffects(effects).length, 0);
  } finally {
    assert.equal(await p.stop(), 0);
  }
});

test('a line the child might read differently never reaches it: bare CRs are taken out, non-JSON and repeated keys are refused', {
  timeout: 30_000,
}, async () => {
  const effects = join(fx.dir, 'e-frame.jsonl');
  const p = rawProxy({ effects });
  const errors = () => p.lines.map((l) => JSON.parse(l)).filter((m) => m.id === null && m.error);
  try {
    // Two messages joined by a bare CR (a line end to Python's universal newlines): not one JSON value.
    p.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}\r${callLine(2, '{"key":"cr"}')}`);
    // JSON to a lenient parser only (NaN), and a repeated method (a child keeping the first runs the call).
    p.send(callLine(3, '{"key":"nan","n":NaN}'));
    p.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","method":"ping","params":{"name":"apply","arguments":{"key":"dup"}}}`);
    // Valid JSON with CRs as whitespace goes on, without them.
    p.send('{"jsonrpc":"2.0",\r"id":5,\r"method":"test/echo"}');
    const echo = JSON.parse(await p.answerLine(5));
    assert.equal(echo.result.line, '{"jsonrpc":"2.0","id":5,"method":"test/echo"}');
    await waitFor(() => errors().length === 3, 5_000);
    assert.deepEqual(
      errors().map((m) => m.error.code),
      [-32700, -32700, -32600],
    );
    assert.ok(!p.lines.some((l) => JSON.parse(l).id === 2 || JSON.parse(l).id === 1), 'nothing of the CR-joined line reached the child');
    assert.equal(readEffects(effects).length, 0, 'no tool ran');
  } finally {
    assert.equal(await p.stop(), 0);
  }
});

test('the PDP gets the raw argument text; the tool gets the admitted arguments', { timeout: 30_000 }, async () => {
  const upper = await startFakePdp({ admit: (a) => ({ ...a, key: String(a.key).toUpperCase() }) });
  const effects = join(fx.dir, 'e-raw.jsonl');
  const p = rawProxy({ pdpUrl: upper.url, token: upper.tokens.pep, effects });
  try {
    const rawArgs = '{"key":"abc",  "n":1.50,"big":12345678901234567890,"mode":"clean"}';
    p.send(callLine(1, rawArgs, meta('raw-1')));
    const r = JSON.parse(await p.answerLine(1));
    assert.deepEqual(r.result, { content: [{ type: 'text', text: 'applied ABC' }] });
    const body = upper.log.find((e) => e.path === '/v1/decisions')!.body;
    assert.ok(body.includes(`"arguments":${rawArgs}`), body);
    const eff = readEffects(effects);
    assert.equal(eff.length, 1);
    assert.equal(eff[0]!.key, 'ABC', 'the admitted value, not the client original');
    assert.equal(eff[0]!.execution_id, 'raw-1', '_meta rides along to the server');
    // A server answering under the client's own id of a held call is not believed.
    p.send(callLine(42, '{"key":"s","spoof_id":42}', meta('raw-2')));
    assert.deepEqual(JSON.parse(await p.answerLine(42)).result, { content: [{ type: 'text', text: 'applied S' }] });
    assert.equal(p.lines.filter((l) => JSON.parse(l).id === 42).length, 1);
    assert.match(p.stderr(), /dropped an answer from the server for the held tools\/call 42/);
  } finally {
    await p.stop();
    await upper.stop();
  }
});

test('refusals: deny, approval_required then approval, 4xx codes, missing context — the tool never runs', { timeout: 30_000 }, async () => {
  const effects = join(fx.dir, 'e-ref.jsonl');
  const p = rawProxy({ effects });
  try {
    p.send(callLine(1, '{"key":"x"}', meta('ref-deny'), 'forbidden'));
    const deny = JSON.parse(await p.answerLine(1)).result;
    assert.equal(deny.isError, true);
    assert.equal(deny.content[0].type, 'text');
    const d = deny._meta['io.writ/decision'];
    assert.deepEqual(Object.keys(d).sort(), ['binding', 'code', 'decision', 'envelope_digest', 'execution_id', 'obligations', 'reasons']);
    assert.equal(d.decision, 'deny');
    assert.equal(d.code, 'DENIED');
    assert.deepEqual(d.reasons, ['forbid-tool']);
    assert.equal(d.execution_id, 'ref-deny');

    p.send(callLine(2, '{"key":"y"}', meta('ref-appr'), 'needs_approval'));
    const ar = JSON.parse(await p.answerLine(2)).result._meta['io.writ/decision'];
    assert.equal(ar.code, 'APPROVAL_REQUIRED');
    assert.equal(ar.decision, 'approval_required');
    assert.deepEqual(ar.obligations, [{ policy: 'hr-approval', approver_group: 'Role::"hr"' }]);
    assert.equal(readEffects(effects).length, 0);
    const res = await fetch(`${fx.pdp.url}/v1/approvals`, {
      method: 'POST',
      headers: { authorization: `Bearer ${fx.pdp.tokens.approver}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        actor: envelope().actor,
        execution_id: 'ref-appr',
        binding: ar.binding,
        envelope_digest: ar.envelope_digest,
        expires_at: '2099-01-01T00:00:00Z',
      }),
    });
    assert.equal(res.status, 201);
    p.send(callLine(3, '{"key":"y"}', meta('ref-appr'), 'needs_approval'));
    assert.deepEqual(JSON.parse(await p.answerLine(3)).result, { content: [{ type: 'text', text: 'applied y' }] });

    // Same id, different arguments → the PDP's 409 code.
    p.send(callLine(4, '{"key":"z"}', meta('ref-appr'), 'needs_approval'));
    assert.equal(JSON.parse(await p.answerLine(4)).result._meta['io.writ/decision'].code, 'EXECUTION_CONFLICT');
    // Another actor in the envelope → 403 ACTOR_MISMATCH.
    p.send(callLine(5, '{"key":"z"}', meta('ref-actor', envelope({ actor: { type: 'Agent', id: 'other-agent' } }))));
    assert.equal(JSON.parse(await p.answerLine(5)).result._meta['io.writ/decision'].code, 'ACTOR_MISMATCH');
    // No _meta and no defaults.
    p.send(callLine(6, '{"key":"z"}'));
    const mc = JSON.parse(await p.answerLine(6)).result;
    assert.equal(mc.isError, true);
    assert.deepEqual(mc._meta['io.writ/decision'], { code: 'MISSING_CONTEXT', reasons: [], obligations: [], execution_id: null });
    // A tools/call notification would run unguarded: dropped.
    p.send('{"jsonrpc":"2.0","method":"tools/call","params":{"name":"apply","arguments":{"key":"notif"}}}');
    // A batch holding a tools/call is split and guarded.
    p.send(`[${callLine(7, '{"key":"b"}')},{"jsonrpc":"2.0","id":8,"method":"ping"}]`);
    assert.equal(JSON.parse(await p.answerLine(7)).result._meta['io.writ/decision'].code, 'MISSING_CONTEXT');
    assert.deepEqual(JSON.parse(await p.answerLine(8)).result, {});
    assert.deepEqual(
      readEffects(effects).map((e) => e.key),
      ['y'],
    );
    assert.match(p.stderr(), /dropped a tools\/call sent as a notification/);
  } finally {
    await p.stop();
  }
});

test('--defaults builds the envelope (pointers into the arguments) with a fresh execution id per call', { timeout: 30_000 }, async () => {
  const effects = join(fx.dir, 'e-def.jsonl');
  const defaults = {
    envelope: { task_id: 'T-1', purpose: 'defaults_test', actor: envelope().actor, requester: { type: 'User', id: 'manager-1842' } },
    from_arguments: { subject: { type: 'Employee', id: '/employee/id' }, task_id: '/ticket' },
    tools: { other: { envelope: { purpose: 'other_purpose' } } },
    execution_id_prefix: 'dflt',
  };
  const p = rawProxy({ effects, defaults });
  try {
    const before = fx.pdp.log.length;
    p.send(callLine(1, '{"key":"a","employee":{"id":7721},"ticket":"T-9","mode":"clean"}'));
    p.send(callLine(2, '{"key":"a","employee":{"id":7721},"ticket":"T-9","mode":"clean"}'));
    assert.equal(JSON.parse(await p.answerLine(1)).result.content[0].text, 'applied a');
    assert.equal(JSON.parse(await p.answerLine(2)).result.content[0].text, 'applied a');
    const bodies = fx.pdp.log
      .slice(before)
      .filter((e) => e.path === '/v1/decisions')
      .map((e) => JSON.parse(e.body));
    assert.equal(bodies.length, 2);
    for (const b of bodies) {
      assert.deepEqual(b.envelope.subject, { type: 'Employee', id: '7721' });
      assert.equal(b.envelope.task_id, 'T-9');
      assert.equal(b.envelope.purpose, 'defaults_test');
      assert.match(b.execution_id, /^dflt:[0-9a-f-]{36}$/);
    }
    assert.notEqual(bodies[0].execution_id, bodies[1].execution_id);
    // A pointer that does not resolve → MISSING_CONTEXT with the pointer as path.
    p.send(callLine(3, '{"key":"a","ticket":"T-9"}'));
    const r = JSON.parse(await p.answerLine(3)).result;
    assert.equal(r._meta['io.writ/decision'].code, 'MISSING_CONTEXT');
    assert.match(r.content[0].text, /\/employee\/id/);
    assert.equal(readEffects(effects).length, 2);
  } finally {
    await p.stop();
  }
});

test('PDP unreachable or failing → PDP_UNAVAILABLE, the tool does not run', { timeout: 30_000 }, async () => {
  const effects = join(fx.dir, 'e-down.jsonl');
  // A port nobody listens on.
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  const down = rawProxy({ pdpUrl: `http://127.0.0.1:${port}`, effects });
  const failing = rawProxy({ effects });
  try {
    down.send(callLine(1, '{"key":"a"}', meta('down-1')));
    const r = JSON.parse(await down.answerLine(1)).result;
    assert.equal(r.isError, true);
    assert.deepEqual(r._meta['io.writ/decision'], { code: 'PDP_UNAVAILABLE', reasons: [], obligations: [], execution_id: 'down-1' });
    fx.pdp.failing = true;
    failing.send(callLine(1, '{"key":"a"}', meta('down-2')));
    assert.equal(JSON.parse(await failing.answerLine(1)).result._meta['io.writ/decision'].code, 'PDP_UNAVAILABLE');
    assert.equal(readEffects(effects).length, 0);
  } finally {
    fx.pdp.failing = false;
    await down.stop();
    await failing.stop();
  }
});

test('the child exits mid-call: the call is answered unknown, outcome unknown posted, the proxy exits with its status', { timeout: 30_000 }, async () => {
  const effects = join(fx.dir, 'e-exit.jsonl');
  const p = rawProxy({ effects });
  p.send(callLine(1, '{"key":"a","mode":"commit-then-exit"}', meta('exit-1')));
  const r = JSON.parse(await p.answerLine(1)).result;
  assert.equal(r._meta['io.writ/decision'].code, 'OUTCOME_UNKNOWN');
  assert.equal(await p.exited, 3);
  assert.equal(fx.pdp.executions.get('Agent::"offboarding-agent-prod"/exit-1')?.state, 'unknown');
  assert.equal(readEffects(effects).length, 1);
});

test('a malformed answer from the server (no result or error, a null result, a non-boolean or repeated isError) is an unknown outcome, never committed', {
  timeout: 30_000,
}, async () => {
  const effects = join(fx.dir, 'e-malformed.jsonl');
  const p = rawProxy({ effects });
  try {
    const modes = ['no-result', 'null-result', 'bad-iserror', 'dup-iserror'];
    modes.forEach((mode, i) => {
      p.send(callLine(i + 1, `{"key":"m${i}","mode":"${mode}"}`, meta(`malformed-${mode}`)));
    });
    for (const [i, mode] of modes.entries()) {
      const line = await p.answerLine(i + 1);
      const r = JSON.parse(line).result;
      assert.ok(r, `${mode}: the client gets a tool result: ${line}`);
      assert.equal(r.isError, true, line);
      assert.equal(r._meta['io.writ/decision'].code, 'OUTCOME_UNKNOWN', line);
      await waitFor(() => fx.pdp.executions.get(`Agent::"offboarding-agent-prod"/malformed-${mode}`)?.state === 'unknown');
    }
    // The tool did run each time; only the answer was unreadable.
    assert.equal(readEffects(effects).length, 4);
  } finally {
    await p.stop();
  }
});

test('a tools/call whose params repeat a member, are not an object or name no tool is refused as a tool result (INVALID_REQUEST), the PDP not asked', {
  timeout: 30_000,
}, async () => {
  const effects = join(fx.dir, 'e-badparams.jsonl');
  const p = rawProxy({ effects });
  try {
    const asked = fx.pdp.log.length;
    const m = JSON.stringify(meta('bad-params-1'));
    p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"apply","arguments":{"key":"a"},"name":"other","_meta":${m}}}`);
    p.send('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":[1,2]}');
    p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":7,"arguments":{},"_meta":${m}}}`);
    const expected: Array<[number, string | null, RegExp]> = [
      [1, null, /repeats a member/],
      [2, null, /no params object/],
      [3, 'bad-params-1', /no tool name/],
    ];
    for (const [id, exec, why] of expected) {
      const r = JSON.parse(await p.answerLine(id)).result;
      assert.equal(r.isError, true);
      assert.deepEqual(r._meta['io.writ/decision'], { code: 'INVALID_REQUEST', reasons: [], obligations: [], execution_id: exec });
      assert.match(r.content[0].text, why);
    }
    assert.equal(fx.pdp.log.length, asked, 'the PDP was not asked');
    assert.equal(readEffects(effects).length, 0);
  } finally {
    await p.stop();
  }
});

test('usage errors exit 2', { timeout: 60_000 }, async () => {
  const run = (args: string[]) =>
    new Promise<{ code: number | null; err: string }>((res) => {
      const c = spawn(process.execPath, [WRIT_BIN, 'proxy', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      c.stderr.on('data', (d: Buffer) => (err += d.toString()));
      c.once('exit', (code) => res({ code, err }));
    });
  assert.equal((await run(['--pdp', fx.pdp.url, '--server', 's', '--', 'x'])).code, 2);
  const noCmd = await run(['--pdp', fx.pdp.url, '--token-file', WRIT_BIN, '--server', 's']);
  assert.equal(noCmd.code, 2);
  assert.match(noCmd.err, /after --/);
  // Bad input names the option it came from.
  const missingFile = await run(['--pdp', fx.pdp.url, '--token-file', '/nonexistent/pep.token', '--server', 's', '--', 'x']);
  assert.equal(missingFile.code, 2);
  assert.match(missingFile.err, /--token-file \(or WRIT_TOKEN_FILE\) \/nonexistent\/pep\.token: ENOENT/);
  const noScheme = await run(['--pdp', '127.0.0.1:8700', '--token-file', WRIT_BIN, '--server', 's', '--', 'x']);
  assert.equal(noScheme.code, 2);
  assert.match(noScheme.err, /--pdp \(or WRIT_PDP\) must be an http\(s\) URL/);
  // Timeouts that Node's timers would turn into 1 ms are refused, not run with.
  for (const [opt, v] of [
    ['--call-timeout', '0'],
    ['--call-timeout', '2147483648'],
    ['--pdp-timeout', '1e3'],
    ['--pdp-timeout', '99999999999'],
  ]) {
    const bad = await run(['--pdp', fx.pdp.url, '--token-file', WRIT_BIN, '--server', 's', opt!, v!, '--', 'x']);
    assert.equal(bad.code, 2, `${opt} ${v}`);
    assert.match(bad.err, new RegExp(`${opt} must be a whole number of milliseconds from 1 to 2147483647`));
  }
  // A server name no decision request may carry is refused at start, not on every call.
  for (const [name, why] of [
    ['a/b', /must not contain "\/"/],
    ['', /required|must not be empty/],
    ['x'.repeat(129), /at most 128/],
  ] as const) {
    const bad = await run(['--pdp', fx.pdp.url, '--token-file', WRIT_BIN, '--server', name, '--', 'x']);
    assert.equal(bad.code, 2, JSON.stringify(name));
    assert.match(bad.err, why);
  }
  const badDefaults = await run(['--pdp', fx.pdp.url, '--token-file', WRIT_BIN, '--server', 's', '--defaults', WRIT_BIN, '--', 'x']);
  assert.equal(badDefaults.code, 2);
  assert.match(badDefaults.err, new RegExp(`--defaults ${WRIT_BIN.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: `));
  // Defaults whose envelope members could never pass §2 are refused at start, naming the member.
  const defaultsDir = mkdtempSync(join(tmpdir(), 'writ-proxy-defaults-'));
  for (const [doc, member] of [
    [{ task_id: 1 }, /envelope\.task_id/],
    [{ envelope: {}, tools: { t: { envelope: { execute_after: '2026-02-30T10:00:00Z' } } } }, /tools\.t\.envelope\.execute_after/],
    [{ tenant: 'x' }, /envelope/],
  ] as const) {
    const file = join(defaultsDir, 'defaults.json');
    writeFileSync(file, JSON.stringify(doc));
    const bad = await run(['--pdp', fx.pdp.url, '--token-file', WRIT_BIN, '--server', 's', '--defaults', file, '--', 'x']);
    assert.equal(bad.code, 2, JSON.stringify(doc));
    assert.match(bad.err, member);
    assert.match(bad.err, /ENVELOPE_INVALID/);
  }
  rmSync(defaultsDir, { recursive: true, force: true });
  assert.equal((await run(['--help'])).code, 0);
});
