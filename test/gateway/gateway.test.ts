/**
 * `writ gateway` (docs/protocol.md §14) with real components: oidc-provider issues the clients' tokens
 * (client credentials, resource indicators, JWT access tokens), the real PDP decides as for a delegated
 * pep, and the upstreams are an SDK 1.x server over Streamable HTTP (sessions), an SDK 2.x server over
 * Streamable HTTP (2026-07-28), and server-everything as a stdio child. Clients: the SDK 1.x and 2.x
 * Streamable HTTP clients with bearer tokens, and raw HTTP for what an SDK would not send.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as Client2, StreamableHTTPClientTransport as Transport2 } from '@modelcontextprotocol/client';
import { startIdp, type TestIdp } from '../helpers/oidc.js';
import { REPO, TEST_TOKENS, type TestServer } from '../helpers/server.js';
import { tempDir } from '../pep/helpers.js';
import { until } from '../helpers/wait.js';
import type { RunningGateway } from '../../src/gateway/gateway.js';
import { EVERYTHING, PUBLIC_URL, linesOf, messagesOf, rawSession, resource, startHttpUpstream, startPdp, startTestGateway, type Upstream } from './helpers.js';

const SERVERS = ['sdk1', 'sdk2', 'everything', 'doomed', 'moved'];
let idp: TestIdp;
let pdp: TestServer;
let sdk1: Upstream;
let sdk2: Upstream;
let doomed: Upstream;
let gw: RunningGateway;
const t = tempDir('writ-gateway-');
const seen1 = join(t.dir, 'seen-sdk1.jsonl');
const seen2 = join(t.dir, 'seen-sdk2.jsonl');
const effects1 = join(t.dir, 'effects-sdk1.jsonl');
const effectsDoomed = join(t.dir, 'effects-doomed.jsonl');
const tokens: Record<string, string> = {};

before(async () => {
  idp = await startIdp({
    clients: [
      { id: 'mcp-client', scope: 'mcp' },
      { id: 'other-client', scope: 'mcp' },
      { id: 'no-scope', scope: 'other' },
    ],
  });
  [pdp, sdk1, sdk2, doomed] = await Promise.all([
    startPdp(idp.issuer, SERVERS),
    startHttpUpstream('sdk1-http-server.mjs', { SEEN_FILE: seen1, EFFECTS_FILE: effects1 }),
    startHttpUpstream('sdk2-http-server.mjs', { SEEN_FILE: seen2 }),
    startHttpUpstream('sdk1-http-server.mjs', { EFFECTS_FILE: effectsDoomed }),
  ]);
  gw = await startTestGateway({
    pdpUrl: pdp.url,
    issuer: idp.issuer,
    servers: {
      sdk1: { url: sdk1.url, headers: { 'x-upstream-key': 'configured-upstream-secret' } },
      sdk2: { url: sdk2.url },
      everything: { command: [process.execPath, EVERYTHING] },
      doomed: { url: doomed.url },
      // sdk1 again, configured at a URL that answers 308 to its /mcp.
      moved: { url: sdk1.url.replace(/\/mcp$/, '/moved'), headers: { 'x-upstream-key': 'configured-upstream-secret' } },
    },
  });
  for (const s of SERVERS) {
    tokens[`mcp-client ${s}`] = await idp.clientToken('mcp-client', { scope: 'mcp', resource: resource(s) });
    tokens[`other-client ${s}`] = await idp.clientToken('other-client', { scope: 'mcp', resource: resource(s) });
  }
  tokens['no-scope sdk1'] = await idp.clientToken('no-scope', { scope: 'other', resource: resource('sdk1') });
});

after(async () => {
  await gw?.stop();
  for (const u of [sdk1, sdk2, doomed]) u?.stop();
  await pdp?.stop();
  await idp?.stop();
  t.cleanup();
});

const endpoint = (name: string) => `${gw.url}/mcp/${name}`;

async function sdk1Client(name: string, token: string): Promise<Client> {
  const client = new Client({ name: 'gateway-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(endpoint(name)), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

async function recordsOf(executionId: string): Promise<any[]> {
  const r = await fetch(`${pdp.url}/v1/ledger/records?execution_id=${encodeURIComponent(executionId)}&limit=100`, {
    headers: { authorization: `Bearer ${TEST_TOKENS.auditor}` },
  });
  const body = await r.json();
  if (!Array.isArray(body.records)) throw new Error(`ledger: ${r.status} ${JSON.stringify(body)}`);
  return body.records;
}

/** The execution's state at the PDP once it is no longer `invoking`. */
async function settledState(executionId: string): Promise<string> {
  return until(async () => {
    const r = await fetch(`${pdp.url}/v1/executions/${encodeURIComponent(executionId)}?actor=${encodeURIComponent('Agent::"mcp-client"')}`, {
      headers: { authorization: `Bearer ${TEST_TOKENS.auditor}` },
    });
    const body = await r.json();
    if (r.status !== 200) throw new Error(`execution: ${r.status} ${JSON.stringify(body)}`);
    return body.state === 'invoking' ? undefined : (body.state as string);
  }, `execution ${executionId} to end`);
}

