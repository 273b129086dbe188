// guardMcpServer on both MCP TypeScript SDKs — 1.x (@modelcontextprotocol/sdk) and 2.x
// (@modelcontextprotocol/server, with its own client at 2026-07-28 and at 2025-11-25) — against the
// real PDP: the same calls give the same decisions, outcomes and ledgered states, and a tool that
// ran is never recorded as not run (issue 47).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport as InMemory1 } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer as McpServer1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Client as Client2 } from '@modelcontextprotocol/client';
import { McpServer as McpServer2, InMemoryTransport as InMemory2 } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';
import { emitToolEvents, guardMcpServer } from '../../src/pep/index.js';
import { startBackend, type Backend } from './backends.js';
import { decisionOf, envelope, meta, waitFor } from './helpers.js';

let pdp: Backend;
before(async () => {
  pdp = await startBackend('real');
});
after(async () => {
  await pdp.stop();
});

type Flavour = '1.x' | '2.x/2026-07-28' | '2.x/2025-11-25';
const FLAVOURS: Flavour[] = ['1.x', '2.x/2026-07-28', '2.x/2025-11-25'];

interface Seen {
  tool: string;
  args: unknown;
  executionId: unknown;
}

/** The same tools, registered on either SDK's McpServer (their registerTool has one shape). */
function addTools(server: { registerTool: (...a: any[]) => unknown }, seen: Seen[]): void {
  const metaOf = (extra: any) => extra?.mcpReq?._meta ?? extra?._meta;
  const note = (tool: string, args: unknown, extra: any) => seen.push({ tool, args, executionId: metaOf(extra)?.['io.writ/execution_id'] });
  server.registerTool('echo', { inputSchema: z.object({ text: z.string() }) }, async (args: { text: string }, extra: unknown) => {
    note('echo', args, extra);
    return { content: [{ type: 'text', text: `echo:${args.text}` }] };
  });
  server.registerTool('fail', { inputSchema: z.object({ text: z.string() }) }, async (args: unknown, extra: unknown) => {
    note('fail', args, extra);
    return { content: [{ type: 'text', text: 'no' }], isError: true };
  });
  server.registerTool('boom', { inputSchema: z.object({ text: z.string() }) }, async (args: unknown, extra: unknown) => {
    note('boom', args, extra);
    throw new Error('exploded after acting');
  });
  server.registerTool('strict', { inputSchema: z.object({ n: z.number().int() }) }, async (args: unknown, extra: unknown) => {
    note('strict', args, extra);
    return { content: [{ type: 'text', text: 'ran' }] };
  });
  server.registerTool('forbidden', { inputSchema: z.object({}) }, async (args: unknown, extra: unknown) => {
    note('forbidden', args, extra);
    return { content: [{ type: 'text', text: 'should not run' }] };
  });
}

/**
 * SDK 2.x serves an McpServer per connection from a factory (`serveStdio`, here over an in-memory wire):
 * the factory guards each instance, as a user's would.
 */
async function connect2(factory: () => any, pin: boolean): Promise<{ client: any; instances: any[]; close: () => Promise<void> }> {
  const instances: any[] = [];
  const [ct, st] = InMemory2.createLinkedPair();
  const handle: any = serveStdio(
    () => {
      const s = factory();
      instances.push(s);
      return s;
    },
    { transport: st },
  );
  const versionNegotiation = pin ? { mode: { pin: '2026-07-28' } } : { mode: 'legacy' };
  const client = new Client2({ name: 't2', version: '1.0.0' }, { versionNegotiation } as any);
  await client.connect(ct);
  return {
    client,
    instances,
    close: async () => {
      await client.close();
      await handle?.close?.();
    },
  };
}

