// A call that brings its envelope but no execution id (`params._meta["io.writ/envelope"]` without
// `params._meta["io.writ/execution_id"]`): a fresh id is minted only when the PEP was started with
// defaults (the operator opted into ids the client never sees); without defaults the call is refused
// MISSING_CONTEXT and reaches neither the PDP nor the tool — otherwise the client could not look the
// execution up, and a retry after OUTCOME_UNKNOWN would get a new id and run the tool again instead of
// meeting EXECUTION_TERMINAL. Checked in callContext, behind `writ proxy` and behind guardMcpServer.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { isWritError } from '../../src/errors.js';
import { callContext, parseDefaults } from '../../src/pep/context.js';
import { guardMcpServer } from '../../src/pep/index.js';
import { connectInMemory, decisionOf, envelope, fakePdpPerTestFile, HOSTILE, readEffects } from './helpers.js';
import { proxyArgs, runProxy } from '../helpers/proxy-process.js';

const ID_PATH = 'params._meta["io.writ/execution_id"]';
const fx = fakePdpPerTestFile();

const decisionsFor = (pred: (body: Record<string, any>) => boolean) =>
  fx.pdp.log
    .filter((e) => e.path === '/v1/decisions')
    .map((e) => JSON.parse(e.body) as Record<string, any>)
    .filter(pred);

test('callContext: an envelope without an id gets a fresh id only with defaults; else MISSING_CONTEXT naming the id', () => {
  const env = envelope({ task_id: 'CTX-1' });
  assert.throws(
    () => callContext({ 'io.writ/envelope': env }, undefined, 't', {}),
    (err) => isWritError(err) && err.code === 'MISSING_CONTEXT' && err.path === ID_PATH && err.message.includes(ID_PATH),
  );
  // An id that is present but undefined counts as absent.
  assert.throws(
    () => callContext({ 'io.writ/envelope': env, 'io.writ/execution_id': undefined }, undefined, 't', {}),
    (err) => isWritError(err) && err.path === ID_PATH,
  );
  const d = parseDefaults({ envelope: envelope(), execution_id_prefix: 'opt-in' });
  const c = callContext({ 'io.writ/envelope': env }, d, 't', {});
  assert.deepEqual(c.envelope, env, "the client's envelope wins over the defaults");
  assert.match(String(c.executionId), /^opt-in:[0-9a-f-]{36}$/);
  assert.notEqual(callContext({ 'io.writ/envelope': env }, d, 't', {}).executionId, c.executionId, 'fresh per call');
  // Unchanged: both given → as given; neither and no defaults → MISSING_CONTEXT about the envelope.
  assert.deepEqual(callContext({ 'io.writ/envelope': env, 'io.writ/execution_id': 'x-1' }, undefined, 't', {}), { envelope: env, executionId: 'x-1' });
  assert.throws(
    () => callContext(undefined, undefined, 't', {}),
    (err) => isWritError(err) && err.code === 'MISSING_CONTEXT' && /no envelope/.test(err.message),
  );
});

/** Runs `writ proxy` around the hostile fixture, sends `lines`, returns the answers by id and the exit code. */
function proxySession(lines: string[], ids: number[], effects: string, defaults?: unknown) {
  const args = proxyArgs({ pdpUrl: fx.pdp.url, token: fx.pdp.tokens.pep, server: 'hostile', dir: fx.dir, defaults, command: [process.execPath, HOSTILE] });
  return runProxy({ args, env: { HOSTILE_EFFECTS: effects }, send: lines, awaitIds: ids });
}

const envOnlyCall = (id: number, key: string, task: string) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'apply', arguments: { key }, _meta: { 'io.writ/envelope': envelope({ task_id: task }) } },
  });

