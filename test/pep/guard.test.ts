// guardMcpServer: an in-process McpServer and SDK client over InMemoryTransport, against the fake PDP.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { guardMcpServer, PdpClient } from '../../src/pep/index.js';
import { startFakePdp, type FakePdp } from './fake-pdp.js';
import { startGate } from './gate.js';
import { connectInMemory, decisionOf, envelope, meta, waitFor } from './helpers.js';

let pdp: FakePdp;
before(async () => {
  pdp = await startFakePdp({ admit: (a) => (typeof a.text === 'string' ? { ...a, text: a.text.trim() } : a) });
});
after(async () => {
  await pdp.stop();
});

interface Rig {
  client: Client;
  server: McpServer;
  calls: Array<{ tool: string; args: unknown }>;
  logs: string[];
  close(): Promise<void>;
}

/** Releases the `hang` tool's calls: each answers only when the test lets it (after the guard gave up: a late answer). */
const hanging: Array<() => void> = [];

function addTools(server: McpServer, calls: Rig['calls']): void {
  server.registerTool('echo', { inputSchema: { text: z.string() } }, async ({ text }) => {
    calls.push({ tool: 'echo', args: { text } });
    return { content: [{ type: 'text', text: `echo:${text}` }] };
  });
  server.registerTool('fail', { inputSchema: { text: z.string() } }, async ({ text }) => {
    calls.push({ tool: 'fail', args: { text } });
    return { content: [{ type: 'text', text: 'no' }], isError: true };
  });
  server.registerTool('boom', { inputSchema: { text: z.string() } }, async ({ text }) => {
    calls.push({ tool: 'boom', args: { text } });
    throw new Error('exploded after acting');
  });
  server.registerTool('hang', { inputSchema: { text: z.string() } }, async ({ text }) => {
    calls.push({ tool: 'hang', args: { text } });
    await new Promise<void>((r) => hanging.push(r));
    return { content: [{ type: 'text', text: 'late' }] };
  });
  server.registerTool('forbidden', {}, async () => {
    calls.push({ tool: 'forbidden', args: {} });
    return { content: [{ type: 'text', text: 'should not run' }] };
  });
}

async function rig(order: 'before' | 'after', opts: { pdpUrl?: string; defaults?: Record<string, unknown>; pdpTimeoutMs?: number } = {}): Promise<Rig> {
  const server = new McpServer({ name: 'guarded', version: '1.0.0' });
  const calls: Rig['calls'] = [];
  const logs: string[] = [];
  const guard = () =>
    guardMcpServer(server, {
      pdp: opts.pdpUrl ?? pdp.url,
      token: pdp.tokens.pep,
      server: 'inproc',
      callTimeoutMs: 1000,
      log: (l) => logs.push(l),
      ...(opts.defaults ? { defaults: opts.defaults } : {}),
      ...(opts.pdpTimeoutMs !== undefined ? { pdpTimeoutMs: opts.pdpTimeoutMs } : {}),
    });
  if (order === 'before') guard();
  addTools(server, calls);
  if (order === 'after') guard();
  return { ...(await connectInMemory(server)), server, calls, logs };
}

for (const order of ['before', 'after'] as const) {
  test(`guard installed ${order} tools are registered: allow → admitted args → committed; deny never runs`, { timeout: 20_000 }, async () => {
    const r = await rig(order);
    try {
      const id = `g-${order}-echo`;
      const ok = await r.client.callTool({ name: 'echo', arguments: { text: '  hi  ' }, _meta: meta(id) });
      assert.deepEqual(ok.content, [{ type: 'text', text: 'echo:hi' }], 'the handler got the admitted (trimmed) value');
      assert.deepEqual(r.calls, [{ tool: 'echo', args: { text: 'hi' } }]);
      assert.equal(pdp.executions.get(`Agent::"offboarding-agent-prod"/${id}`)?.state, 'committed');
      const again = await r.client.callTool({ name: 'echo', arguments: { text: '  hi  ' }, _meta: meta(id) });
      assert.equal(decisionOf(again)?.code, 'EXECUTION_TERMINAL');
      const denied = await r.client.callTool({ name: 'forbidden', arguments: {}, _meta: meta(`g-${order}-deny`) });
      assert.equal(denied.isError, true);
      assert.equal(decisionOf(denied)?.code, 'DENIED');
      assert.equal(r.calls.length, 1, 'neither the retry nor the denied call ran');
      // Tools registered after the guard (and after connect) are guarded too.
      r.server.registerTool('late', {}, async () => {
        r.calls.push({ tool: 'late', args: {} });
        throw new Error('late tool threw');
      });
      const late = await r.client.callTool({ name: 'late', arguments: {}, _meta: meta(`g-${order}-late`) });
      assert.equal(decisionOf(late)?.code, 'OUTCOME_UNKNOWN');
      assert.equal(pdp.executions.get(`Agent::"offboarding-agent-prod"/g-${order}-late`)?.state, 'unknown');
    } finally {
      await r.close();
    }
  });
}

