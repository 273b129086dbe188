#!/usr/bin/env node
// AuthZEN evaluations per second (issue 15): `writ serve` on examples/authzen-todo with its durable
// ledger (every evaluation one record, fsync'd before the answer), asked
//   - single: POST /access/v1/evaluation, one evaluation per request, and
//   - batched: POST /access/v1/evaluations, 20 items per request (execute_all; one group commit each),
// next to Cerbos 0.55's check API in the same run (optional peer, skipped when absent):
//   - single: `../shared/peers/cerbos/run.sh cerbos` (its own autocannon load of one CheckResources
//     request with one resource; audit on and off), and
//   - batched: the same Cerbos binary and audit-on config started here, one CheckResources request
//     with 20 resources (Cerbos's own batching), loaded with the same autocannon settings as writ.
// Cerbos writes its audit log asynchronously; writ answers only after its records are durable.
//
//   node bench/authzen.mjs [--duration 8] [--warmup 2] [--connections "10 50"] [--batch 20] [--node-bin PATH]
//                          [--http-threads N] [--no-cerbos] [--no-write]
// --node-bin runs writ under that Node (default: this one); server CPU counts the front processes a Node
// without SO_REUSEPORT forks.
// Writes bench/results/authzen.md (unless --no-write) and raw JSON lines to bench/tmp/authzen-raw.jsonl.
import autocannon from 'autocannon';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import { cpus, homedir, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { procCpuSeconds } from './proc.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const { values: a } = parseArgs({
  options: {
    duration: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '10 50' },
    batch: { type: 'string', default: '20' },
    'no-cerbos': { type: 'boolean', default: false },
    'no-write': { type: 'boolean', default: false },
    // writ's http_threads (default: its own default, HTTP fronts on; 0 = HTTP on the main thread).
    'http-threads': { type: 'string' },
    'node-bin': { type: 'string', default: process.execPath },
  },
});
const DURATION = Number(a.duration);
const WARMUP = Number(a.warmup);
const CONNS = a.connections.split(/[ ,]+/).filter(Boolean).map(Number);
const BATCH = Number(a.batch);
const PEER = join(root, '..', 'shared', 'peers', 'cerbos');
const TOKEN = 'bench-authzen-evaluator-0123456789';

mkdirSync(join(here, 'tmp'), { recursive: true });
const rawFile = join(here, 'tmp', 'authzen-raw.jsonl');
writeFileSync(rawFile, '');
const results = [];
const log = (s) => process.stderr.write(`${s}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const startedAt = new Date().toISOString();

const pct = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] : NaN);

async function waitHealthy(url, child, init) {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null) throw new Error(`server exited (${child.exitCode}) before it was healthy`);
    try {
      const r = await fetch(url, init);
      if (r.status === 200) return;
    } catch {
      /* not up yet */
    }
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${url}`);
}