test("RFC 9728 metadata, and every refusal before MCP: no token, another server's token, no scope, a bad Origin", async () => {
  const meta = await fetch(`${gw.url}/.well-known/oauth-protected-resource/mcp/sdk1`);
  assert.equal(meta.status, 200);
  assert.deepEqual(await meta.json(), {
    resource: `${PUBLIC_URL}/mcp/sdk1`,
    authorization_servers: [idp.issuer],
    bearer_methods_supported: ['header'],
    resource_name: 'sdk1 (through writ gateway)',
    scopes_supported: ['mcp'],
  });
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
  });
  const post = (headers: Record<string, string>) =>
    fetch(endpoint('sdk1'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body,
    });
  const metadataUrl = `${PUBLIC_URL}/.well-known/oauth-protected-resource/mcp/sdk1`;

  const none = await post({});
  assert.equal(none.status, 401);
  assert.equal(none.headers.get('www-authenticate'), `Bearer resource_metadata="${metadataUrl}", scope="mcp"`);

  const wrongAudience = await post({ authorization: `Bearer ${tokens['mcp-client sdk2']}` });
  assert.equal(wrongAudience.status, 401);
  const challenge = wrongAudience.headers.get('www-authenticate')!;
  assert.match(
    challenge,
    /^Bearer error="invalid_token", error_description="aud: [^"]*", resource_metadata="https:\/\/gw\.test\/\.well-known\/oauth-protected-resource\/mcp\/sdk1"/,
  );

  const forged = await post({ authorization: `Bearer ${tokens['mcp-client sdk1']!.slice(0, -4)}AAAA` });
  assert.equal(forged.status, 401);
  assert.match(forged.headers.get('www-authenticate')!, /error="invalid_token"/);

  const noScope = await post({ authorization: `Bearer ${tokens['no-scope sdk1']}` });
  assert.equal(noScope.status, 403);
  assert.match(
    noScope.headers.get('www-authenticate')!,
    /^Bearer error="insufficient_scope", error_description="[^"]*", resource_metadata="[^"]*", scope="mcp"$/,
  );

  const badOrigin = await post({ authorization: `Bearer ${tokens['mcp-client sdk1']}`, origin: 'https://evil.example' });
  assert.equal(badOrigin.status, 403);
  assert.equal((await badOrigin.json()).error.code, 'FORBIDDEN_ORIGIN');
  const goodOrigin = await post({ authorization: `Bearer ${tokens['mcp-client sdk1']}`, origin: PUBLIC_URL });
  assert.equal(goodOrigin.status, 200, await goodOrigin.clone().text());
  assert.ok(goodOrigin.headers.get('mcp-session-id'));
  await goodOrigin.text();
  assert.equal((await fetch(`${gw.url}/mcp/nope`, { method: 'POST' })).status, 404);
});