test('outcomes: isError → rejected, throw → unknown, timeout → unknown (late answer recorded, not delivered), invalid input → rejected', {
  timeout: 20_000,
}, async () => {
  const r = await rig('before');
  try {
    const state = (id: string) => pdp.executions.get(`Agent::"offboarding-agent-prod"/${id}`)?.state;
    const fail = await r.client.callTool({ name: 'fail', arguments: { text: 'x' }, _meta: meta('g-fail') });
    assert.deepEqual(fail, { content: [{ type: 'text', text: 'no' }], isError: true });
    assert.equal(state('g-fail'), 'rejected');

    const boom = await r.client.callTool({ name: 'boom', arguments: { text: 'x' }, _meta: meta('g-boom') });
    assert.equal(boom.isError, true);
    const d = decisionOf(boom)!;
    assert.equal(d.code, 'OUTCOME_UNKNOWN');
    assert.equal(d.decision, 'allow');
    assert.equal(d.execution_id, 'g-boom');
    assert.equal(state('g-boom'), 'unknown');

    const hang = await r.client.callTool({ name: 'hang', arguments: { text: 'x' }, _meta: meta('g-hang') });
    assert.equal(decisionOf(hang)?.code, 'OUTCOME_UNKNOWN');
    assert.equal(state('g-hang'), 'unknown');
    for (const answer of hanging.splice(0)) answer();
    const ex = pdp.executions.get('Agent::"offboarding-agent-prod"/g-hang')!;
    assert.ok(await waitFor(() => ex.outcomes.length >= 2, 10_000), 'the late answer was posted');
    assert.equal(ex.outcomes[1]!.status, 'committed');
    assert.match(String(ex.outcomes[1]!.detail), /late answer/);
    assert.equal(state('g-hang'), 'unknown', 'the late answer does not change the state');
    // Logged once the PDP's answer to that outcome is back, which can trail the outcome it recorded.
    assert.ok(await waitFor(() => r.logs.some((l) => l.includes('late answer for execution g-hang')), 10_000), JSON.stringify(r.logs));

    // Input validation fails inside McpServer: the tool never ran → rejected.
    const bad = await r.client.callTool({ name: 'echo', arguments: { text: 5 }, _meta: meta('g-bad') });
    assert.equal(bad.isError, true);
    assert.equal(state('g-bad'), 'rejected');
    assert.equal(r.calls.filter((c) => c.tool === 'echo').length, 0);
  } finally {
    await r.close();
  }
});

