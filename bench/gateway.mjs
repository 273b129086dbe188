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
// With --base DIR (another checkout, built), a second gateway runs from DIR/bin/writ against the same
// PDP and upstream, and the sequential calls rotate direct / base / this build: an A/B in one run, on
// a machine whose load changes from minute to minute. CPU per call (Linux: /proc) is read for each
// process around every sequential call, and the disk's fdatasync measured beside the PDP's data dir.
// Usage: npm run build && node bench/gateway.mjs [--calls N] [--concurrent-calls N] [--base DIR] [--no-proxy] [--no-write]
// Writes bench/results/gateway.md and prints it.
import { spawn, execFile, execFileSync } from 'node:child_process';
import { closeSync, constants, fdatasyncSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
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
    base: { type: 'string' },
    'http-threads': { type: 'string' },
  },
});
const BASE = values.base;
const CALLS = Number(values.calls);
const WARMUP = Number(values.warmup);
const PER_CLIENT = Number(values['concurrent-calls']);
const CLIENTS = 50;

const { startIdp } = await import(join(REPO, 'dist/test/helpers/oidc.js'));
const { startPdp, startHttpUpstream, resource, PUBLIC_URL, GATEWAY_TOKEN } = await import(join(REPO, 'dist/test/gateway/helpers.js'));

const tmp = mkdtempSync(join(tmpdir(), 'writ-bench-gateway-'));
const idp = await startIdp({ clients: [{ id: 'mcp-client', scope: 'mcp' }] });
// --http-threads N sets the PDP's http_threads (default: its own default).
const pdp = await startPdp(idp.issuer, ['sdk1'], values['http-threads'] === undefined ? {} : { http_threads: Number(values['http-threads']) });
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
function startGatewayProc(repo) {
  const proc = spawn(process.execPath, [join(repo, 'bin/writ'), 'gateway', '--config', join(tmp, 'gateway.json')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = new Promise((resolve, reject) => {
    createInterface({ input: proc.stdout }).on('line', (l) => {
      const m = /listening on (\S+);/.exec(l);
      if (m) resolve(m[1]);
    });
    proc.once('exit', (c) => reject(new Error(`writ gateway (${repo}) exited ${c}`)));
  });
  return { proc, url };
}
const gw = startGatewayProc(REPO);
const gwProc = gw.proc;
const gwUrl = await gw.url;
const baseGw = BASE ? startGatewayProc(BASE) : undefined;
const baseUrl = baseGw ? await baseGw.url : undefined;
const token = await idp.clientToken('mcp-client', { scope: 'mcp', resource: resource('sdk1') });

async function connect(url, headers = {}) {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}
const direct = () => connect(upstream.url);
const viaGateway = () => connect(`${gwUrl}/mcp/sdk1`, { authorization: `Bearer ${token}` });
const viaBase = () => connect(`${baseUrl}/mcp/sdk1`, { authorization: `Bearer ${token}` });

/** CPU time (user + system, ms) of a process so far, from /proc; undefined where there is none. */
function cpuMs(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
  } catch {
    return undefined;
  }
}
const watched = { gateway: gwProc.pid, pdp: pdp.child.pid, upstream: upstream.child.pid, ...(baseGw ? { 'base gateway': baseGw.proc.pid } : {}) };
const cpuNow = () => Object.fromEntries(Object.entries(watched).map(([k, pid]) => [k, cpuMs(pid)]));
/** Per-process CPU ms spent during the calls of one kind, summed. */
const cpuDirect = {};
const cpuGateway = {};
const cpuBase = {};
function addCpu(into, before, after) {
  for (const k of Object.keys(after)) if (after[k] !== undefined && before[k] !== undefined) into[k] = (into[k] ?? 0) + after[k] - before[k];
}

async function timed(client) {
  const t0 = process.hrtime.bigint();
  const r = await client.callTool({ name: 'echo', arguments: { text: 'bench' } });
  const dt = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.isError) throw new Error(`call failed: ${JSON.stringify(r)}`);
  return dt;
}

