// `writ proxy`: a cancellation sent before a call is dispatched stops it, and a call inside a JSON-RPC
// batch is admitted from the client's own bytes — against the real sidecar, with a gate in front of it
// that holds chosen decision answers.
//   - a `notifications/cancelled` sent while the call waits for its decision means the call is never
//     dispatched (MCP: the receiver stops processing a cancelled request); an allow that comes then ends
//     the execution `rejected` (not invoked), and the server hears of neither the call nor the cancel;
//   - inside a batch, a repeated key or a lossy number in a call's arguments is refused as it is alone.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startBackend, type Backend } from './backends.js';
import { startGate } from './gate.js';
import { proxyArgs, spawnProxy } from '../helpers/proxy-process.js';
import { HOSTILE, meta, readEffects, tempDir } from './helpers.js';

const t = tempDir();
let real: Backend;
before(async () => {
  real = await startBackend('real');
});
after(async () => {
  await real?.stop();
  t.cleanup();
});

function proxyVia(pdpUrl: string, effects: string) {
  const args = proxyArgs({ pdpUrl, token: real.tokens.pep, server: 'hostile', dir: t.dir, callTimeoutMs: 10_000, command: [process.execPath, HOSTILE] });
  return spawnProxy({ args, env: { HOSTILE_EFFECTS: effects, HOSTILE_CANCELS: effects, HOSTILE_SLOW_MS: '300' } });
}

function callLine(id: number, args: string, executionId: string): string {
  return `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"apply","arguments":${args},"_meta":${JSON.stringify(meta(executionId))}}}`;
}

test('a cancellation sent while the PDP decides stops the call: never dispatched, its execution rejected (not invoked); for a refused call it is dropped', {
  timeout: 60_000,
}, async () => {
  const gate = await startGate(real.url);
  const tag = Date.now().toString(36);
  const effects = join(t.dir, `order-${tag}.jsonl`);
  const p = proxyVia(gate.url, effects);
  try {
    const allowed = `ord-1-${tag}`;
    gate.hold(allowed);
    p.send(callLine(1, '{"key":"one","mode":"slow"}', allowed));
    await gate.heldAnswer(allowed);
    p.send('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user gave up"}}');
    // Other messages are not held behind a call the PDP is deciding.
    p.send('{"jsonrpc":"2.0","id":2,"method":"ping"}');
    assert.deepEqual((await p.answer(2)).result, {});
    gate.release(allowed);
    // Answered all the same (MCP clients ignore an answer to a request they cancelled), as not run.
    const answer = await p.answer(1);
    assert.equal(answer.result.isError, true);
    assert.equal(answer.result._meta['io.writ/decision'].code, 'CANCELLED');
    const execution = await real.execution(allowed);
    assert.equal(execution.body.state, 'rejected', JSON.stringify(execution.body));
    p.send('{"jsonrpc":"2.0","id":5,"method":"ping"}');
    await p.answer(5);
    assert.equal(readEffects(effects).length, 0, 'neither the call nor its cancellation reached the server');

    // A call the PDP refuses (a repeated key) never reaches the server, nor does its cancellation.
    const refused = `ord-3-${tag}`;
    gate.hold(refused);
    p.send(callLine(3, '{"key":"x","key":"y"}', refused));
    await gate.heldAnswer(refused);
    p.send('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}');
    // The proxy reads its input in order: once a ping sent after the cancellation is answered, it has the cancellation.
    p.send('{"jsonrpc":"2.0","id":6,"method":"ping"}');
    await p.answer(6);
    gate.release(refused);
    assert.equal((await p.answer(3)).result._meta['io.writ/decision'].code, 'BINDING_DUPLICATE_KEY');
    p.send('{"jsonrpc":"2.0","id":4,"method":"ping"}');
    await p.answer(4);
    assert.equal(readEffects(effects).length, 0, 'nothing reached the server');
  } finally {
    await p.stop();
    await gate.stop();
  }
});

test('a call inside a batch is admitted from its own bytes: a repeated key or a lossy number is refused, the tool never runs', {
  timeout: 60_000,
}, async () => {
  const tag = Date.now().toString(36);
  const effects = join(t.dir, `batch-${tag}.jsonl`);
  const p = proxyVia(real.url, effects);
  try {
    p.send(
      `[${callLine(1, '{"key":"a","key":"b"}', `bat-1-${tag}`)}, {"jsonrpc":"2.0","id":2,"method":"ping"}, ${callLine(3, '{"key":"c","n":1.0}', `bat-3-${tag}`)}]`,
    );
    assert.equal((await p.answer(1)).result._meta['io.writ/decision'].code, 'BINDING_DUPLICATE_KEY');
    assert.deepEqual((await p.answer(2)).result, {});
    assert.equal((await p.answer(3)).result._meta['io.writ/decision'].code, 'BINDING_LOSSY_NUMBER');
    // The same calls alone are refused the same way (and a clean one in a batch runs).
    p.send(callLine(4, '{"key":"a","key":"b"}', `bat-4-${tag}`));
    assert.equal((await p.answer(4)).result._meta['io.writ/decision'].code, 'BINDING_DUPLICATE_KEY');
    p.send(`[${callLine(5, '{"key":"ok","mode":"clean"}', `bat-5-${tag}`)}]`);
    assert.equal((await p.answer(5)).result.content[0].text, 'applied ok');
    assert.deepEqual(
      readEffects(effects).map((e) => e.key),
      ['ok'],
    );
  } finally {
    await p.stop();
  }
});

test('a tools/call whose id is null, a boolean or an object is answered Invalid Request (id null); neither the PDP nor the server sees it', {
  timeout: 60_000,
}, async () => {
  const gate = await startGate(real.url);
  const tag = Date.now().toString(36);
  const effects = join(t.dir, `badid-${tag}.jsonl`);
  const p = proxyVia(gate.url, effects);
  try {
    for (const id of ['null', 'true', '{"o":1}']) {
      p.send(
        `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"apply","arguments":{"key":"one"},"_meta":${JSON.stringify(meta(`badid-${tag}`))}}}`,
      );
      const answer = await p.answer(null);
      assert.equal((answer as { error?: { code?: number } }).error?.code, -32600, JSON.stringify(answer));
      p.lines.splice(
        p.lines.findIndex((l) => JSON.parse(l).id === null),
        1,
      );
    }
    // A good call afterwards still works, and is the only one either side saw.
    p.send(callLine(7, '{"key":"two"}', `badid-ok-${tag}`));
    await p.answer(7);
    assert.deepEqual(
      gate.log.filter((e) => e.path === '/v1/decisions').map((e) => e.executionId),
      [`badid-ok-${tag}`],
    );
    assert.equal(readEffects(effects).length, 1);
  } finally {
    p.child.stdin.end();
    await p.exited;
    await gate.stop();
  }
});