test('PDP down → PDP_UNAVAILABLE and the tool does not run; missing context → MISSING_CONTEXT; defaults', { timeout: 20_000 }, async () => {
  const down = await rig('after', { pdpUrl: 'http://127.0.0.1:9' });
  try {
    const res = await down.client.callTool({ name: 'echo', arguments: { text: 'x' }, _meta: meta('g-down') });
    assert.equal(res.isError, true);
    assert.deepEqual(decisionOf(res), { code: 'PDP_UNAVAILABLE', reasons: [], obligations: [], execution_id: 'g-down' });
    const none = await down.client.callTool({ name: 'echo', arguments: { text: 'x' } });
    assert.equal(decisionOf(none)?.code, 'MISSING_CONTEXT');
    assert.equal(down.calls.length, 0);
  } finally {
    await down.close();
  }
  const withDefaults = await rig('before', { defaults: envelope({ task_id: 'D-1' }) });
  try {
    const res = await withDefaults.client.callTool({ name: 'echo', arguments: { text: 'd' } });
    assert.deepEqual(res.content, [{ type: 'text', text: 'echo:d' }]);
    const body = JSON.parse(pdp.log.filter((e) => e.path === '/v1/decisions').at(-1)!.body);
    assert.equal(body.envelope.task_id, 'D-1');
    assert.match(body.execution_id, /^writ-proxy:/);
  } finally {
    await withDefaults.close();
  }
});

test('pdpTimeoutMs bounds a PDP that accepts and never answers: PDP_UNAVAILABLE, the tool does not run', { timeout: 20_000 }, async () => {
  const silent = createServer(() => undefined); // takes the connection, never answers
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const r = await rig('after', { pdpUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, pdpTimeoutMs: 300 });
  try {
    const started = Date.now();
    const res = await r.client.callTool({ name: 'echo', arguments: { text: 'x' }, _meta: meta('g-silent') });
    assert.ok(Date.now() - started < 5_000, `answered after ${Date.now() - started} ms`);
    assert.equal(decisionOf(res)?.code, 'PDP_UNAVAILABLE');
    assert.match((res.content as Array<{ text: string }>)[0]!.text, /no answer within 300 ms/);
    assert.equal(r.calls.length, 0);
  } finally {
    await r.close();
    silent.closeAllConnections();
    silent.close();
  }
});

test('a tool result whose isError is not a boolean is an unknown outcome (OUTCOME_UNKNOWN), never committed', { timeout: 20_000 }, async () => {
  const r = await rig('before');
  try {
    r.server.registerTool('vague', {}, async () => ({ content: [{ type: 'text' as const, text: 'maybe' }], isError: 'yes' as unknown as boolean }));
    const vague = await r.client.callTool({ name: 'vague', arguments: {}, _meta: meta('g-vague') });
    assert.equal(decisionOf(vague)?.code, 'OUTCOME_UNKNOWN');
    const ex = pdp.executions.get('Agent::"offboarding-agent-prod"/g-vague');
    assert.equal(ex?.state, 'unknown');
    assert.match(String(ex?.outcomes[0]?.detail), /isError that is not a boolean/);
  } finally {
    await r.close();
  }
});

test('guardMcpServer refuses timeouts that Node would turn into 1 ms, before it wraps anything', () => {
  const server = new McpServer({ name: 'timeouts', version: '1.0.0' }, { capabilities: { tools: {} } });
  const client = new PdpClient({ url: pdp.url, token: pdp.tokens.pep });
  for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31]) {
    assert.throws(() => guardMcpServer(server, { pdp: client, server: 'inproc', callTimeoutMs: bad }), /callTimeoutMs must be a whole number of milliseconds/);
    assert.throws(
      () => guardMcpServer(server, { pdp: pdp.url, token: pdp.tokens.pep, server: 'inproc', pdpTimeoutMs: bad }),
      /timeoutMs must be a whole number of milliseconds/,
    );
  }
  // A server name no decision request may carry (as writ proxy refuses it at start).
  for (const bad of ['a/b', 'x'.repeat(200)]) {
    assert.throws(
      () => guardMcpServer(server, { pdp: client, server: bad }),
      /guardMcpServer: server (must not contain "\/"|must be at most 128 characters) \(action\.server of a decision request\)/,
    );
  }
  // Defaults whose envelope members could never pass §2 (as writ proxy refuses them at start).
  for (const bad of [{ task_id: 5 }, { bogus: 1 }, { execute_after: '2026-02-30T10:00:00Z' }]) {
    assert.throws(
      () => guardMcpServer(server, { pdp: client, server: 'inproc', defaults: envelope(bad) }),
      /guardMcpServer: defaults envelope\.\S*:? .*\(ENVELOPE_INVALID\)/,
      JSON.stringify(bad),
    );
  }
  // Nothing was wrapped by the refused calls: the first good one still guards.
  guardMcpServer(server, { pdp: client, server: 'inproc', callTimeoutMs: 2 ** 31 - 1 });
});