test("SDK 1.x client → gateway → SDK 1.x server over Streamable HTTP: list filtered, calls decided on the token's identity, bound and ledgered; no token reaches the upstream", async () => {
  const client = await sdk1Client('sdk1', tokens['mcp-client sdk1']!);
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((x) => x.name).sort(), ['die', 'echo', 'slow'], 'secret is permitted to nobody: hidden');
    const r = (await client.callTool({ name: 'echo', arguments: { text: 'hi' } })) as any;
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.deepEqual(r.content, [{ type: 'text', text: 'echo:hi' }]);
    const run = linesOf(effects1).find((e) => e.tool === 'echo')!;
    assert.match(run.execution_id, /^writ-proxy:/, 'the tool got the execution id in _meta');
    assert.equal(await settledState(run.execution_id), 'committed');
    const records = await recordsOf(run.execution_id);
    const decision = records.find((x) => x.kind === 'decision');
    assert.ok(decision, JSON.stringify(records));
    assert.equal(decision.decision, 'allow');
    assert.deepEqual(decision.envelope.requester, { type: 'User', id: 'mcp-client' });
    assert.deepEqual(decision.envelope.actor, { type: 'Agent', id: 'mcp-client' });
    assert.equal(decision.identity.method, 'jwt');
    assert.equal(decision.identity.client_id, 'mcp-client');

    const denied = (await client.callTool({ name: 'secret', arguments: {} })) as any;
    assert.equal(denied.isError, true);
    assert.equal(denied._meta['io.writ/decision'].code, 'DENIED');
    assert.ok(!linesOf(effects1).some((e) => e.tool === 'secret'), 'a denied tool never runs');
  } finally {
    await client.close();
  }
  const headers = linesOf(seen1);
  assert.ok(headers.length > 0);
  for (const h of headers) {
    assert.equal(h.authorization, undefined, 'the upstream never gets an Authorization header');
    assert.equal(h['x-upstream-key'], 'configured-upstream-secret', 'it gets the configured headers');
    assert.ok(!JSON.stringify(h).includes(tokens['mcp-client sdk1']!.split('.')[1]!), 'nor the client token anywhere');
  }
  assert.ok(
    headers.some((h) => h['mcp-session-id']),
    "the upstream session is the gateway's own",
  );
});

test("sessions belong to who opened them: another client's token on that session id is 404; so is an unknown id", async () => {
  const mine = await rawSession(endpoint('sdk1'), tokens['mcp-client sdk1']!);
  const ok = await mine.request('tools/list');
  assert.equal(ok.status, 200);
  const theirs = await fetch(endpoint('sdk1'), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${tokens['other-client sdk1']}`,
      'mcp-session-id': mine.id,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hijack' } } }),
  });
  assert.equal(theirs.status, 404);
  assert.equal((await theirs.json()).error.code, -32001);
  const unknown = await fetch(endpoint('sdk1'), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${tokens['mcp-client sdk1']}`,
      'mcp-session-id': 'no-such-session',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }),
  });
  assert.equal(unknown.status, 404);
  await unknown.text();
  // A message the server might read otherwise (a repeated member) is refused whole, and answered.
  const repeated = await fetch(endpoint('sdk1'), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${tokens['mcp-client sdk1']}`,
      'mcp-session-id': mine.id,
    },
    body: '{"jsonrpc":"2.0","id":5,"method":"tools/list","method":"tools/call","params":{"name":"secret"}}',
  });
  assert.equal(repeated.status, 200);
  assert.equal((await messagesOf(repeated))[0].error.code, -32600);
  const badId = await fetch(endpoint('sdk1'), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${tokens['mcp-client sdk1']}`,
      'mcp-session-id': mine.id,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: { no: 1 }, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } }),
  });
  assert.equal((await messagesOf(badId))[0].error.code, -32600);
  // DELETE ends it; the id is then unknown.
  const del = await fetch(endpoint('sdk1'), { method: 'DELETE', headers: { authorization: `Bearer ${tokens['mcp-client sdk1']}`, 'mcp-session-id': mine.id } });
  assert.equal(del.status, 200);
  assert.equal((await mine.request('ping')).status, 404);
  const get = await fetch(endpoint('sdk1'), { headers: { authorization: `Bearer ${tokens['mcp-client sdk1']}`, accept: 'text/event-stream' } });
  assert.equal(get.status, 405, 'no GET stream without a session');
});

