// A decision the PEP stopped waiting for (the client was told PDP_UNAVAILABLE; the tool did not run) may
// still be an allow: the execution is then `invoking` for a call nobody will dispatch, and no reconcile
// can reach it (§4: reconcile only from `unknown`). The PEP keeps listening to that request and, on a
// late allow, records the outcome `rejected` (not invoked) — against the real sidecar, with a gate in
// front of it that holds the decision past the PEP's timeout.
import assert from 'node:assert/strict';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { PdpClient } from '../../src/pep/client.js';
import { runGuardedCall } from '../../src/pep/core.js';
import { startBackend, type Backend } from './backends.js';
import { startGate } from './gate.js';
import { HOSTILE, meta, readEffects } from './helpers.js';
import { waitFor, waitUntil } from '../helpers/wait.js';
import { proxyArgs, spawnProxy } from '../helpers/proxy-process.js';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let real: Backend;
before(async () => {
  real = await startBackend('real');
});
after(async () => {
  await real?.stop();
});

test('an allow that comes after the PEP gave up ends the execution as rejected (not invoked); the tool never runs', { timeout: 60_000 }, async () => {
  const gate = await startGate(real.url);
  const logs: string[] = [];
  try {
    const pdp = new PdpClient({ url: gate.url, token: real.tokens.pep, timeoutMs: 300 });
    const id = `late-${Date.now().toString(36)}`;
    gate.hold(id);
    let dispatched = 0;
    const answer = await runGuardedCall(
      { pdp, server: 'hostile', callTimeoutMs: 5_000, log: (l) => logs.push(l) },
      { tool: 'apply', arguments: { key: 'one' }, meta: meta(id) },
      async () => {
        dispatched++;
        return { status: 'committed', result: { content: [] } };
      },
    );
    assert.ok('result' in answer);
    assert.equal((answer.result._meta as Record<string, any>)['io.writ/decision'].code, 'PDP_UNAVAILABLE');
    await gate.heldAnswer(id);
    assert.equal((await real.execution(id)).body.state, 'invoking', 'the PDP allowed meanwhile');
    gate.release(id);
    const state = await waitFor(async () => (await real.execution(id)).body.state === 'rejected' && 'rejected', 5_000);
    assert.equal(state, 'rejected', logs.join('\n'));
    assert.equal(dispatched, 0, 'the tool never ran');
    const outcome = gate.log.find((e) => e.path === `/v1/executions/${id}/outcome`);
    assert.ok(outcome, 'the outcome went to the PDP');
    assert.equal(JSON.parse(outcome.body).status, 'rejected');
    assert.match(JSON.parse(outcome.body).detail, /^not invoked: the PDP's allow came after this PEP's 300 ms timeout/);
    // The PEP logs once the PDP's answer to that outcome is back, which can trail the state the loop above
    // saw change (the PDP commits before its answer reaches the PEP): wait for the line, not race it.
    const logged = () => logs.some((l) => l.includes(`execution ${id} was allowed after the PEP's timeout`) && l.endsWith('outcome rejected recorded'));
    assert.ok(await waitFor(logged, 5_000), `no log line of the late allow: ${JSON.stringify(logs)}`);
  } finally {
    await gate.stop();
  }
});

test('writ proxy told to stop (stdin closed) still ends a late allow as rejected before it exits', { timeout: 60_000 }, async () => {
  const gate = await startGate(real.url);
  const dir = mkdtempSync(join(tmpdir(), 'writ-late-proxy-'));
  const effects = join(dir, 'effects.jsonl');
  const childExited = join(dir, 'child-exited');
  const p = spawnProxy({
    args: proxyArgs({
      pdpUrl: gate.url,
      token: real.tokens.pep,
      server: 'hostile',
      dir,
      extra: ['--pdp-timeout', '300'],
      command: [process.execPath, HOSTILE],
    }),
    env: { HOSTILE_EFFECTS: effects, HOSTILE_EXITED: childExited },
    killAfterMs: 20_000,
  });
  try {
    const id = `late-proxy-${Date.now().toString(36)}`;
    gate.hold(id);
    p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"apply","arguments":{"key":"one"},"_meta":${JSON.stringify(meta(id))}}}`);
    const answer = await p.answer(1);
    assert.equal(answer.result._meta['io.writ/decision'].code, 'PDP_UNAVAILABLE');
    await gate.heldAnswer(id);
    assert.equal((await real.execution(id)).body.state, 'invoking', 'the PDP allowed meanwhile');
    // The client is done: stdin closes, the child exits — and the proxy waits for the late answer.
    const stopped = p.stop();
    await waitUntil(() => existsSync(childExited), 'the server to exit on stdin end');
    gate.release(id);
    assert.equal(await stopped, 0);
    assert.equal((await real.execution(id)).body.state, 'rejected', p.stderr());
    assert.equal(readEffects(effects).length, 0, 'the tool never ran');
  } finally {
    await gate.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an outcome the PDP cannot take (restarting) is retried in the background until it lands', { timeout: 60_000 }, async () => {
  // A forwarder to the real sidecar that answers every outcome 503 while `failing`.
  let failing = true;
  const up = new URL(real.url);
  const forwarder = createServer((req, res) => {
    if (failing && req.url?.endsWith('/outcome')) {
      req.resume();
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end('{"error":{"code":"STORE_UNAVAILABLE","message":"restarting"}}');
      return;
    }
    const f = httpRequest({ host: up.hostname, port: up.port, path: req.url, method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    req.pipe(f);
  });
  await new Promise<void>((r) => forwarder.listen(0, '127.0.0.1', r));
  const logs: string[] = [];
  try {
    const pdp = new PdpClient({ url: `http://127.0.0.1:${(forwarder.address() as AddressInfo).port}`, token: real.tokens.pep, retryDelayMs: 10 });
    const id = `bg-${Date.now().toString(36)}`;
    const answer = await runGuardedCall(
      { pdp, server: 'hostile', callTimeoutMs: 5_000, log: (l) => logs.push(l) },
      { tool: 'apply', arguments: { key: 'one' }, meta: meta(id) },
      async () => ({ status: 'committed', result: { content: [{ type: 'text', text: 'done' }] } }),
    );
    assert.ok('result' in answer && answer.result.isError !== true, 'the client gets the tool result');
    assert.equal((await real.execution(id)).body.state, 'invoking', 'the three immediate attempts failed');
    failing = false;
    const state = await waitFor(async () => (await real.execution(id)).body.state === 'committed' && 'committed', 5_000);
    assert.equal(state, 'committed', logs.join('\n'));
    // The PEP logs once the PDP's answer is back, which can trail the state seen above.
    assert.ok(await waitFor(() => logs.some((l) => l.includes(`outcome committed of execution ${id} recorded after retries`)), 5_000), logs.join('\n'));
  } finally {
    forwarder.closeAllConnections();
    forwarder.close();
  }
});