// Sequential, alternating (rotating direct / base / this build with --base).
const loadBefore = loadavg();
const d = await direct();
const g = await viaGateway();
const b = baseGw ? await viaBase() : undefined;
for (let i = 0; i < WARMUP; i++) {
  await timed(d);
  await timed(g);
  if (b) await timed(b);
}
const seqD = [];
const seqG = [];
const seqDiff = [];
const seqB = [];
const seqBDiff = [];
for (let i = 0; i < CALLS; i++) {
  const c0 = cpuNow();
  const x = await timed(d);
  const c1 = cpuNow();
  addCpu(cpuDirect, c0, c1);
  // The two gateways take turns going first after the direct call.
  const order = b && i % 2 === 1 ? ['base', 'this'] : ['this', 'base'];
  for (const which of order) {
    if (which === 'base' && !b) continue;
    const before = cpuNow();
    const y = await timed(which === 'this' ? g : b);
    addCpu(which === 'this' ? cpuGateway : cpuBase, before, cpuNow());
    if (which === 'this') {
      seqG.push(y);
      seqDiff.push(y - x);
    } else {
      seqB.push(y);
      seqBDiff.push(y - x);
    }
  }
  seqD.push(x);
}
await d.close();
await g.close();
await b?.close();

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
let conG;
let conB;
if (baseGw) {
  // Direct, this build and the base in the order D G B B G D, so that none gets the quieter minute.
  conG = await concurrent(viaGateway);
  conB = await concurrent(viaBase);
  conB.push(...(await concurrent(viaBase)));
  conG.push(...(await concurrent(viaGateway)));
  conD.push(...(await concurrent(direct)));
} else conG = await concurrent(viaGateway);

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

// The disk's floor under the PDP's data dir, measured now: fdatasync of a 4 KiB page (LMDB's data
// pages), then a 128-byte O_DSYNC write (its meta page, as LMDB writes it) — what each durable commit
// waits for at least.
function diskFloor() {
  const dir = mkdtempSync(join(pdp.dataDir, '..', 'writ-bench-fsync-'));
  const data = openSync(join(dir, 'data'), 'w');
  const meta = openSync(join(dir, 'meta'), 'w', 0o600);
  const metaSync = openSync(join(dir, 'meta'), constants.O_RDWR | constants.O_DSYNC);
  const page = Buffer.alloc(4096, 7);
  const sync = [];
  const dsync = [];
  for (let i = 0; i < 200; i++) {
    writeSync(data, page, 0, page.length, (i % 64) * 4096);
    let t0 = performance.now();
    fdatasyncSync(data);
    sync.push(performance.now() - t0);
    t0 = performance.now();
    writeSync(metaSync, page, 0, 128, (i % 2) * 4096);
    dsync.push(performance.now() - t0);
  }
  for (const fd of [data, meta, metaSync]) closeSync(fd);
  rmSync(dir, { recursive: true, force: true });
  return { sync, dsync };
}
const disk = diskFloor();
const loadAfter = loadavg();

for (const p of [gwProc, baseGw?.proc].filter(Boolean)) {
  p.kill('SIGTERM');
  await new Promise((r) => p.once('exit', r));
}
upstream.stop();
await pdp.stop();
await idp.stop();
rmSync(tmp, { recursive: true, force: true });