function stop(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** One autocannon run of `body` against `url`; each 2xx answer counts `perRequest` evaluations. */
async function load({ url, headers, body, connections, duration, pid, perRequest }) {
  const lat = [];
  const cpu0 = procCpuSeconds(pid);
  const t0 = process.hrtime.bigint();
  // `body` is a text, or a function of the request's number (a new question each time).
  let n = 0;
  const opts = { url, method: 'POST', headers, connections, duration };
  if (typeof body === 'function') opts.requests = [{ method: 'POST', setupRequest: (req) => ({ ...req, body: body(n++) }) }];
  else opts.body = body;
  const inst = autocannon(opts);
  inst.on('response', (_c, status, _b, rt) => {
    if (status >= 200 && status < 300) lat.push(rt);
  });
  const r = await inst;
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu1 = procCpuSeconds(pid);
  lat.sort((x, y) => x - y);
  const cpu = cpu0 === null || cpu1 === null ? null : cpu1 - cpu0;
  return {
    req_per_s: r['2xx'] / wall,
    evaluations_per_s: (r['2xx'] * perRequest) / wall,
    p50_ms: pct(lat, 50),
    p99_ms: pct(lat, 99),
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    server_cpu_cores: cpu === null ? null : cpu / wall,
    server_cpu_ms_per_evaluation: cpu === null || r['2xx'] === 0 ? null : (cpu * 1000) / (r['2xx'] * perRequest),
    wall_s: wall,
  };
}

function record(target, mode, connections, m) {
  const line = { target, mode, connections, started_at: startedAt, ...m };
  results.push(line);
  appendFileSync(rawFile, `${JSON.stringify(line)}\n`);
  log(
    `  => ${target} ${mode} c=${connections}: ${m.evaluations_per_s.toFixed(0)} evaluations/s (${m.req_per_s.toFixed(0)} req/s), p50 ${m.p50_ms?.toFixed?.(2)} ms, p99 ${m.p99_ms?.toFixed?.(2)} ms` +
      (m.non2xx || m.errors || m.timeouts ? `  FAILURES non2xx=${m.non2xx} errors=${m.errors} timeouts=${m.timeouts}` : ''),
  );
}

// ── writ ──
const MORTY = 'CiRmZDE2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs';
const todo = (i, owner) => ({ type: 'todo', id: `todo-${i}`, properties: { ownerID: owner } });
const singleBody = JSON.stringify({
  subject: { type: 'user', id: MORTY },
  action: { name: 'can_update_todo' },
  resource: todo(0, 'morty@the-citadel.com'),
  context: {},
});
/** A question never asked before on every call (the resource's id changes), so no answer comes from the decision memo. */
const distinctBody = (prefix) => (i) =>
  JSON.stringify({
    subject: { type: 'user', id: MORTY },
    action: { name: 'can_update_todo' },
    resource: todo(`${prefix}-${i}`, 'morty@the-citadel.com'),
    context: {},
  });
const batchBody = JSON.stringify({
  subject: { type: 'user', id: MORTY },
  action: { name: 'can_update_todo' },
  resource: {},
  context: {},
  evaluations: Array.from({ length: BATCH }, (_, i) => ({ resource: todo(i, i % 2 ? 'rick@the-citadel.com' : 'morty@the-citadel.com') })),
});

async function runWrit() {
  const dir = mkdtempSync(join(tmpdir(), 'writ-bench-authzen-'));
  const config = {
    listen: '127.0.0.1:0',
    policy_dir: join(root, 'examples', 'authzen-todo'),
    data_dir: join(dir, 'data'),
    tokens: [{ token: TOKEN, role: 'evaluator' }],
    ...(a['http-threads'] === undefined ? {} : { http_threads: Number(a['http-threads']) }),
  };
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  // A free port chosen by the OS (the machine is shared): the URL is read from the start-up line.
  const child = spawn(a['node-bin'], [join(root, 'bin', 'writ'), 'serve', '--config', join(dir, 'config.json')], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const url = await new Promise((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
        const m = /listening on (http:\/\/\S+)/.exec(out);
        if (m) resolve(m[1]);
      });
      child.once('exit', (code) => reject(new Error(`writ serve exited ${code}`)));
    });
    child.stdout.resume();
    await waitHealthy(`${url}/readyz`, child);
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` };
    const check = await (await fetch(`${url}/access/v1/evaluations`, { method: 'POST', headers, body: batchBody })).json();
    const expected = Array.from({ length: BATCH }, (_, i) => i % 2 === 0);
    if (JSON.stringify(check.evaluations.map((e) => e.decision)) !== JSON.stringify(expected))
      throw new Error(`unexpected writ answer ${JSON.stringify(check)}`);
    for (const c of CONNS) {
      const modes = [
        ['single', '/access/v1/evaluation', singleBody, 1],
        ['single, distinct (a new resource id each time)', '/access/v1/evaluation', distinctBody(`c${c}`), 1],
        [`batched (${BATCH} per request)`, '/access/v1/evaluations', batchBody, BATCH],
      ];
      for (const [mode, path, body, perRequest] of modes) {
        log(`writ ${mode}, ${c} connections: ${WARMUP}s warm-up + ${DURATION}s`);
        if (WARMUP > 0) await load({ url: url + path, headers, body, connections: c, duration: WARMUP, pid: child.pid, perRequest });
        record('writ', mode, c, await load({ url: url + path, headers, body, connections: c, duration: DURATION, pid: child.pid, perRequest }));
      }
    }
    const size = (await (await fetch(`${url}/readyz`)).json()).ledger_size;
    log(`writ ledger: ${size} records`);
  } finally {
    await stop(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

// ── Cerbos (optional peer) ──
function cerbosBinary() {
  for (const base of [PEER, process.env.PEER_WORKDIR ?? join(homedir(), '.cache', 'writ-peer-cerbos')]) {
    const bin = join(base, 'node_modules', '@cerbos', 'cerbos-linux-x64', 'cerbos-linux-x64');
    if (existsSync(bin)) return { bin, base };
  }
  return undefined;
}

async function runCerbosPeerSingle() {
  log('cerbos single: ../shared/peers/cerbos/run.sh cerbos');
  const text = await new Promise((resolve, reject) => {
    const child = spawn('bash', [join(PEER, 'run.sh'), 'cerbos'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, CONNECTIONS: CONNS.join(' '), DURATION_S: String(DURATION), WARMUP_S: String(WARMUP), REPEAT: '1' },
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`cerbos run.sh exited ${code}`))));
  });
  for (const line of text.split('\n').filter(Boolean)) {
    const j = JSON.parse(line);
    if (j.kind !== 'load') continue;
    record('cerbos', `single, ${j.config}`, j.connections, {
      req_per_s: j.req_per_s_mean,
      evaluations_per_s: j.req_per_s_mean,
      p50_ms: j.latency_ms_p50,
      p99_ms: j.latency_ms_p99,
      non2xx: j.non2xx,
      errors: j.errors,
      timeouts: j.timeouts,
      server_cpu_cores: j.server_cpu_cores,
      server_cpu_ms_per_evaluation: j.req_per_server_cpu_s ? 1000 / j.req_per_server_cpu_s : null,
      wall_s: j.measured_s,
    });
  }
}

async function runCerbosBatched() {
  const found = cerbosBinary();
  if (!found) {
    log('cerbos batched: no Cerbos binary installed by the peer; skipped');
    return;
  }
  const tmp = mkdtempSync(join(tmpdir(), 'writ-bench-cerbos-'));
  const child = spawn(found.bin, ['server', `--config=${join(found.base, 'config', 'cerbos-audit-on.yaml')}`, '--debug-listen-addr=127.0.0.1:3594'], {
    cwd: found.base,
    stdio: ['ignore', 'ignore', 'ignore'],
    env: { ...process.env, POLICY_DIR: join(found.base, 'policies'), BENCH_TMP: tmp, CERBOS_NO_TELEMETRY: '1' },
  });
  try {
    await waitHealthy('http://127.0.0.1:3592/_cerbos/health', child);
    const allow = JSON.parse(readFileSync(join(found.base, 'requests', 'allow.json'), 'utf8'));
    const one = allow.resources[0];
    const body = JSON.stringify({
      ...allow,
      resources: Array.from({ length: BATCH }, (_, i) => ({
        ...one,
        resource: { ...one.resource, id: `emp-${i}`, attr: { ...one.resource.attr, legal_hold: i % 2 === 1 } },
      })),
    });
    const url = 'http://127.0.0.1:3592/api/check/resources';
    const headers = { 'content-type': 'application/json' };
    const check = await (await fetch(url, { method: 'POST', headers, body })).json();
    const effects = check.results.map((r) => r.actions['idp/disable_sign_in']);
    if (effects.length !== BATCH || effects[0] !== 'EFFECT_ALLOW' || effects[1] !== 'EFFECT_DENY')
      throw new Error(`unexpected cerbos answer ${JSON.stringify(effects)}`);
    for (const c of CONNS) {
      const mode = `batched (${BATCH} resources per request), audit-on`;
      log(`cerbos ${mode}, ${c} connections`);
      if (WARMUP > 0) await load({ url, headers, body, connections: c, duration: WARMUP, pid: child.pid, perRequest: BATCH });
      record('cerbos', mode, c, await load({ url, headers, body, connections: c, duration: DURATION, pid: child.pid, perRequest: BATCH }));
    }
  } finally {
    await stop(child);
    rmSync(tmp, { recursive: true, force: true });
  }
}

const load0 = loadavg()[0];
await runWrit();
if (!a['no-cerbos'] && existsSync(join(PEER, 'run.sh'))) {
  try {
    await runCerbosPeerSingle();
    await runCerbosBatched();
  } catch (e) {
    log(`cerbos peer failed: ${e.message}`);
  }
}

if (!a['no-write']) {
  const rows = results.map(
    (r) =>
      `| ${r.target} | ${r.mode} | ${r.connections} | ${Math.round(r.evaluations_per_s)} | ${Math.round(r.req_per_s)} | ${r.p50_ms?.toFixed?.(2) ?? '–'} | ${r.p99_ms?.toFixed?.(2) ?? '–'} | ${r.server_cpu_cores?.toFixed?.(2) ?? '–'} | ${r.server_cpu_ms_per_evaluation?.toFixed?.(3) ?? '–'} |`,
  );
  const md = `# AuthZEN evaluations/s (bench/authzen.mjs)

Run ${startedAt} on ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, writ on Node ${execFileSync(a['node-bin'], ['--version'], { encoding: 'utf8' }).trim()} (bench on ${process.version}), load average at start ${load0.toFixed(2)}
(figures are from one run; check the load average). ${DURATION} s measured after ${WARMUP} s warm-up, one run per row.

writ: \`writ serve\` on \`examples/authzen-todo\` (schema, 7 policies), default config (durable ledger, \`durability: sync\`,
default evaluator threads); Morty asks \`can_update_todo\` with \`resource.properties.ownerID\`: the same question every time (single,
batched: the decision memo answers it after its second sight), or a new resource id every time (distinct: Cedar every time). Every evaluation is one ledger record,
durable before the answer; a batch is one group commit. Cerbos 0.55: single = the peer's own \`run.sh cerbos\` load (one resource per
CheckResources request); batched = one CheckResources request with ${BATCH} resources, audit on, loaded here with the same autocannon settings.

| target | mode | connections | evaluations/s | requests/s | p50 ms | p99 ms | server cores | server CPU ms per evaluation |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}

Reproduce: \`npm run build && node bench/authzen.mjs${
    a['node-bin'] === process.execPath
      ? ''
      : ` --node-bin /path/to/node${execFileSync(a['node-bin'], ['--version'], { encoding: 'utf8' })
          .trim()
          .replace(/^v(\d+).*/, '$1')}`
  }\` (\`--no-cerbos\` without the peer). Raw lines: \`bench/tmp/authzen-raw.jsonl\`.
`;
  mkdirSync(join(here, 'results'), { recursive: true });
  writeFileSync(join(here, 'results', 'authzen.md'), md);
  log('wrote bench/results/authzen.md');
}
