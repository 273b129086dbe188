#!/usr/bin/env node
// Added latency per tool call of `writ proxy` versus the bare server, in one run.
//
// The server is the real @modelcontextprotocol/server-memory (`read_graph` on a small graph); the PDP
// is the real sidecar (`writ serve` via test/helpers/server, policies test/pep/policies) — or, with
// `--fake-pdp`, the test fake (no Cedar, no ledger: the proxy's own overhead). Calls alternate
// bare/proxied, one at a time, from one SDK client each, after a warm-up. Each proxied call is a full
// execute decision + dispatch + outcome (a fresh execution id per call).
// With --base DIR (another checkout, built), a second proxy runs from DIR/bin/writ, and the calls rotate
// bare / this build / base (the two proxies taking turns to go first): an A/B in one run.
// Usage: node bench/proxy.mjs [--calls N] [--warmup N] [--fake-pdp] [--base DIR]   (needs `npm run build` first)
// Writes bench/results/proxy.md and prints it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const REPO = fileURLToPath(new URL('../', import.meta.url));
const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '400' },
    warmup: { type: 'string', default: '40' },
    'fake-pdp': { type: 'boolean', default: false },
    'http-threads': { type: 'string' },
    'no-write': { type: 'boolean', default: false },
    base: { type: 'string' },
  },
});
const BASE = values.base;
const CALLS = Number(values.calls);
const WARMUP = Number(values.warmup);
const MEMORY = join(REPO, 'node_modules/@modelcontextprotocol/server-memory/dist/index.js');
const WRIT = join(REPO, 'bin/writ');

const tmp = mkdtempSync(join(tmpdir(), 'writ-bench-proxy-'));
let pdp;
let pdpKind;
if (values['fake-pdp']) {
  const { startFakePdp } = await import(join(REPO, 'dist/test/pep/fake-pdp.js'));
  const { mirroredPolicy } = await import(join(REPO, 'dist/test/pep/backends.js'));
  const f = await startFakePdp({ policy: mirroredPolicy });
  pdp = { url: f.url, token: f.tokens.pep, stop: () => f.stop() };
  pdpKind = 'fake PDP (test/pep/fake-pdp.ts: no Cedar, no ledger)';
} else {
  const { startTestServer } = await import(join(REPO, 'dist/test/helpers/server.js'));
  // --http-threads N sets the sidecar's http_threads (default: its own default, fronts on).
  const config = values['http-threads'] === undefined ? {} : { http_threads: Number(values['http-threads']) };
  const s = await startTestServer({ policyDir: join(REPO, 'test/pep/policies'), config });
  pdp = { url: s.url, token: s.tokens.pep, stop: () => s.stop() };
  pdpKind = 'real sidecar (`writ serve`, Cedar, durable ledger; policies test/pep/policies)';
}

async function connect(command, args, env) {
  const transport = new StdioClientTransport({ command, args, env: { ...process.env, ...env }, stderr: 'pipe' });
  transport.stderr?.on('data', () => {});
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

const tokenFile = join(tmp, 'token');
writeFileSync(tokenFile, pdp.token);
const bare = await connect(process.execPath, [MEMORY], { MEMORY_FILE_PATH: join(tmp, 'bare.jsonl') });
const proxyOf = (writ, file) =>
  connect(process.execPath, [writ, 'proxy', '--pdp', pdp.url, '--token-file', tokenFile, '--server', 'memory', '--', process.execPath, MEMORY], {
    MEMORY_FILE_PATH: join(tmp, file),
  });
const proxied = await proxyOf(WRIT, 'proxied.jsonl');
const baseProxied = BASE ? await proxyOf(join(BASE, 'bin/writ'), 'base.jsonl') : undefined;
const env = {
  task_id: 'BENCH-1',
  purpose: 'benchmark',
  requester: { type: 'User', id: 'manager-1842' },
  actor: { type: 'Agent', id: 'offboarding-agent-prod' },
  subject: { type: 'Employee', id: '7721' },
};
let seq = 0;
const seed = {
  entities: [
    { name: 'Ada', entityType: 'person', observations: ['a', 'b', 'c'] },
    { name: 'Writ', entityType: 'project', observations: ['d'] },
  ],
};
await bare.callTool({ name: 'create_entities', arguments: seed });
const seeded = await proxied.callTool({
  name: 'create_entities',
  arguments: seed,
  _meta: { 'io.writ/envelope': env, 'io.writ/execution_id': `bench-seed-${Date.now()}` },
});
if (seeded.isError) throw new Error(`seed refused: ${JSON.stringify(seeded)}`);
if (baseProxied) {
  const r = await baseProxied.callTool({
    name: 'create_entities',
    arguments: seed,
    _meta: { 'io.writ/envelope': env, 'io.writ/execution_id': `bench-seed-base-${Date.now()}` },
  });
  if (r.isError) throw new Error(`seed refused (base): ${JSON.stringify(r)}`);
}

const runId = Date.now().toString(36);
async function timed(fn) {
  const t0 = process.hrtime.bigint();
  const r = await fn();
  const dt = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.isError) throw new Error(`call failed: ${JSON.stringify(r)}`);
  return dt;
}
const callBare = () => bare.callTool({ name: 'read_graph', arguments: {} });
const callVia = (client) => () =>
  client.callTool({ name: 'read_graph', arguments: {}, _meta: { 'io.writ/envelope': env, 'io.writ/execution_id': `bench-${runId}-${++seq}` } });