test('SDK 2.x client at 2026-07-28 → gateway → SDK 2.x server: stateless requests, routing headers checked against the body', async () => {
  const client = new Client2({ name: 'gateway-test-2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new Transport2(new URL(endpoint('sdk2')), { requestInit: { headers: { authorization: `Bearer ${tokens['mcp-client sdk2']}` } } }));
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(
      tools.map((x) => x.name),
      ['echo'],
    );
    const r = (await client.callTool({ name: 'echo', arguments: { text: 'modern' } })) as any;
    assert.deepEqual(r.content, [{ type: 'text', text: 'echo2:modern' }], JSON.stringify(r));
    const denied = (await client.callTool({ name: 'secret', arguments: {} })) as any;
    assert.equal(denied.isError, true);
    assert.equal(denied._meta['io.writ/decision'].code, 'DENIED');
  } finally {
    await client.close();
  }
  const meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  const send = (headers: Record<string, string>) =>
    fetch(endpoint('sdk2'), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${tokens['mcp-client sdk2']}`,
        'mcp-protocol-version': '2026-07-28',
        ...headers,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' }, _meta: meta } }),
    });
  const wrongName = await send({ 'mcp-method': 'tools/call', 'mcp-name': 'secret' });
  assert.equal(wrongName.status, 400);
  assert.equal((await wrongName.json()).error.code, -32020);
  const wrongMethod = await send({ 'mcp-method': 'tools/list', 'mcp-name': 'echo' });
  assert.equal(wrongMethod.status, 400);
  await wrongMethod.text();
  const right = await send({ 'mcp-method': 'tools/call', 'mcp-name': 'echo' });
  assert.equal(right.status, 200);
  assert.deepEqual((await messagesOf(right))[0].result.content, [{ type: 'text', text: 'echo2:x' }]);
  for (const h of linesOf(seen2)) assert.equal(h.authorization, undefined);
});

test('server-everything as a stdio child: a call runs; tasks belong to the identity that created them', { timeout: 60_000 }, async () => {
  const client = await sdk1Client('everything', tokens['mcp-client everything']!);
  try {
    const r = (await client.callTool({ name: 'echo', arguments: { message: 'stdio' } })) as any;
    assert.match(JSON.stringify(r.content), /stdio/);
  } finally {
    await client.close();
  }
  const mine = await rawSession(endpoint('everything'), tokens['mcp-client everything']!);
  const created = await mine.request('tools/call', { name: 'simulate-research-query', arguments: { topic: 'gateway' }, task: { ttl: 60_000 } });
  const taskId = created.messages.at(-1).result.task.taskId as string;
  assert.ok(taskId, JSON.stringify(created.messages));
  const own = await mine.request('tasks/get', { taskId });
  assert.equal(own.messages.at(-1).result.taskId, taskId);
  const listed = await mine.request('tasks/list');
  assert.ok(listed.messages.at(-1).result.tasks.some((x: any) => x.taskId === taskId));

  // Another identity, in a session of its own, asking for that task: the unknown-task error, naming the id it asked for.
  const theirs = await rawSession(endpoint('everything'), tokens['other-client everything']!);
  const unknownId = 'no-such-task-at-all';
  const reference = (await theirs.request('tasks/get', { taskId: unknownId })).messages.at(-1);
  const foreign = (await theirs.request('tasks/get', { taskId })).messages.at(-1);
  assert.ok(foreign.error, JSON.stringify(foreign));
  assert.equal(foreign.error.code, reference.error.code);
  assert.equal(foreign.error.message, reference.error.message.split(unknownId).join(taskId));
  const cancel = (await theirs.request('tasks/cancel', { taskId })).messages.at(-1);
  assert.ok(cancel.error, 'another identity cannot cancel it');
  const theirList = (await theirs.request('tasks/list')).messages.at(-1);
  assert.ok(!(theirList.result?.tasks ?? []).some((x: any) => x.taskId === taskId));
});

test('an upstream that dies mid-call: the outcome is unknown and the client is told OUTCOME_UNKNOWN', { timeout: 30_000 }, async () => {
  const client = await sdk1Client('doomed', tokens['mcp-client doomed']!);
  try {
    const r = (await client.callTool({ name: 'die', arguments: {} })) as any;
    assert.equal(r.isError, true);
    assert.equal(r._meta['io.writ/decision'].code, 'OUTCOME_UNKNOWN');
    const run = linesOf(effectsDoomed).find((e) => e.tool === 'die')!;
    assert.equal(await settledState(run.execution_id), 'unknown');
  } finally {
    await client.close().catch(() => undefined);
  }
});

test('PDP down: PDP_UNAVAILABLE, readable, and the tool never runs; /readyz says so', { timeout: 30_000 }, async () => {
  const down = await startTestGateway({ pdpUrl: 'http://127.0.0.1:9', issuer: idp.issuer, servers: { sdk1: { url: sdk1.url } } });
  try {
    const before = linesOf(effects1).length;
    const client = new Client({ name: 'gateway-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${down.url}/mcp/sdk1`), {
        requestInit: { headers: { authorization: `Bearer ${tokens['mcp-client sdk1']}` } },
      }),
    );
    const r = (await client.callTool({ name: 'echo', arguments: { text: 'nope' } })) as any;
    await client.close();
    assert.equal(r.isError, true);
    assert.equal(r._meta['io.writ/decision'].code, 'PDP_UNAVAILABLE');
    assert.match(r.content[0].text, /policy decision point is unavailable, so the tool did not run/);
    assert.equal(linesOf(effects1).length, before, 'the tool did not run');
    const ready = await fetch(`${down.url}/readyz`);
    assert.equal(ready.status, 503);
    assert.match((await ready.json()).checks.pdp, /^unavailable/);
  } finally {
    await down.stop();
  }
});