test('writ proxy without defaults: envelope but no execution id → MISSING_CONTEXT; nothing reaches the PDP or the tool', { timeout: 30_000 }, async () => {
  const effects = join(fx.dir, 'e-proxy-nodef.jsonl');
  const r = await proxySession([envOnlyCall(1, 'a', 'CTX-P1'), envOnlyCall(2, 'a', 'CTX-P1')], [1, 2], effects);
  assert.equal(r.code, 0, r.err);
  for (const id of [1, 2]) {
    const res = r.answers.get(id).result;
    assert.equal(res.isError, true);
    assert.deepEqual(res._meta['io.writ/decision'], { code: 'MISSING_CONTEXT', reasons: [], obligations: [], execution_id: null });
    assert.ok(res.content[0].text.includes(ID_PATH), res.content[0].text);
  }
  assert.equal(decisionsFor((b) => b.envelope?.task_id === 'CTX-P1').length, 0, 'the PDP was not asked');
  assert.equal(readEffects(effects).length, 0, 'the tool did not run');
});

test('writ proxy with --defaults: envelope but no execution id → the client envelope with a fresh id per call', { timeout: 30_000 }, async () => {
  const effects = join(fx.dir, 'e-proxy-def.jsonl');
  const defaults = { envelope: envelope({ task_id: 'FROM-DEFAULTS' }), execution_id_prefix: 'ctxdef' };
  const r = await proxySession([envOnlyCall(1, 'a', 'CTX-P2'), envOnlyCall(2, 'b', 'CTX-P2')], [1, 2], effects, defaults);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(r.answers.get(1).result, { content: [{ type: 'text', text: 'applied a' }] });
  assert.deepEqual(r.answers.get(2).result, { content: [{ type: 'text', text: 'applied b' }] });
  const bodies = decisionsFor((b) => b.envelope?.task_id === 'CTX-P2');
  assert.equal(bodies.length, 2, "the client's envelope was used, not the defaults'");
  for (const b of bodies) assert.match(b.execution_id, /^ctxdef:[0-9a-f-]{36}$/);
  assert.notEqual(bodies[0]!.execution_id, bodies[1]!.execution_id);
  assert.equal(readEffects(effects).length, 2);
});

async function guardRig(defaults?: Record<string, unknown>) {
  const server = new McpServer({ name: 'ctx', version: '1.0.0' });
  const ran: string[] = [];
  guardMcpServer(server, {
    pdp: fx.pdp.url,
    token: fx.pdp.tokens.pep,
    server: 'inproc',
    callTimeoutMs: 5000,
    log: () => undefined,
    ...(defaults ? { defaults } : {}),
  });
  server.registerTool('echo', { inputSchema: { text: z.string() } }, async ({ text }) => {
    ran.push(text);
    return { content: [{ type: 'text', text: `echo:${text}` }] };
  });
  return { ...(await connectInMemory(server)), ran };
}

test('guardMcpServer agrees: MISSING_CONTEXT without defaults, a fresh id with defaults', { timeout: 30_000 }, async () => {
  const bare = await guardRig();
  try {
    const res = await bare.client.callTool({ name: 'echo', arguments: { text: 'x' }, _meta: { 'io.writ/envelope': envelope({ task_id: 'CTX-G1' }) } });
    assert.equal(res.isError, true);
    assert.deepEqual(decisionOf(res), { code: 'MISSING_CONTEXT', reasons: [], obligations: [], execution_id: null });
    assert.ok((res.content as Array<{ text: string }>)[0]!.text.includes(ID_PATH));
    assert.equal(bare.ran.length, 0, 'the tool did not run');
    assert.equal(decisionsFor((b) => b.envelope?.task_id === 'CTX-G1').length, 0, 'the PDP was not asked');
  } finally {
    await bare.close();
  }
  const opted = await guardRig({ envelope: envelope({ task_id: 'FROM-DEFAULTS' }), execution_id_prefix: 'guarddef' });
  try {
    const res = await opted.client.callTool({ name: 'echo', arguments: { text: 'y' }, _meta: { 'io.writ/envelope': envelope({ task_id: 'CTX-G2' }) } });
    assert.deepEqual(res.content, [{ type: 'text', text: 'echo:y' }]);
    const bodies = decisionsFor((b) => b.envelope?.task_id === 'CTX-G2');
    assert.equal(bodies.length, 1);
    assert.match(bodies[0]!.execution_id, /^guarddef:[0-9a-f-]{36}$/);
    assert.equal(fx.pdp.executions.get(`Agent::"offboarding-agent-prod"/${bodies[0]!.execution_id}`)?.state, 'committed');
  } finally {
    await opted.close();
  }
});
