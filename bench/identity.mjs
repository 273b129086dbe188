#!/usr/bin/env node
// Decisions per second with JWT callers vs static tokens (issue 51), in the same run, alternating per
// repetition: one `writ serve` (durable ledger, default config) whose config lists a static pep token and
// a `jwt_issuers` entry for a real OpenID Provider (oidc-provider, started here on loopback), loaded with
// `execute` of hris/read_employee, a fresh execution_id per call, sent with either credential. The JWT is
// the IdP's own (client credentials, resource indicator), verified once and then remembered until it
// expires, so the JWT path should cost little more than the static one.
//
//   node bench/identity.mjs [--reps 3] [--duration 8] [--warmup 2] [--connections "10 50"] [--no-write]
// Writes bench/results/identity.md (unless --no-write).
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createServer } from 'node:http';
import Provider from 'oidc-provider';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const { values: a } = parseArgs({
  options: {
    reps: { type: 'string', default: '3' },
    duration: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '10 50' },
    'no-write': { type: 'boolean', default: false },
  },
});
const REPS = Number(a.reps);
const CONNS = a.connections.split(/[ ,]+/).filter(Boolean).map(Number);
const WRIT_PORT = 8793;
const AUD = `http://127.0.0.1:${WRIT_PORT}`;
const STATIC = 'bench-identity-static-pep-0123456789';
const log = (s) => process.stderr.write(`${s}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const startedAt = new Date().toISOString();
const load0 = loadavg()[0];

// ── the IdP ──
const idpServer = createServer();
await new Promise((r) => idpServer.listen(0, '127.0.0.1', r));
const issuer = `http://127.0.0.1:${idpServer.address().port}`;
const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'offboarding-agent-prod',
      client_secret: 'bench-secret',
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      scope: 'writ.pep',
      id_token_signed_response_alg: 'RS256',
    },
  ],
  scopes: ['writ.pep'],
  ttl: { ClientCredentials: 3600 },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => ({ scope: 'writ.pep', audience: resource, accessTokenTTL: 3600, accessTokenFormat: 'jwt' }),
    },
  },
});
idpServer.on('request', provider.callback());
const tokenAnswer = await fetch(`${issuer}/token`, {
  method: 'POST',
  headers: {
    'content-type': 'application/x-www-form-urlencoded',
    authorization: `Basic ${Buffer.from('offboarding-agent-prod:bench-secret').toString('base64')}`,
  },
  body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'writ.pep', resource: AUD }).toString(),
});
const JWT = (await tokenAnswer.json()).access_token;

// ── writ ──
const dir = mkdtempSync(join(tmpdir(), 'writ-bench-identity-'));
writeFileSync(
  join(dir, 'config.json'),
  JSON.stringify({
    listen: `127.0.0.1:${WRIT_PORT}`,
    policy_dir: join(root, 'policies'),
    data_dir: join(dir, 'data'),
    tokens: [{ token: STATIC, role: 'pep', actor: { type: 'Agent', id: 'offboarding-agent-prod' } }],
    jwt_issuers: [{ issuer, audience: AUD, roles: { 'writ.pep': { role: 'pep', actor: { type: 'Agent', claim: 'client_id' } } } }],
  }),
);
const child = spawn(process.execPath, [join(root, 'bin', 'writ'), 'serve', '--config', join(dir, 'config.json')], { stdio: ['ignore', 'ignore', 'inherit'] });
for (let i = 0; ; i++) {
  try {
    if ((await fetch(`${AUD}/healthz`)).ok) break;
  } catch {
    /* not up yet */
  }
  if (i > 300) throw new Error('writ did not start');
  await sleep(100);
}

const envelope = {
  task_id: 'BENCH-1',
  purpose: 'scheduled_employee_offboarding',
  requester: { type: 'User', id: 'manager-1842' },
  actor: { type: 'Agent', id: 'offboarding-agent-prod' },
  subject: { type: 'Employee', id: '7721' },
};
const body = (id) =>
  JSON.stringify({ execution_id: id, phase: 'execute', envelope, action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } } });

async function run(credential, prefix, connections, duration) {
  let i = 0;
  const inst = autocannon({
    url: `${AUD}/v1/decisions`,
    method: 'POST',
    connections,
    duration,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${credential}` },
    requests: [{ method: 'POST', setupRequest: (req) => ({ ...req, body: body(`${prefix}-${i++}`) }) }],
  });
  const r = await inst;
  return { rps: r['2xx'] / duration, p50: r.latency.p50, p99: r.latency.p99, failures: r.non2xx + r.errors + r.timeouts };
}

const rows = [];
try {
  for (const [name, credential] of [
    ['static', STATIC],
    ['jwt', JWT],
  ]) {
    const check = await fetch(`${AUD}/v1/decisions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${credential}` },
      body: body(`check-${name}`),
    });
    if (check.status !== 200) throw new Error(`${name}: ${check.status} ${await check.text()}`);
  }
  for (const c of CONNS) {
    for (let rep = 0; rep < REPS; rep++) {
      // Alternating, so drift (load from elsewhere, the ledger growing) falls on both alike.
      for (const [name, credential] of rep % 2 === 0
        ? [
            ['static', STATIC],
            ['jwt', JWT],
          ]
        : [
            ['jwt', JWT],
            ['static', STATIC],
          ]) {
        await run(credential, `w-${name}-${c}-${rep}`, c, Number(a.warmup));
        const m = await run(credential, `m-${name}-${c}-${rep}`, c, Number(a.duration));
        log(`  ${name} c=${c} rep ${rep}: ${m.rps.toFixed(0)} decisions/s, p50 ${m.p50} ms, p99 ${m.p99} ms${m.failures ? `, FAILURES ${m.failures}` : ''}`);
        rows.push({ name, c, rep, ...m });
      }
    }
  }
} finally {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  idpServer.closeAllConnections();
  idpServer.close();
  rmSync(dir, { recursive: true, force: true });
}

const table = [];
for (const c of CONNS) {
  const of = (name) => rows.filter((r) => r.c === c && r.name === name);
  const s = median(of('static').map((r) => r.rps));
  const j = median(of('jwt').map((r) => r.rps));
  for (const [name, rps] of [
    ['static token', s],
    ['JWT (oidc-provider)', j],
  ]) {
    const rs = of(name.startsWith('static') ? 'static' : 'jwt');
    table.push(
      `| ${name} | ${c} | ${rps.toFixed(0)} | ${median(rs.map((r) => r.p50))} | ${median(rs.map((r) => r.p99))} | ${name.startsWith('JWT') ? `${((s / j - 1) * 100).toFixed(1)} %` : '—'} |`,
    );
  }
}
const text = `# JWT callers vs static tokens (bench/identity.mjs)

Run ${startedAt} on ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}, load average at start ${load0.toFixed(2)}.
${REPS} repetitions per row, alternating static and JWT, ${a.duration} s measured after ${a.warmup} s warm-up each; medians.

One \`writ serve\` (default config: durable ledger, HTTP fronts) with a static pep token and a \`jwt_issuers\` entry for
oidc-provider on loopback; \`execute\` of hris/read_employee with a fresh execution_id per call (allow → invoking, one durable
record each). The JWT is the IdP's own client-credentials token; writ verifies it once and remembers it until it expires,
and every record it causes carries \`identity\`.

| credential | connections | decisions/s | p50 ms | p99 ms | JWT costs more by |
| --- | ---: | ---: | ---: | ---: | ---: |
${table.join('\n')}

Reproduce: \`npm run build && node bench/identity.mjs\`.
`;
if (!a['no-write']) writeFileSync(join(here, 'results', 'identity.md'), text);
process.stdout.write(text);