async function rig(flavour: Flavour) {
  const seen: Seen[] = [];
  const logs: string[] = [];
  const make = (server: any) => {
    // Guarded before its tools exist; one more tool is registered after the client connected.
    guardMcpServer(server, { pdp: pdp.url, token: pdp.tokens.pep, server: 'sdk', callTimeoutMs: 5_000, log: (l) => logs.push(l) });
    addTools(server, seen);
    return server;
  };
  let client: any;
  let servers: any[];
  let close: () => Promise<void>;
  if (flavour === '1.x') {
    const server = make(new McpServer1({ name: 'sdk1', version: '1.0.0' }));
    const [ct, st] = InMemory1.createLinkedPair();
    await server.connect(st);
    client = new Client1({ name: 't1', version: '1.0.0' });
    await client.connect(ct);
    servers = [server];
    close = async () => {
      await client.close();
      await server.close();
    };
  } else {
    const c = await connect2(() => make(new McpServer2({ name: 'sdk2', version: '1.0.0' }, { capabilities: { tools: {} } })), flavour === '2.x/2026-07-28');
    client = c.client;
    servers = c.instances;
    close = c.close;
  }
  for (const server of servers) {
    server.registerTool('later', { inputSchema: z.object({ text: z.string() }) }, async (args: unknown, extra: unknown) => {
      seen.push({ tool: 'later', args, executionId: ((extra as any)?.mcpReq?._meta ?? (extra as any)?._meta)?.['io.writ/execution_id'] });
      return { content: [{ type: 'text', text: 'later ran' }] };
    });
  }
  return { client, seen, logs, close, servers };
}

/** What one flavour's run came to: per call, the client's view and the PDP's state. */
async function run(flavour: Flavour): Promise<Record<string, unknown>> {
  const r = await rig(flavour);
  const tag = flavour.replace(/[^a-z0-9]/gi, '');
  const out: Record<string, unknown> = {};
  try {
    if (flavour === '2.x/2026-07-28') assert.equal(r.client.getNegotiatedProtocolVersion(), '2026-07-28');
    const calls: Array<[string, string, Record<string, unknown>]> = [
      ['echo', 'echo', { text: 'hi' }],
      ['fail', 'fail', { text: 'x' }],
      ['boom', 'boom', { text: 'x' }],
      ['invalid', 'strict', { n: 'not a number' }],
      ['forbidden', 'forbidden', {}],
      ['later', 'later', { text: 'y' }],
    ];
    for (const [label, tool, args] of calls) {
      const id = `sdk-${tag}-${label}`;
      const res = await r.client.callTool({ name: tool, arguments: args, _meta: meta(id) });
      const ex = await pdp.execution(id);
      out[label] = { isError: res.isError === true, code: decisionOf(res)?.code ?? null, state: ex.body.state };
    }
    out.ran = r.seen.map((s) => s.tool);
    out.executionIds = r.seen.map((s) => s.executionId);
  } finally {
    await r.close();
  }
  return out;
}

test('the guard decides and records alike on SDK 1.x and SDK 2.x (at 2026-07-28 and 2025-11-25): a tool that ran is never "not run"', {
  timeout: 60_000,
}, async () => {
  const results: Record<string, Record<string, unknown>> = {};
  for (const f of FLAVOURS) results[f] = await run(f);
  const tagged = (f: Flavour) => f.replace(/[^a-z0-9]/gi, '');
  const expected = (f: Flavour) => ({
    echo: { isError: false, code: null, state: 'committed' },
    fail: { isError: true, code: null, state: 'rejected' },
    boom: { isError: true, code: 'OUTCOME_UNKNOWN', state: 'unknown' },
    invalid: { isError: true, code: null, state: 'rejected' },
    forbidden: { isError: true, code: 'DENIED', state: 'proposed' },
    later: { isError: false, code: null, state: 'committed' },
    ran: ['echo', 'fail', 'boom', 'later'],
    // The tool gets the execution id in _meta (its idempotency key).
    executionIds: ['echo', 'fail', 'boom', 'later'].map((l) => `sdk-${tagged(f)}-${l}`),
  });
  for (const f of FLAVOURS) assert.deepEqual(results[f], expected(f), f);
  // The ledger says why each ended as it did: the throw is unknown, the validation refusal did not run.
  const boom = await pdp.http(
    'GET',
    `/v1/ledger/records?execution_id=${encodeURIComponent(`sdk-${tagged('2.x/2026-07-28')}-boom`)}&limit=100`,
    pdp.tokens.auditor!,
  );
  const outcome = boom.body.records.find((rec: any) => rec.kind === 'outcome');
  assert.equal(outcome.status, 'unknown');
  assert.match(outcome.detail, /the tool threw: exploded after acting/);
  const invalid = await pdp.http(
    'GET',
    `/v1/ledger/records?execution_id=${encodeURIComponent(`sdk-${tagged('2.x/2026-07-28')}-invalid`)}&limit=100`,
    pdp.tokens.auditor!,
  );
  assert.match(invalid.body.records.find((rec: any) => rec.kind === 'outcome').detail, /the tool did not run/);
});

