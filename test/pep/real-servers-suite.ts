/**
 * The real `@modelcontextprotocol/server-filesystem` and `@modelcontextprotocol/server-memory`
 * behind `writ proxy`, side by side with the bare servers, driven by the SDK client (issue 6,
 * "Done when"). Policies: test/pep/policies/pep.cedar.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Backend } from './backends.js';
import { ACTOR, connectProxy, connectStdio, decisionOf, FS_SERVER, MEMORY_SERVER, meta, tempDir, type ProxySession } from './helpers.js';

export async function runFilesystem(b: Backend, tag: string): Promise<void> {
  const t = tempDir();
  const sessions: ProxySession[] = [];
  try {
    const sandbox = join(t.dir, 'sandbox');
    mkdirSync(sandbox);
    writeFileSync(join(sandbox, 'a.txt'), 'hello from a\n');
    mkdirSync(join(sandbox, 'sub'));
    const bare = await connectStdio(process.execPath, [FS_SERVER, sandbox]);
    sessions.push(bare);
    const proxied = await connectProxy({ pdpUrl: b.url, token: b.tokens.pep, server: 'fs', command: [process.execPath, FS_SERVER, sandbox], dir: t.dir });
    sessions.push(proxied);

    assert.deepEqual(await proxied.client.listTools(), await bare.client.listTools(), 'tools/list identical');

    let n = 0;
    const viaProxy = (name: string, args: Record<string, unknown>) => proxied.client.callTool({ name, arguments: args, _meta: meta(`fs-${tag}-${++n}`) });
    for (const [name, args] of [
      ['read_text_file', { path: join(sandbox, 'a.txt') }],
      ['list_directory', { path: sandbox }],
      ['list_allowed_directories', {}],
    ] as const) {
      const want = await bare.client.callTool({ name, arguments: args });
      const got = await viaProxy(name, args);
      assert.deepEqual(got, want, `${name}: the proxied result is the bare one`);
    }

    const forbidden = join(sandbox, 'forbidden-notes.txt');
    const denied = await viaProxy('write_file', { path: forbidden, content: 'nope' });
    assert.equal(denied.isError, true);
    assert.equal(decisionOf(denied)?.code, 'DENIED');
    assert.deepEqual(decisionOf(denied)?.reasons, ['fs-no-forbidden-writes']);
    assert.equal(existsSync(forbidden), false, 'a denied write leaves no file');

    const okPath = join(sandbox, 'sub', 'ok.txt');
    const wrote = await viaProxy('write_file', { path: okPath, content: 'written through writ' });
    assert.equal(wrote.isError, undefined, JSON.stringify(wrote));
    assert.equal(readFileSync(okPath, 'utf8'), 'written through writ');
  } finally {
    for (const s of sessions) await s.close().catch(() => undefined);
    t.cleanup();
  }
}

export async function runMemory(b: Backend, tag: string): Promise<void> {
  const t = tempDir();
  const sessions: ProxySession[] = [];
  try {
    const bare = await connectStdio(process.execPath, [MEMORY_SERVER], { MEMORY_FILE_PATH: join(t.dir, 'bare.jsonl') });
    sessions.push(bare);
    const memFile = join(t.dir, 'proxied.jsonl');
    const proxied = await connectProxy({
      pdpUrl: b.url,
      token: b.tokens.pep,
      server: 'memory',
      command: [process.execPath, MEMORY_SERVER],
      dir: t.dir,
      env: { MEMORY_FILE_PATH: memFile },
    });
    sessions.push(proxied);

    assert.deepEqual(await proxied.client.listTools(), await bare.client.listTools(), 'tools/list identical');

    let n = 0;
    const viaProxy = (name: string, args: Record<string, unknown>, id = `mem-${tag}-${++n}`) =>
      proxied.client.callTool({ name, arguments: args, _meta: meta(id) });
    const both = async (name: string, args: Record<string, unknown>) => {
      const want = await bare.client.callTool({ name, arguments: args });
      const got = await viaProxy(name, args);
      assert.deepEqual(got, want, `${name}: the proxied result is the bare one`);
      return got;
    };
    await both('create_entities', {
      entities: [
        { name: 'Ada', entityType: 'person', observations: ['writes code'] },
        { name: 'Writ', entityType: 'project', observations: ['guards tools'] },
      ],
    });
    const graph = await both('read_graph', {});
    const fileBefore = readFileSync(memFile, 'utf8');

    const del = await viaProxy('delete_entities', { entityNames: ['Ada'] });
    assert.equal(del.isError, true);
    assert.equal(decisionOf(del)?.code, 'DENIED');
    assert.deepEqual(await viaProxy('read_graph', {}), graph, 'a denied delete leaves the graph unchanged');
    assert.equal(readFileSync(memFile, 'utf8'), fileBefore);

    // approval_required → an HR approver approves → the same call with the same execution id runs.
    const obsId = `mem-${tag}-observe`;
    const obsArgs = { observations: [{ entityName: 'Ada', contents: ['approved by HR'] }] };
    const pending = await viaProxy('add_observations', obsArgs, obsId);
    const d = decisionOf(pending)!;
    assert.equal(d.code, 'APPROVAL_REQUIRED');
    assert.equal(d.decision, 'approval_required');
    assert.deepEqual(d.obligations, [{ policy: 'memory-observations-need-hr', approver_group: 'Role::"hr"' }]);
    assert.equal(readFileSync(memFile, 'utf8'), fileBefore, 'nothing ran before the approval');
    const approval = await b.http('POST', '/v1/approvals', b.tokens.approver, {
      actor: ACTOR,
      execution_id: obsId,
      binding: d.binding,
      envelope_digest: d.envelope_digest,
      expires_at: new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    });
    assert.equal(approval.status, 201, JSON.stringify(approval.body));
    const done = await viaProxy('add_observations', obsArgs, obsId);
    const want = await bare.client.callTool({ name: 'add_observations', arguments: obsArgs });
    assert.deepEqual(done, want, 'after approval the call succeeds and returns what the bare server returns');
    assert.equal((await b.execution(obsId)).body.state, 'committed');
    const after = await viaProxy('open_nodes', { names: ['Ada'] });
    assert.match(JSON.stringify(after), /approved by HR/);
  } finally {
    for (const s of sessions) await s.close().catch(() => undefined);
    t.cleanup();
  }
}