let proxyMd = '';
if (!values['no-proxy']) {
  const r = await promisify(execFile)(
    process.execPath,
    [
      join(REPO, 'bench/proxy.mjs'),
      '--no-write',
      '--calls',
      String(CALLS),
      ...(BASE ? ['--base', BASE] : []),
      ...(values['http-threads'] === undefined ? [] : ['--http-threads', values['http-threads']]),
    ],
    { maxBuffer: 1 << 20 },
  );
  proxyMd = r.stdout.replace(/^# .*\n/, '').trim();
}

const q = (arr, f) => {
  const s = [...arr].sort((m, n) => m - n);
  return s[Math.min(s.length - 1, Math.floor(f * s.length))];
};
const f2 = (x) => x.toFixed(2);
const row = (name, a) => `| ${name} | ${f2(q(a, 0.5))} | ${f2(q(a, 0.9))} | ${f2(q(a, 0.99))} |`;
const perCall = (m, n) =>
  Object.entries(m)
    .map(([k, v]) => `${k} ${f2(v / n)}`)
    .join(', ');
const load = (l) => l.map((x) => x.toFixed(1)).join(' / ');
const baseName = BASE ? `\`${BASE}\` (${gitHead(BASE)})` : '';
function gitHead(dir) {
  try {
    return execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return 'commit unknown';
  }
}
const md = `# writ gateway: added latency per tools/call

One run, ${new Date().toISOString()}, Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}; load average
(1 / 5 / 15 min) ${load(loadBefore)} before the sequential calls, ${load(loadAfter)} at the end of the gateway's part.
Upstream: an SDK 1.x MCP server over Streamable HTTP (\`echo\`), sessions; the client an SDK 1.x Streamable
HTTP client. Through the gateway each call is: bearer JWT checked (cached after the first), \`execute\`
decision at the real PDP as a delegated pep (the client's token verified again there), dispatch upstream
over HTTP, outcome \`committed\` — two durable commits at the PDP per call.

## Sequential (one client each way, ${CALLS} calls ${BASE ? 'rotating direct / this build / base (the two gateways taking turns to go first)' : 'alternating'}, after ${WARMUP} warm-up rounds)

| | p50 (ms) | p90 (ms) | p99 (ms) |
|---|---:|---:|---:|
${row('direct to the upstream', seqD)}
${row('through `writ gateway`', seqG)}
${row('added (difference to the direct call just before)', seqDiff)}
${BASE ? `${row(`through the base gateway, ${baseName}`, seqB)}\n${row('added by the base gateway', seqBDiff)}\n` : ''}
CPU per sequential call (ms, user + system, from /proc): direct — ${perCall(cpuDirect, CALLS)}; through this gateway — ${perCall(cpuGateway, CALLS)}${BASE ? `; through the base gateway — ${perCall(cpuBase, CALLS)}` : ''}.

## ${CLIENTS} concurrent clients (${PER_CLIENT} calls each, every client calling at once${BASE ? '; each way twice, in the order direct, this, base, base, this, direct' : ''})

| | p50 (ms) | p90 (ms) | p99 (ms) |
|---|---:|---:|---:|
${row('direct to the upstream', conD)}
${row('through `writ gateway`', conG)}
${conB ? `${row('through the base gateway', conB)}\n` : ''}
## The PDP alone, same run (decide, then outcome; ${CALLS - WARMUP} pairs alternating)

| | decide p50 (ms) | outcome p50 (ms) | decide p99 (ms) | outcome p99 (ms) |
|---|---:|---:|---:|---:|
| delegated pep (\`identity_token\`, as the gateway) | ${f2(q(pdpD[0], 0.5))} | ${f2(q(pdpD[1], 0.5))} | ${f2(q(pdpD[0], 0.99))} | ${f2(q(pdpD[1], 0.99))} |
| plain pep bound to the same actor | ${f2(q(pdpP[0], 0.5))} | ${f2(q(pdpP[1], 0.5))} | ${f2(q(pdpP[0], 0.99))} | ${f2(q(pdpP[1], 0.99))} |

The disk under the PDP's data dir, same run (200 each): fdatasync of a 4 KiB page p50 ${f2(q(disk.sync, 0.5))} ms (p90 ${f2(q(disk.sync, 0.9))}),
then a 128-byte \`O_DSYNC\` write as LMDB writes its meta page p50 ${f2(q(disk.dsync, 0.5))} ms (p90 ${f2(q(disk.dsync, 0.9))}): a durable commit waits for
both, so two commits per call cost at least ${f2(2 * (q(disk.sync, 0.5) + q(disk.dsync, 0.5)))} ms p50 of disk alone.

Added p50: **${f2(q(seqDiff, 0.5))} ms** sequential${BASE ? ` (base ${f2(q(seqBDiff, 0.5))} ms)` : ''}, **${f2(q(conG, 0.5) - q(conD, 0.5))} ms** at ${CLIENTS} concurrent clients (p50 gateway − p50 direct${conB ? `; base ${f2(q(conB, 0.5) - q(conD, 0.5))} ms` : ''}); p99 ${f2(q(seqG, 0.99) - q(seqD, 0.99))} / ${f2(q(conG, 0.99) - q(conD, 0.99))} ms.
${proxyMd ? `\n## writ proxy in the same run (bench/proxy.mjs)\n\n${proxyMd}\n` : ''}
Reproduce: \`npm run build && node bench/gateway.mjs --calls ${CALLS} --concurrent-calls ${PER_CLIENT}${BASE ? ' --base DIR' : ''}\`${BASE ? ' (DIR: another checkout, `npm ci && npm run build` there)' : ''}.
`;
if (!values['no-write']) writeFileSync(join(REPO, 'bench/results/gateway.md'), md);
process.stdout.write(md);