test('operations: /healthz, /readyz, /metrics count calls and refusals', async () => {
  assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
  const ready = await fetch(`${gw.url}/readyz`);
  const body = await ready.json();
  assert.equal(body.checks.pdp, 'ok');
  assert.equal(body.checks.sdk1, 'ok');
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(metrics, /writ_gateway_tool_calls_total\{server="sdk1",result="tool"\} [1-9]/);
  assert.match(metrics, /writ_gateway_tool_calls_total\{server="sdk1",result="DENIED"\} [1-9]/);
  assert.match(metrics, /writ_gateway_http_refusals_total\{status="401",reason="no_token"\} [1-9]/);
  assert.match(metrics, /writ_gateway_upstream_seconds_count\{server="sdk1"\} [1-9]/);
});

test('graceful stop: a call in flight finishes, its outcome is recorded, then the gateway closes; a session another replica opened is unknown here', {
  timeout: 30_000,
}, async () => {
  const own = await startTestGateway({ pdpUrl: pdp.url, issuer: idp.issuer, servers: { sdk1: { url: sdk1.url } } });
  // Two replicas behind one load balancer: a session of one is answered by the other as the MCP spec
  // answers an unknown session.
  const elsewhere = await rawSession(`${own.url}/mcp/sdk1`, tokens['mcp-client sdk1']!);
  const here = await fetch(endpoint('sdk1'), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${tokens['mcp-client sdk1']}`,
      'mcp-session-id': elsewhere.id,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  });
  assert.equal(here.status, 404);
  await here.text();
  const client = new Client({ name: 'gateway-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${own.url}/mcp/sdk1`), { requestInit: { headers: { authorization: `Bearer ${tokens['mcp-client sdk1']}` } } }),
  );
  const before = linesOf(effects1).filter((e) => e.tool === 'slow').length;
  const call = client.callTool({ name: 'slow', arguments: { ms: 300 } });
  await until(async () => linesOf(effects1).filter((e) => e.tool === 'slow').length > before || undefined, 'the slow tool to start');
  const stopped = own.stop();
  const r = (await call) as any;
  assert.deepEqual(r.content, [{ type: 'text', text: 'slow done' }]);
  await stopped;
  const run = linesOf(effects1)
    .filter((e) => e.tool === 'slow')
    .at(-1)!;
  assert.equal(await settledState(run.execution_id), 'committed');
  await client.close().catch(() => undefined);
});

