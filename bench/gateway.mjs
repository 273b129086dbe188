#!/usr/bin/env node
// Added latency per tools/call through `writ gateway` against the same upstream called directly, and
// the stdio proxy's figure measured in the same run (bench/proxy.mjs as a child).
//
// Components, all real: oidc-provider issues the client's token (client credentials, resource
// indicator, JWT); the PDP is `writ serve` (Cedar, durable ledger: a decision and an outcome commit per
// call; policies test/gateway/policies); the upstream is an SDK 1.x server over Streamable HTTP
// (test/gateway/fixtures/sdk1-http-server.mjs, tool `echo`); the gateway is `writ gateway` as its own
// process. Clients are SDK 1.x Streamable HTTP clients.
//   sequential: one client each way, calls alternating direct/gateway, per-pair differences;
//   concurrent: 50 clients each way, all calling at once (direct, then gateway), per-call latency.
// Usage: npm run build && node bench/gateway.mjs [--calls N] [--concurrent-calls N] [--no-proxy] [--no-write]
// Writes bench/results/gateway.md and prints it.
import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const REPO = fileURLToPath(new URL('../', import.meta.url));
const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '300' },
    warmup: { type: 'string', default: '30' },
    'concurrent-calls': { type: 'string', default: '20' },
    'no-proxy': { type: 'boolean', default: false },
    'no-write': { type: 'boolean', default: false },
  },
});
const CALLS = Number(values.calls);
const WARMUP = Number(values.warmup);
const PER_CLIENT = Number(values['concurrent-calls']);
const CLIENTS = 50;

const { startIdp } = await import(join(REPO, 'dist/test/helpers/oidc.js'));
const { startPdp, startHttpUpstream, resource, PUBLIC_URL, GATEWAY_TOKEN } = await import(join(REPO, 'dist/test/gateway/helpers.js'));

const tmp = mkdtempSync(join(tmpdir(), 'writ-bench-gateway-'));
const idp = await startIdp({ clients: [{ id: 'mcp-client', scope: 'mcp' }] });
const pdp = await startPdp(idp.issuer, ['sdk1']);
const upstream = await startHttpUpstream('sdk1-http-server.mjs', {});
writeFileSync(join(tmp, 'gateway.token'), GATEWAY_TOKEN);
writeFileSync(
  join(tmp, 'gateway.json'),
  JSON.stringify({
    listen: '127.0.0.1:0',
    public_url: PUBLIC_URL,
    pdp: { url: pdp.url, token_file: join(tmp, 'gateway.token') },
    jwt_issuers: [{ issuer: idp.issuer }],
    authorization_servers: [idp.issuer],
    scopes_supported: ['mcp'],
    defaults: { task_id: 'BENCH-1', purpose: 'benchmark', subject: { type: 'Employee', id: '7721' } },
    servers: { sdk1: { url: upstream.url } },
  }),
);
const gwProc = spawn(process.execPath, [join(REPO, 'bin/writ'), 'gateway', '--config', join(tmp, 'gateway.json')], { stdio: ['ignore', 'pipe', 'inherit'] });
const gwUrl = await new Promise((resolve, reject) => {
  createInterface({ input: gwProc.stdout }).on('line', (l) => {
    const m = /listening on (\S+);/.exec(l);
    if (m) resolve(m[1]);
  });
  gwProc.once('exit', (c) => reject(new Error(`writ gateway exited ${c}`)));
});
const token = await idp.clientToken('mcp-client', { scope: 'mcp', resource: resource('sdk1') });

async function connect(url, headers = {}) {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}
const direct = () => connect(upstream.url);
const viaGateway = () => connect(`${gwUrl}/mcp/sdk1`, { authorization: `Bearer ${token}` });

async function timed(client) {
  const t0 = process.hrtime.bigint();
  const r = await client.callTool({ name: 'echo', arguments: { text: 'bench' } });
  const dt = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.isError) throw new Error(`call failed: ${JSON.stringify(r)}`);
  return dt;
}

// Sequential, alternating.
const d = await direct();
const g = await viaGateway();
for (let i = 0; i < WARMUP; i++) {
  await timed(d);
  await timed(g);
}
const seqD = [];
const seqG = [];
const seqDiff = [];
for (let i = 0; i < CALLS; i++) {
  const x = await timed(d);
  const y = await timed(g);
  seqD.push(x);
  seqG.push(y);
  seqDiff.push(y - x);
}
await d.close();
await g.close();

// 50 concurrent clients each way.
async function concurrent(make) {
  const clients = await Promise.all(Array.from({ length: CLIENTS }, make));
  for (const c of clients) await timed(c);
  const lat = [];
  await Promise.all(
    clients.map(async (c) => {
      for (let i = 0; i < PER_CLIENT; i++) lat.push(await timed(c));
    }),
  );
  await Promise.all(clients.map((c) => c.close()));
  return lat;
}
const conD = await concurrent(direct);
const conG = await concurrent(viaGateway);