test('guardMcpServer is callable once; a low-level tools/call handler installed later is guarded too', { timeout: 20_000 }, async () => {
  const server = new McpServer({ name: 'low', version: '1.0.0' }, { capabilities: { tools: {} } });
  const client = new PdpClient({ url: pdp.url, token: pdp.tokens.pep });
  guardMcpServer(server, { pdp: client, server: 'inproc' });
  assert.throws(() => guardMcpServer(server, { pdp: client, server: 'inproc' }), /already guarded/);
  let ran = 0;
  server.server.removeRequestHandler('tools/call');
  server.server.setRequestHandler(CallToolRequestSchema, async () => {
    ran++;
    return { content: [{ type: 'text', text: 'low' }] };
  });
  const { client: c, close } = await connectInMemory(server);
  try {
    const denied = await c.callTool({ name: 'forbidden', arguments: {}, _meta: meta('g-low-deny') });
    assert.equal(decisionOf(denied)?.code, 'DENIED');
    assert.equal(ran, 0);
    const ok = await c.callTool({ name: 'anything', arguments: {}, _meta: meta('g-low-ok') });
    assert.deepEqual(ok.content, [{ type: 'text', text: 'low' }]);
    assert.equal(ran, 1);
    assert.equal(pdp.executions.get('Agent::"offboarding-agent-prod"/g-low-ok')?.state, 'committed');
  } finally {
    await close();
  }
});

test('a number JSON cannot carry (Infinity, NaN) is refused BINDING_UNREPRESENTABLE before the PDP is asked, never sent as null', {
  timeout: 20_000,
}, async () => {
  const r = await rig('before');
  try {
    const before = pdp.log.length;
    // In memory the arguments are not serialised, so the guard meets the Infinity an SDK's JSON.parse makes of 1e400.
    const res = await r.client.callTool({ name: 'echo', arguments: { text: 'x', limit: Number.POSITIVE_INFINITY }, _meta: meta('g-inf') });
    assert.equal(decisionOf(res)?.code, 'BINDING_UNREPRESENTABLE');
    assert.match((res.content as Array<{ text: string }>)[0]!.text, /at \/action\/arguments\/limit/);
    assert.equal(r.calls.length, 0);
    assert.equal(pdp.log.length, before, 'the PDP was not asked');
  } finally {
    await r.close();
  }
  const client = new PdpClient({ url: pdp.url, token: pdp.tokens.pep });
  const nan = await client.decide({
    execution_id: 'g-nan',
    phase: 'execute',
    envelope: envelope(),
    action: { server: 'inproc', tool: 'echo', arguments: { deep: [1, { x: Number.NaN }] } },
  });
  assert.equal(nan.ok, false);
  if (!nan.ok) assert.deepEqual([nan.error.code, nan.error.path], ['BINDING_UNREPRESENTABLE', '/action/arguments/deep/1/x']);
});

test('a call the client cancels while the PDP decides is never dispatched; an allow then ends it rejected (not invoked)', { timeout: 20_000 }, async () => {
  const gate = await startGate(pdp.url);
  const r = await rig('before', { pdpUrl: gate.url });
  try {
    const id = 'g-cancelled';
    gate.hold(id);
    const abort = new AbortController();
    const call = r.client.callTool({ name: 'echo', arguments: { text: 'x' }, _meta: meta(id) }, undefined, { signal: abort.signal });
    await gate.heldAnswer(id);
    abort.abort('user gave up');
    await assert.rejects(call);
    gate.release(id);
    const ex = await waitFor(() => {
      const e = pdp.executions.get(`Agent::"offboarding-agent-prod"/${id}`);
      return e?.state === 'rejected' ? e : undefined;
    });
    assert.match(String(ex?.outcomes[0]?.detail), /not invoked: the client cancelled/);
    assert.equal(r.calls.length, 0, 'the tool never ran');
  } finally {
    await r.close();
    await gate.stop();
  }
});