const INSPECTOR = join(REPO, 'node_modules', '@modelcontextprotocol', 'inspector', 'clients', 'launcher', 'build', 'index.js');

test('the MCP Inspector CLI over HTTP with a bearer header: tools listed as the policy allows (secret hidden), a call, a refusal it shows', {
  timeout: 120_000,
}, async () => {
  const inspect = async (name: string, args: string[]): Promise<any> => {
    // execFile, not spawnSync: the gateway answering the Inspector runs in this process.
    const r: { stdout: string; stderr: string } = await promisify(execFile)(
      process.execPath,
      [
        INSPECTOR,
        '--cli',
        endpoint(name),
        '--transport',
        'http',
        '--header',
        `Authorization: Bearer ${tokens[`mcp-client ${name}`]}`,
        '--format',
        'json',
        '--quiet',
        ...args,
      ],
      { env: { ...process.env, HOME: t.dir, MCP_INSPECTOR_SECRET_STORE: 'memory' }, timeout: 60_000 },
    ).catch((e) => e);
    // A tool result with isError makes the Inspector exit non-zero; it still prints the result.
    const line = r.stdout
      .trim()
      .split('\n')
      .find((l) => l.startsWith('{"result"'));
    assert.ok(line, r.stdout + r.stderr);
    return JSON.parse(line).result;
  };
  const list = await inspect('sdk1', ['--method', 'tools/list']);
  assert.deepEqual(list.tools.map((x: any) => x.name).sort(), ['die', 'echo', 'slow']);
  const ok = await inspect('sdk1', ['--method', 'tools/call', '--tool-name', 'echo', '--tool-arg', 'text=inspector']);
  assert.deepEqual(ok.content, [{ type: 'text', text: 'echo:inspector' }]);
  const denied = await inspect('sdk1', ['--method', 'tools/call', '--tool-name', 'echo', '--tool-arg', 'text=blocked']);
  assert.equal(denied.isError, true);
  assert.equal(denied._meta['io.writ/decision'].code, 'DENIED');
});

test('HTTPS like writ serve: tls_cert_file and tls_key_file', async () => {
  const fixtures = join(REPO, 'test', 'pep', 'fixtures');
  const tlsGw = await startTestGateway({
    pdpUrl: pdp.url,
    issuer: idp.issuer,
    servers: { sdk1: { url: sdk1.url } },
    extra: { tls_cert_file: join(fixtures, 'test-pdp.cert.pem'), tls_key_file: join(fixtures, 'test-pdp.key.pem') },
  });
  try {
    assert.match(tlsGw.url, /^https:\/\//);
    const ca = readFileSync(join(fixtures, 'test-pdp.cert.pem'));
    const status = await new Promise<number>((resolve, reject) => {
      httpsRequest(`${tlsGw.url}/.well-known/oauth-protected-resource/mcp/sdk1`, { ca }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
        .on('error', reject)
        .end();
    });
    assert.equal(status, 200);
  } finally {
    await tlsGw.stop();
  }
});

test("an upstream URL that redirects (308) is followed with the call and the configured headers, as a browser's fetch would", async () => {
  const before = linesOf(seen1).length;
  const client = await sdk1Client('moved', tokens['mcp-client moved']!);
  try {
    const r = (await client.callTool({ name: 'echo', arguments: { text: 'moved' } })) as any;
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.deepEqual(r.content, [{ type: 'text', text: 'echo:moved' }]);
  } finally {
    await client.close();
  }
  const seen = linesOf(seen1).slice(before);
  assert.ok(seen.length > 0);
  for (const h of seen) assert.equal(h['x-upstream-key'], 'configured-upstream-secret', 'the configured headers go on to the same origin');
});
