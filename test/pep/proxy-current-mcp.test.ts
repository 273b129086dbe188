// `writ proxy` on current MCP (issue 47): an SDK 2.x server behind the proxy, an SDK 2.x client pinned
// to 2026-07-28 (stateless: `server/discover`, the per-request `_meta` envelope, `resultType` on every
// result) and one at 2025-11-25, against the real PDP. Every refusal shape the proxy writes itself must
// be a result the 2026-07-28 client accepts (a result without `resultType` makes it throw), and the tool
// gets the execution id in `_meta`.
import assert from 'node:assert/strict';
import { readFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { startBackend, type Backend } from './backends.js';
import { REPO, WRIT_BIN, decisionOf, meta, tempDir } from './helpers.js';

const SDK2_SERVER = join(REPO, 'test', 'pep', 'fixtures', 'sdk2-server.mjs');
let pdp: Backend;
const t = tempDir();
before(async () => {
  pdp = await startBackend('real');
});
after(async () => {
  await pdp.stop();
  t.cleanup();
});

async function connect(pin: '2026-07-28' | 'legacy', opts: { pdpUrl?: string; effects: string }) {
  const tokenFile = join(t.dir, `token-${pin}-${Math.random().toString(36).slice(2)}`);
  writeFileSync(tokenFile, pdp.tokens.pep);
  // Options from the environment, as an MCP client that parses its own command line starts the proxy.
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [WRIT_BIN, 'proxy', process.execPath, SDK2_SERVER],
    env: {
      ...(process.env as Record<string, string>),
      WRIT_PDP: opts.pdpUrl ?? pdp.url,
      WRIT_TOKEN_FILE: tokenFile,
      WRIT_SERVER: 'sdk',
      WRIT_PDP_TIMEOUT: '3000',
      WRIT_CALL_TIMEOUT: '1500',
      SDK2_EFFECTS: opts.effects,
    },
    stderr: 'pipe',
  });
  const versionNegotiation = pin === 'legacy' ? { mode: 'legacy' } : { mode: { pin } };
  const client = new Client({ name: 'current-mcp-test', version: '1.0.0' }, { versionNegotiation } as any);
  await client.connect(transport);
  return client;
}

const effectsOf = (file: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];

for (const pin of ['2026-07-28', 'legacy'] as const) {
  test(`SDK 2.x client (${pin}) and server behind writ proxy: allowed calls run once with the execution id; every refusal shape is read, not thrown`, {
    timeout: 60_000,
  }, async () => {
    const effects = join(t.dir, `effects-${pin}.jsonl`);
    const client = await connect(pin, { effects });
    const tag = pin === 'legacy' ? 'l' : 'm';
    try {
      if (pin !== 'legacy') assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
      const tools = await client.listTools();
      assert.deepEqual(tools.tools.map((x: any) => x.name).sort(), ['approve_me', 'boom', 'echo', 'fail', 'forbidden', 'lock_mailbox', 'slow']);

      const ok = await client.callTool({ name: 'echo', arguments: { text: 'hi' }, _meta: meta(`cm-${tag}-echo`) });
      assert.deepEqual(ok.content, [{ type: 'text', text: 'echo:hi' }]);
      assert.equal((await pdp.execution(`cm-${tag}-echo`)).body.state, 'committed');

      // Refusals the proxy writes itself: each a tool result with isError and io.writ/decision.
      const denied = await client.callTool({ name: 'forbidden', arguments: {}, _meta: meta(`cm-${tag}-deny`) });
      assert.equal(denied.isError, true);
      assert.equal(decisionOf(denied)?.code, 'DENIED');
      const missing = await client.callTool({ name: 'echo', arguments: { text: 'x' } });
      assert.equal(decisionOf(missing)?.code, 'MISSING_CONTEXT');
      const fail = await client.callTool({ name: 'fail', arguments: { text: 'x' }, _meta: meta(`cm-${tag}-fail`) });
      assert.equal(fail.isError, true);
      assert.equal((await pdp.execution(`cm-${tag}-fail`)).body.state, 'rejected');
      const retry = await client.callTool({ name: 'fail', arguments: { text: 'x' }, _meta: meta(`cm-${tag}-fail`) });
      assert.equal(decisionOf(retry)?.code, 'EXECUTION_TERMINAL');
      const boom = await client.callTool({ name: 'boom', arguments: { text: 'x' }, _meta: meta(`cm-${tag}-boom`) });
      // SDK 2.x turns a throw into an isError result: the tool reported a failure, the proxy records rejected.
      assert.equal(boom.isError, true);
      assert.equal((await pdp.execution(`cm-${tag}-boom`)).body.state, 'rejected');

      const approval = await client.callTool({ name: 'approve_me', arguments: {}, _meta: meta(`cm-${tag}-approve`) });
      assert.equal(decisionOf(approval)?.code, 'APPROVAL_REQUIRED');
      assert.deepEqual(decisionOf(approval)?.obligations, [{ policy: 'sdk-approve-me-needs-hr', approver_group: 'Role::"hr"' }]);
      // No answer within --call-timeout: the tool may or may not have acted.
      const slow = await client.callTool({ name: 'slow', arguments: {}, _meta: meta(`cm-${tag}-slow`) });
      assert.equal(decisionOf(slow)?.code, 'OUTCOME_UNKNOWN');
      assert.equal((await pdp.execution(`cm-${tag}-slow`)).body.state, 'unknown');

      const ran = effectsOf(effects);
      assert.deepEqual(
        ran.map((e) => e.tool),
        ['echo', 'fail', 'boom', 'slow'],
        'denied and refused calls never reached the tool',
      );
      assert.deepEqual(
        ran.map((e) => e.execution_id),
        [`cm-${tag}-echo`, `cm-${tag}-fail`, `cm-${tag}-boom`, `cm-${tag}-slow`],
      );
    } finally {
      await client.close();
    }
  });
}

test('SDK 2.x client at 2026-07-28: PDP_UNAVAILABLE is a result it reads, and the tool does not run', { timeout: 60_000 }, async () => {
  const effects = join(t.dir, 'effects-down.jsonl');
  const client = await connect('2026-07-28', { pdpUrl: 'http://127.0.0.1:9', effects });
  try {
    const res = await client.callTool({ name: 'echo', arguments: { text: 'x' }, _meta: meta('cm-down') });
    assert.equal(res.isError, true);
    assert.equal(decisionOf(res)?.code, 'PDP_UNAVAILABLE');
    assert.equal(effectsOf(effects).length, 0);
  } finally {
    await client.close();
  }
});

test('a tool that reports its events in _meta["io.writ/events"]: writ proxy seals them, in order, before the outcome', { timeout: 60_000 }, async () => {
  const effects = join(t.dir, 'effects-events.jsonl');
  const client = await connect('2026-07-28', { effects });
  try {
    const res = await client.callTool({ name: 'lock_mailbox', arguments: { mailbox: 'dana@example.com' }, _meta: meta('cm-events') });
    assert.deepEqual(res.content, [{ type: 'text', text: 'locked' }]);
    const recs = (await pdp.http('GET', '/v1/ledger/records?execution_id=cm-events&limit=100', pdp.tokens.auditor!)).body.records;
    assert.deepEqual(
      recs.map((r: any) => r.kind),
      ['decision', 'event', 'event', 'outcome'],
    );
    assert.deepEqual(
      recs.filter((r: any) => r.kind === 'event').map((r: any) => r.event),
      [
        { type: 'mailbox.locked', data: { mailbox: 'dana@example.com' } },
        { type: 'sessions.revoked', data: { count: 3 } },
      ],
    );
  } finally {
    await client.close();
  }
});