const callProxied = callVia(proxied);
const callBase = baseProxied ? callVia(baseProxied) : undefined;

for (let i = 0; i < WARMUP; i++) {
  await timed(callBare);
  await timed(callProxied);
  if (callBase) await timed(callBase);
}
const b = [];
const p = [];
const diff = [];
const pb = [];
const diffBase = [];
for (let i = 0; i < CALLS; i++) {
  const x = await timed(callBare);
  // With a base proxy, the two proxies take turns going first after the bare call.
  const order = callBase && i % 2 === 1 ? ['base', 'this'] : ['this', 'base'];
  for (const which of order) {
    if (which === 'base') {
      if (!callBase) continue;
      const y = await timed(callBase);
      pb.push(y);
      diffBase.push(y - x);
    } else {
      const y = await timed(callProxied);
      p.push(y);
      diff.push(y - x);
    }
  }
  b.push(x);
}
await bare.close();
await proxied.close();
await baseProxied?.close();
await pdp.stop();
rmSync(tmp, { recursive: true, force: true });

const q = (arr, f) => {
  const s = [...arr].sort((m, n) => m - n);
  return s[Math.min(s.length - 1, Math.floor(f * s.length))];
};
const f2 = (x) => x.toFixed(2);
const md = `# writ proxy: added latency per tool call

One run, ${new Date().toISOString()}, Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}.
Server: \`@modelcontextprotocol/server-memory\` \`read_graph\` (2 entities), over stdio, one call at a time.
PDP: ${pdpKind}. Each proxied call = \`execute\` decision + dispatch with the admitted arguments +
outcome \`committed\`, a fresh execution id per call. ${CALLS} calls each, ${BASE ? 'rotating bare / this build / base' : 'alternating bare/proxied'}, after ${WARMUP} warm-up rounds; load average ${loadavg()
  .map((x) => x.toFixed(1))
  .join(' / ')} at the end.

| | p50 (ms) | p90 (ms) | p99 (ms) |
|---|---:|---:|---:|
| bare server | ${f2(q(b, 0.5))} | ${f2(q(b, 0.9))} | ${f2(q(b, 0.99))} |
| behind \`writ proxy\` | ${f2(q(p, 0.5))} | ${f2(q(p, 0.9))} | ${f2(q(p, 0.99))} |
| added (difference to the bare call just before) | ${f2(q(diff, 0.5))} | ${f2(q(diff, 0.9))} | ${f2(q(diff, 0.99))} |
${BASE ? `| behind the base proxy (\`${BASE}\`) | ${f2(q(pb, 0.5))} | ${f2(q(pb, 0.9))} | ${f2(q(pb, 0.99))} |\n| added by the base proxy | ${f2(q(diffBase, 0.5))} | ${f2(q(diffBase, 0.9))} | ${f2(q(diffBase, 0.99))} |\n` : ''}
Median added latency per call: **${f2(q(diff, 0.5))} ms** (p50 proxied − p50 bare = ${f2(q(p, 0.5) - q(b, 0.5))} ms).
Reproduce: \`npm run build && node bench/proxy.mjs${values['fake-pdp'] ? ' --fake-pdp' : ''} --calls ${CALLS}${BASE ? ' --base DIR' : ''}\`.
`;
if (!values['no-write']) writeFileSync(join(REPO, 'bench/results/proxy.md'), md);
process.stdout.write(md);