test('SDK 2.x: a client that cancels a running tool — the tool sees ctx.mcpReq.signal, and the outcome is what the tool did', { timeout: 30_000 }, async () => {
  const seen: string[] = [];
  let started!: () => void;
  const running = new Promise<void>((res) => (started = res));
  const { client, close } = await connect2(() => {
    const server: any = new McpServer2({ name: 'sdk2', version: '1.0.0' }, { capabilities: { tools: {} } });
    guardMcpServer(server, { pdp: pdp.url, token: pdp.tokens.pep, server: 'sdk', callTimeoutMs: 10_000, log: () => undefined });
    server.registerTool('slow', { inputSchema: z.object({}) }, async (_args: unknown, ctx: any) => {
      started();
      await new Promise<void>((res) => ctx.mcpReq.signal.addEventListener('abort', () => res(), { once: true }));
      seen.push('aborted');
      throw new Error('stopped halfway by the cancellation');
    });
    return server;
  }, true);
  try {
    const abort = new AbortController();
    const call = client.callTool({ name: 'slow', arguments: {}, _meta: meta('sdk-cancel-running') }, { signal: abort.signal } as any);
    await running;
    abort.abort('user gave up');
    await assert.rejects(call);
    const ex = await waitFor(async () => {
      const e = await pdp.execution('sdk-cancel-running');
      return e.body.state === 'unknown' ? e.body : undefined;
    });
    assert.equal(ex.state, 'unknown', 'a tool stopped halfway may have acted: unknown, never rejected');
    assert.deepEqual(seen, ['aborted']);
  } finally {
    await close();
  }
});

test('SDK 1.x experimental tasks under the guard: decided before the task is made, invoking while it works, its end sets the outcome', {
  timeout: 30_000,
}, async () => {
  const { InMemoryTaskStore } = await import('@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js');
  const { CreateTaskResultSchema, CallToolResultSchema } = await import('@modelcontextprotocol/sdk/types.js');
  const taskStore = new InMemoryTaskStore();
  const server: any = new McpServer1(
    { name: 'sdk1-tasks', version: '1.0.0' },
    {
      capabilities: { tasks: { requests: { tools: { call: {} } } } },
      taskStore,
    },
  );
  guardMcpServer(server, { pdp: pdp.url, token: pdp.tokens.pep, server: 'sdk', log: () => undefined });
  const made: Record<string, string> = {};
  server.experimental.tasks.registerToolTask(
    'job',
    { inputSchema: { end: z.string() }, execution: { taskSupport: 'required' } },
    {
      createTask: async (args: { end: string }, extra: any) => {
        const task = await extra.taskStore.createTask({ ttl: 60_000, pollInterval: 50 });
        made[args.end] = task.taskId;
        return { task };
      },
      getTask: async (_args: unknown, extra: any) => extra.taskStore.getTask(extra.taskId),
      getTaskResult: async (_args: unknown, extra: any) => extra.taskStore.getTaskResult(extra.taskId),
    },
  );
  const [ct, st] = InMemory1.createLinkedPair();
  await server.connect(st);
  const client = new Client1({ name: 't1', version: '1.0.0' }, { capabilities: { tasks: {} } });
  await client.connect(ct);
  try {
    const ends: Array<[string, (id: string) => Promise<void>, string, RegExp]> = [
      ['ok', (id) => taskStore.storeTaskResult(id, 'completed', { content: [{ type: 'text', text: 'done' }] }), 'committed', /completed/],
      ['err', (id) => taskStore.storeTaskResult(id, 'completed', { content: [{ type: 'text', text: 'no' }], isError: true }), 'rejected', /completed/],
      ['failed', (id) => taskStore.storeTaskResult(id, 'failed', { content: [{ type: 'text', text: 'crash' }], isError: true }), 'unknown', /failed/],
      ['cancelled', (id) => taskStore.updateTaskStatus(id, 'cancelled', 'stopped by hand'), 'unknown', /was cancelled: stopped by hand/],
    ];
    for (const [end] of ends) {
      const created = await client.request(
        { method: 'tools/call', params: { name: 'job', arguments: { end }, task: { ttl: 60_000 }, _meta: meta(`gt-${end}`) } },
        CreateTaskResultSchema,
      );
      assert.equal(created.task.taskId, made[end]);
      assert.equal((await pdp.execution(`gt-${end}`)).body.state, 'invoking', `${end}: invoking while the task works`);
    }
    for (const [end, finish, state, detail] of ends) {
      await finish(made[end]!);
      await waitFor(async () => ((await pdp.execution(`gt-${end}`)).body.state === state ? true : undefined), 10_000);
      const recs = await pdp.http('GET', `/v1/ledger/records?execution_id=gt-${end}&limit=100`, pdp.tokens.auditor!);
      assert.match(recs.body.records.find((r: any) => r.kind === 'outcome').detail, detail, end);
    }
    // Denied: no task is ever made.
    const denied = await client.request(
      { method: 'tools/call', params: { name: 'forbidden', arguments: {}, task: { ttl: 60_000 }, _meta: meta('gt-denied') } },
      CallToolResultSchema,
    );
    assert.equal(decisionOf(denied)?.code, 'DENIED');
  } finally {
    await client.close();
    await server.close();
    taskStore.cleanup();
  }
});

