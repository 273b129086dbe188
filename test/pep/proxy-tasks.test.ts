// Task-augmented tools/call behind `writ proxy` (issue 47; docs/protocol.md §7, §14's task rules),
// against the real PDP: the decision comes before the call goes on; the execution stays `invoking`
// while the task works; its end sets the outcome, read by the proxy's own polling even when the client
// never asks; a proxy killed mid-task leaves the execution `invoking` (never reusable).
//   - MCP 2025-11-25: @modelcontextprotocol/server-everything's `simulate-research-query` (a task-only
//     tool of SDK 1.x's experimental tasks), driven by the SDK 1.32 client.
//   - MCP 2026-07-28 tasks extension: a scripted server (test/pep/fixtures/tasks-2026.mjs).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CallToolResultSchema, CreateTaskResultSchema, GetTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { proxyArgs, spawnProxy } from '../helpers/proxy-process.js';
import { startBackend, type Backend } from './backends.js';
import { REPO, connectProxy, decisionOf, envelope, meta, tempDir, waitFor } from './helpers.js';

const EVERYTHING = join(REPO, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
const TASKS_2026 = join(REPO, 'test', 'pep', 'fixtures', 'tasks-2026.mjs');
let pdp: Backend;
const t = tempDir();
before(async () => {
  pdp = await startBackend('real');
});
after(async () => {
  await pdp.stop();
  t.cleanup();
});

const stateOf = async (id: string) => (await pdp.execution(id)).body.state as string;
const untilState = (id: string, state: string, ms = 20_000) => waitFor(async () => ((await stateOf(id)) === state ? true : undefined), ms);
async function outcomeRecord(id: string): Promise<any> {
  const r = await pdp.http('GET', `/v1/ledger/records?execution_id=${encodeURIComponent(id)}&limit=100`, pdp.tokens.auditor!);
  return r.body.records.find((rec: any) => rec.kind === 'outcome');
}

test("2025-11-25: server-everything's task tool behind writ proxy — invoking while it works, committed when it completes, though the client never polls", {
  timeout: 60_000,
}, async () => {
  const s = await connectProxy({ pdpUrl: pdp.url, token: pdp.tokens.pep, server: 'everything', command: [process.execPath, EVERYTHING, 'stdio'], dir: t.dir });
  try {
    // The proxy passes the server's tasks capability through: it no longer refuses what it advertises.
    assert.ok((s.client.getServerCapabilities() as any)?.tasks, 'the tasks capability reaches the client');
    const id = 'task-everything-1';
    const created = await s.client.request(
      { method: 'tools/call', params: { name: 'simulate-research-query', arguments: { topic: 'offboarding' }, task: { ttl: 60_000 }, _meta: meta(id) } },
      CreateTaskResultSchema,
    );
    const taskId = created.task.taskId;
    assert.equal(created.task.status, 'working');
    assert.equal(await stateOf(id), 'invoking', 'the execution stays invoking while the task works');
    // The client's own tasks/get passes through to the server.
    const seen = await s.client.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema);
    assert.equal(seen.taskId, taskId);
    await untilState(id, 'committed');
    const rec = await outcomeRecord(id);
    assert.match(rec.detail, new RegExp(`task ${taskId} completed`));
    assert.ok(rec.result_digest, 'the final result is digested like any result');
    // A retry of the same execution is refused as terminal, before the server hears of it.
    const retry = await s.client.request(
      { method: 'tools/call', params: { name: 'simulate-research-query', arguments: { topic: 'offboarding' }, task: { ttl: 60_000 }, _meta: meta(id) } },
      CallToolResultSchema,
    );
    assert.equal(decisionOf(retry)?.code, 'EXECUTION_TERMINAL');
  } finally {
    await s.close();
  }
});