// The PDP alone: decide + outcome as the delegated pep (identity_token) and as a plain pep bound to the
// same actor, alternating — what delegation costs at the PDP.
const { PdpClient } = await import(join(REPO, 'dist/src/pep/client.js'));
const { TEST_TOKENS } = await import(join(REPO, 'dist/test/helpers/server.js'));
const delegatedPep = new PdpClient({ url: pdp.url, token: GATEWAY_TOKEN });
const plainPep = new PdpClient({ url: pdp.url, token: TEST_TOKENS.pep });
const envelope = { task_id: 'BENCH-1', purpose: 'benchmark', subject: { type: 'Employee', id: '7721' } };
let seq = 0;
async function pdpPair(client, delegated) {
  const id = `bench-pdp-${Date.now()}-${++seq}`;
  const env = delegated ? envelope : { ...envelope, requester: { type: 'User', id: 'mcp-client' }, actor: { type: 'Agent', id: 'mcp-client' } };
  const t0 = performance.now();
  const d = await client.decide(
    { execution_id: id, phase: 'execute', envelope: env, action: { server: 'sdk1', tool: 'echo', arguments: { text: 'bench' } } },
    delegated ? { identityToken: token } : {},
  );
  const t1 = performance.now();
  const o = await client.outcome(id, { status: 'committed', confirmation: 'tool_reported' }, delegated ? token : undefined);
  if (!d.ok || !o.ok) throw new Error(`PDP refused: ${JSON.stringify(d.ok ? o : d)}`);
  return [t1 - t0, performance.now() - t1];
}
const pdpD = [[], []];
const pdpP = [[], []];
for (let i = 0; i < CALLS; i++) {
  const a = await pdpPair(delegatedPep, true);
  const b = await pdpPair(plainPep, false);
  if (i < WARMUP) continue;
  pdpD[0].push(a[0]);
  pdpD[1].push(a[1]);
  pdpP[0].push(b[0]);
  pdpP[1].push(b[1]);
}

gwProc.kill('SIGTERM');
await new Promise((r) => gwProc.once('exit', r));
upstream.stop();
await pdp.stop();
await idp.stop();
rmSync(tmp, { recursive: true, force: true });

let proxyMd = '';
if (!values['no-proxy']) {
  const r = await promisify(execFile)(process.execPath, [join(REPO, 'bench/proxy.mjs'), '--no-write', '--calls', String(CALLS)], { maxBuffer: 1 << 20 });
  proxyMd = r.stdout.replace(/^# .*\n/, '').trim();
}

const q = (arr, f) => {
  const s = [...arr].sort((m, n) => m - n);
  return s[Math.min(s.length - 1, Math.floor(f * s.length))];
};
const f2 = (x) => x.toFixed(2);
const row = (name, a) => `| ${name} | ${f2(q(a, 0.5))} | ${f2(q(a, 0.9))} | ${f2(q(a, 0.99))} |`;
const md = `# writ gateway: added latency per tools/call

One run, ${new Date().toISOString()}, Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}.
Upstream: an SDK 1.x MCP server over Streamable HTTP (\`echo\`), sessions; the client an SDK 1.x Streamable
HTTP client. Through the gateway each call is: bearer JWT checked (cached after the first), \`execute\`
decision at the real PDP as a delegated pep (the client's token verified again there), dispatch upstream
over HTTP, outcome \`committed\` — two durable commits at the PDP per call.

## Sequential (one client each way, ${CALLS} calls alternating, after ${WARMUP} warm-up pairs)

| | p50 (ms) | p90 (ms) | p99 (ms) |
|---|---:|---:|---:|
${row('direct to the upstream', seqD)}
${row('through `writ gateway`', seqG)}
${row('added (per-pair difference)', seqDiff)}

## ${CLIENTS} concurrent clients (${PER_CLIENT} calls each, every client calling at once)

| | p50 (ms) | p90 (ms) | p99 (ms) |
|---|---:|---:|---:|
${row('direct to the upstream', conD)}
${row('through `writ gateway`', conG)}

## The PDP alone, same run (decide, then outcome; ${CALLS - WARMUP} pairs alternating)

| | decide p50 (ms) | outcome p50 (ms) | decide p99 (ms) | outcome p99 (ms) |
|---|---:|---:|---:|---:|
| delegated pep (\`identity_token\`, as the gateway) | ${f2(q(pdpD[0], 0.5))} | ${f2(q(pdpD[1], 0.5))} | ${f2(q(pdpD[0], 0.99))} | ${f2(q(pdpD[1], 0.99))} |
| plain pep bound to the same actor | ${f2(q(pdpP[0], 0.5))} | ${f2(q(pdpP[1], 0.5))} | ${f2(q(pdpP[0], 0.99))} | ${f2(q(pdpP[1], 0.99))} |

Added p50: **${f2(q(seqDiff, 0.5))} ms** sequential, **${f2(q(conG, 0.5) - q(conD, 0.5))} ms** at ${CLIENTS} concurrent clients (p50 gateway − p50 direct); p99 ${f2(q(seqG, 0.99) - q(seqD, 0.99))} / ${f2(q(conG, 0.99) - q(conD, 0.99))} ms.
${proxyMd ? `\n## writ proxy in the same run (bench/proxy.mjs)\n\n${proxyMd}\n` : ''}
Reproduce: \`npm run build && node bench/gateway.mjs --calls ${CALLS} --concurrent-calls ${PER_CLIENT}\`.
`;
if (!values['no-write']) writeFileSync(join(REPO, 'bench/results/gateway.md'), md);
process.stdout.write(md);