test('tools/list under the guard (both SDKs) lists only what this caller could call; a hidden tool called anyway is still denied', {
  timeout: 60_000,
}, async () => {
  for (const f of FLAVOURS) {
    const r = await rig(f);
    try {
      const listed = await r.client.listTools({ _meta: { 'io.writ/envelope': envelope() } });
      assert.deepEqual(listed.tools.map((x: any) => x.name).sort(), ['boom', 'echo', 'fail', 'later', 'strict'], f);
      // Without an envelope (and without defaults) the guard cannot judge: the list is the server's.
      const all = await r.client.listTools();
      assert.ok(
        all.tools.some((x: any) => x.name === 'forbidden'),
        f,
      );
      const denied = await r.client.callTool({ name: 'forbidden', arguments: {}, _meta: meta(`sdk-list-${f.replace(/[^a-z0-9]/gi, '')}`) });
      assert.equal(decisionOf(denied)?.code, 'DENIED', f);
      assert.ok(!r.seen.some((s) => s.tool === 'forbidden'), f);
    } finally {
      await r.close();
    }
  }
});

test('a tool under the guard seals its own events (emitToolEvents), on SDK 1.x and 2.x, before its outcome; outside a guarded call it refuses', {
  timeout: 60_000,
}, async () => {
  for (const f of FLAVOURS) {
    const r = await rig(f);
    const tag = f.replace(/[^a-z0-9]/gi, '');
    try {
      // Registered after connect on every instance the rig made (one per connection on 2.x).
      const register = (server: any) =>
        server.registerTool('lock_mailbox', { inputSchema: z.object({ mailbox: z.string() }) }, async (args: { mailbox: string }) => {
          const sealed = await emitToolEvents([{ type: 'mailbox.locked', data: { mailbox: args.mailbox } }]);
          assert.ok(sealed.ok, JSON.stringify(sealed));
          return { content: [{ type: 'text', text: 'locked' }] };
        });
      for (const server of r.servers) register(server);
      const res = await r.client.callTool({ name: 'lock_mailbox', arguments: { mailbox: 'm@x' }, _meta: meta(`sdk-ev-${tag}`) });
      assert.equal(res.isError, undefined, JSON.stringify(res));
      const recs = (await pdp.http('GET', `/v1/ledger/records?execution_id=sdk-ev-${tag}&limit=100`, pdp.tokens.auditor!)).body.records;
      assert.deepEqual(
        recs.map((x: any) => x.kind),
        ['decision', 'event', 'outcome'],
        f,
      );
      assert.deepEqual(recs[1].event, { type: 'mailbox.locked', data: { mailbox: 'm@x' } });
    } finally {
      await r.close();
    }
  }
  const outside = await emitToolEvents([{ type: 'x', data: {} }]);
  assert.equal(outside.ok, false);
  assert.equal(!outside.ok && outside.error.code, 'NOT_GUARDED');
});