test('2025-11-25: a task the client cancels ends its execution unknown; a denied task call never reaches the server', { timeout: 60_000 }, async () => {
  const s = await connectProxy({ pdpUrl: pdp.url, token: pdp.tokens.pep, server: 'everything', command: [process.execPath, EVERYTHING, 'stdio'], dir: t.dir });
  try {
    const id = 'task-everything-cancel';
    const created = await s.client.request(
      { method: 'tools/call', params: { name: 'simulate-research-query', arguments: { topic: 'x' }, task: { ttl: 60_000 }, _meta: meta(id) } },
      CreateTaskResultSchema,
    );
    await s.client.request({ method: 'tasks/cancel', params: { taskId: created.task.taskId } }, GetTaskResultSchema.passthrough() as any);
    await untilState(id, 'unknown');
    assert.match((await outcomeRecord(id)).detail, /was cancelled/);
    const denied = await s.client.request(
      { method: 'tools/call', params: { name: 'get-tiny-image', arguments: {}, task: { ttl: 60_000 }, _meta: meta('task-everything-denied') } },
      CallToolResultSchema,
    );
    assert.equal(decisionOf(denied)?.code, 'DENIED');
  } finally {
    await s.close();
  }
});

test('a proxy killed mid-task leaves the execution invoking: a retry is refused in flight', { timeout: 60_000 }, async () => {
  const p = spawnProxy({
    args: proxyArgs({ pdpUrl: pdp.url, token: pdp.tokens.pep, server: 'everything', dir: t.dir, command: [process.execPath, EVERYTHING, 'stdio'] }),
    ignoreStdinErrors: true,
  });
  const id = 'task-everything-killed';
  try {
    p.send(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: { tasks: {} }, clientInfo: { name: 'raw', version: '1' } },
      }),
    );
    await p.answer(1);
    p.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    p.send(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'simulate-research-query', arguments: { topic: 'k' }, task: { ttl: 60_000 }, _meta: meta(id) },
      }),
    );
    const created = await p.answer(2);
    assert.ok(created.result.task.taskId);
    p.child.kill('SIGKILL');
    await p.exited;
    assert.equal(await stateOf(id), 'invoking');
    const retry = await pdp.http('POST', '/v1/decisions', pdp.tokens.pep, {
      execution_id: id,
      phase: 'execute',
      envelope: envelope(),
      action: { server: 'everything', tool: 'simulate-research-query', arguments: { topic: 'k' } },
    });
    assert.equal(retry.status, 409);
    assert.equal(retry.body.error.code, 'EXECUTION_IN_FLIGHT');
  } finally {
    p.child.kill('SIGKILL');
  }
});

test('2026-07-28 tasks extension: the task handle passes on (resultType "task"); tasks/get\'s inline result or error sets the outcome', {
  timeout: 60_000,
}, async () => {
  const p = spawnProxy({ args: proxyArgs({ pdpUrl: pdp.url, token: pdp.tokens.pep, server: 'sdk', dir: t.dir, command: [process.execPath, TASKS_2026] }) });
  const envelopeMeta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
  };
  const ends: Array<[string, string, RegExp]> = [
    ['completed', 'committed', /completed/],
    ['completed_error', 'rejected', /completed/],
    ['failed', 'unknown', /failed \(-32603 the job crashed\)/],
    ['cancelled', 'unknown', /was cancelled: cancelled by an operator/],
    ['gone', 'unknown', /disappeared before it ended/],
  ];
  try {
    let n = 10;
    for (const [end] of ends) {
      p.send(
        JSON.stringify({
          jsonrpc: '2.0',
          id: ++n,
          method: 'tools/call',
          params: { name: 'job', arguments: { end }, _meta: { ...envelopeMeta, ...meta(`t26-${end}`) } },
        }),
      );
      const a = await p.answer(n);
      assert.equal(a.result.resultType, 'task', `${end}: the handle reaches the client as the server sent it`);
      assert.equal(await stateOf(`t26-${end}`), 'invoking');
    }
    for (const [end, state, detail] of ends) {
      await untilState(`t26-${end}`, state);
      assert.match((await outcomeRecord(`t26-${end}`)).detail, detail, end);
    }
    // A refusal the proxy writes on 2026-07-28 is a complete result.
    p.send(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 99,
        method: 'tools/call',
        params: { name: 'forbidden', arguments: {}, _meta: { ...envelopeMeta, ...meta('t26-denied') } },
      }),
    );
    const denied = await p.answer(99);
    assert.equal(denied.result.resultType, 'complete');
    assert.equal(denied.result._meta['io.writ/decision'].code, 'DENIED');
  } finally {
    await p.stop();
  }
});
