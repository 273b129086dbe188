#!/usr/bin/env node
// HTTP decision throughput and latency (issues 4 and 8): `writ serve` with its durable ledger
// (LMDB, `durability: flushed` = fsync'd before the answer) next to, in the same session and
// alternating per repetition,
//   - the bare Hono floor (bench/hono-floor.mjs: parse the JSON, answer), and
//   - Cerbos 0.55 with its audit log on (../shared/peers/cerbos/run.sh cerbos; its audit-off runs are
//     reported too).
// Every writ request is `execute` of hris/read_employee with a fresh execution_id (allow → invoking,
// one durable decision record per request). Latency percentiles come from every 2xx response time
// (autocannon's per-response hrtime, as the peer's helper does), not autocannon's 1 ms histogram.
//
//   node bench/http.mjs [--reps 5] [--duration 10] [--warmup 2] [--connections "10 50"]
//                       [--targets writ,hono,cerbos] [--cpu-prof DIR] [--no-write]
// Writes bench/results/http.md (unless --no-write) and the raw JSON lines to bench/tmp/http-raw.jsonl.
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const { values: a } = parseArgs({
  options: {
    reps: { type: 'string', default: '5' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '10 50' },
    targets: { type: 'string', default: 'writ,hono,cerbos' },
    'cpu-prof': { type: 'string' },
    // writ's evaluator_threads settings to run, the first being the headline row (the default config
    // on this machine: one thread per core beyond the first); 0 = Cedar on the event loop.
    'evaluator-threads': { type: 'string', default: '1 0' },
    'no-write': { type: 'boolean', default: false },
    // Re-render bench/results/http.md from bench/tmp/http-raw.jsonl (the last run) without measuring.
    'render-only': { type: 'boolean', default: false },
  },
});
const REPS = Number(a.reps);
const DURATION = Number(a.duration);
const WARMUP = Number(a.warmup);
const CONNS = a.connections.split(/[ ,]+/).filter(Boolean).map(Number);
const EVALUATOR_THREADS = a['evaluator-threads'].split(/[ ,]+/).filter(Boolean).map(Number);
const writConfigLabel = (threads) => `durable ledger (flushed), ${threads} evaluator thread${threads === 1 ? '' : 's'}`;
const WRIT_HEADLINE = writConfigLabel(EVALUATOR_THREADS[0]);
const TARGETS = a.targets.split(',');
const CERBOS_RUN = join(root, '..', 'shared', 'peers', 'cerbos', 'run.sh');
const WRIT_PORT = 8791;
const FLOOR_PORT = 8792;
const TOKEN = 'bench-pep-token-0123456789abcdef';
const clkTck = 100; // getconf CLK_TCK on Linux x86-64

mkdirSync(join(here, 'tmp'), { recursive: true });
const rawFile = join(here, 'tmp', 'http-raw.jsonl');
const RENDER_ONLY = a['render-only'];
const results = RENDER_ONLY ? readFileSync(rawFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
if (!RENDER_ONLY) writeFileSync(rawFile, '');
const log = (s) => process.stderr.write(s + '\n');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function procCpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / clkTck;
  } catch {
    return null;
  }
}
function pct(sorted, p) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] : NaN;
}
const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function waitHealthy(url, child) {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited (${child.exitCode}) before it was healthy`);
    try {
      const r = await fetch(url);
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

/** One autocannon run; `makeBody(i)` varies the body per request when given. */
async function load({ url, headers, body, makeBody, connections, duration, pid }) {
  let i = 0;
  const opts = { url, method: 'POST', headers, connections, duration };
  if (makeBody) opts.requests = [{ method: 'POST', setupRequest: (req) => ({ ...req, body: makeBody(i++) }) }];
  else opts.body = body;
  const lat = [];
  const cpu0 = procCpuSeconds(pid);
  const self0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const inst = autocannon(opts);
  inst.on('response', (_c, status, _b, rt) => {
    if (status >= 200 && status < 300) lat.push(rt);
  });
  const r = await inst;
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu1 = procCpuSeconds(pid);
  const self = process.cpuUsage(self0);
  lat.sort((x, y) => x - y);
  return {
    req_per_s: r['2xx'] / wall, // 2xx responses over the measured wall time
    req_per_s_autocannon_mean: r.requests.average,
    p50_ms: pct(lat, 50),
    p99_ms: pct(lat, 99),
    mean_ms: lat.reduce((s, x) => s + x, 0) / (lat.length || 1),
    n2xx: r['2xx'],
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    server_cpu_cores: cpu0 === null || cpu1 === null ? null : (cpu1 - cpu0) / wall,
    loadgen_cpu_cores: (self.user + self.system) / 1e6 / wall,
    wall_s: wall,
  };
}

function record(target, config, connections, rep, m) {
  const line = { target, config, connections, rep, started_at: startedAt, load_at_start: load0, ...m };
  results.push(line);
  appendFileSync(rawFile, JSON.stringify(line) + '\n');
  log(`  => ${target} ${config} c=${connections} rep ${rep}: ${m.req_per_s.toFixed(0)} req/s, p50 ${m.p50_ms.toFixed(2)} ms, p99 ${m.p99_ms.toFixed(2)} ms, server ${m.server_cpu_cores?.toFixed(2)} cores` +
    (m.non2xx || m.errors || m.timeouts ? `  FAILURES non2xx=${m.non2xx} errors=${m.errors} timeouts=${m.timeouts}` : ''));
}

// ── writ ──
const envelope = {
  task_id: 'BENCH-1', purpose: 'scheduled_employee_offboarding',
  requester: { type: 'User', id: 'manager-1842' },
  actor: { type: 'Agent', id: 'offboarding-agent-prod' },
  subject: { type: 'Employee', id: '7721' },
};
const writBody = (id) => JSON.stringify({
  execution_id: id, phase: 'execute', envelope,
  action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } },
});

async function runWrit(rep, evaluatorThreads) {
  const dir = mkdtempSync(join(tmpdir(), 'writ-bench-http-'));
  const config = {
    listen: `127.0.0.1:${WRIT_PORT}`, policy_dir: join(root, 'policies'), data_dir: join(dir, 'data'),
    tokens: [{ token: TOKEN, role: 'pep', actor: envelope.actor }],
    evaluator_threads: evaluatorThreads,
  };
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  const nodeArgs = a['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${a['cpu-prof']}`] : [];
  const child = spawn(process.execPath, [...nodeArgs, join(root, 'bin', 'writ'), 'serve', '--config', join(dir, 'config.json')], { stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    await waitHealthy(`http://127.0.0.1:${WRIT_PORT}/healthz`, child);
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` };
    const check = await fetch(`http://127.0.0.1:${WRIT_PORT}/v1/decisions`, { method: 'POST', headers, body: writBody(`check-${rep}`) });
    const answer = await check.json();
    if (check.status !== 200 || answer.decision !== 'allow' || answer.state !== 'invoking') throw new Error(`writ check failed: ${check.status} ${JSON.stringify(answer)}`);
    let run = 0;
    for (const c of CONNS) {
      const prefix = `b${rep}-${c}-${run++}`;
      if (WARMUP > 0) await load({ url: `http://127.0.0.1:${WRIT_PORT}/v1/decisions`, headers, makeBody: (i) => writBody(`${prefix}-w${i}`), connections: c, duration: WARMUP, pid: child.pid });
      const m = await load({ url: `http://127.0.0.1:${WRIT_PORT}/v1/decisions`, headers, makeBody: (i) => writBody(`${prefix}-${i}`), connections: c, duration: DURATION, pid: child.pid });
      record('writ', writConfigLabel(evaluatorThreads), c, rep, m);
    }
    const ready = await (await fetch(`http://127.0.0.1:${WRIT_PORT}/readyz`)).json();
    log(`  writ ledger after rep ${rep}: ${ready.ledger_size} records`);
  } finally {
    await stop(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runFloor(rep) {
  const child = spawn(process.execPath, [join(here, 'hono-floor.mjs'), String(FLOOR_PORT)], { stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    await waitHealthy(`http://127.0.0.1:${FLOOR_PORT}/healthz`, child);
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` };
    for (const c of CONNS) {
      const url = `http://127.0.0.1:${FLOOR_PORT}/v1/decisions`;
      if (WARMUP > 0) await load({ url, headers, makeBody: (i) => writBody(`w${i}`), connections: c, duration: WARMUP, pid: child.pid });
      record('hono floor', 'parse JSON, answer', c, rep, await load({ url, headers, makeBody: (i) => writBody(`f${i}`), connections: c, duration: DURATION, pid: child.pid }));
    }
  } finally {
    await stop(child);
  }
}

async function runCerbos(rep) {
  const out = await new Promise((resolve, reject) => {
    const child = spawn('bash', [CERBOS_RUN, 'cerbos'], {
      env: { ...process.env, CONNECTIONS: CONNS.join(' '), DURATION_S: String(DURATION), WARMUP_S: String(WARMUP), REPEAT: '1' },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let text = '';
    child.stdout.on('data', (d) => (text += d));
    child.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`cerbos run.sh exited ${code}`))));
  });
  for (const line of out.split('\n')) {
    if (!line.trim()) continue;
    const j = JSON.parse(line);
    if (j.kind !== 'load') continue;
    record(`cerbos`, j.config, j.connections, rep, {
      req_per_s: j.requests_2xx / j.measured_s, req_per_s_autocannon_mean: j.req_per_s_mean, p50_ms: j.latency_ms_p50, p99_ms: j.latency_ms_p99,
      mean_ms: j.latency_ms_mean, n2xx: j.requests_2xx, non2xx: j.non2xx, errors: j.errors, timeouts: j.timeouts,
      server_cpu_cores: j.server_cpu_cores, loadgen_cpu_cores: j.loadgen_cpu_cores, wall_s: j.measured_s,
    });
  }
}

const startedAt = RENDER_ONLY ? results[0]?.started_at ?? 'unknown' : new Date().toISOString();
const load0 = RENDER_ONLY ? results[0]?.load_at_start ?? NaN : loadavg()[0];
for (let rep = 1; rep <= (RENDER_ONLY ? 0 : REPS); rep++) {
  log(`rep ${rep}/${REPS}`);
  if (TARGETS.includes('writ')) for (const threads of EVALUATOR_THREADS) await runWrit(rep, threads);
  if (TARGETS.includes('hono')) await runFloor(rep);
  if (TARGETS.includes('cerbos')) await runCerbos(rep);
}

// ── table ──
const groups = new Map();
for (const r of results) {
  const k = `${r.target}|${r.config}|${r.connections}`;
  if (!groups.has(k)) groups.set(k, []);
  groups.get(k).push(r);
}
const med = (k, f) => (groups.has(k) ? median(groups.get(k).map((r) => r[f])) : NaN);
const fmt = (x, d = 0) => (Number.isFinite(x) ? x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }) : '–');
const rows = [];
const order = [...EVALUATOR_THREADS.map((n) => ['writ', writConfigLabel(n)]), ['cerbos', 'audit-on'], ['cerbos', 'audit-off'], ['hono floor', 'parse JSON, answer']];
for (const c of CONNS) {
  for (const [t, cfg] of order) {
    const k = `${t}|${cfg}|${c}`;
    if (!groups.has(k)) continue;
    const g = groups.get(k);
    rows.push(`| ${t} | ${cfg} | ${c} | ${fmt(med(k, 'req_per_s'))} (${fmt(Math.min(...g.map((r) => r.req_per_s)))}–${fmt(Math.max(...g.map((r) => r.req_per_s)))}) | ${fmt(med(k, 'p50_ms'), 2)} | ${fmt(med(k, 'p99_ms'), 2)} | ${fmt(med(k, 'server_cpu_cores'), 2)} | ${fmt(median(g.map((r) => (1000 * r.server_cpu_cores) / r.req_per_s)), 3)} | ${g.length} |`);
  }
}
const ratios = CONNS.map((c) => {
  const w = `writ|${WRIT_HEADLINE}|${c}`, ce = `cerbos|audit-on|${c}`, h = `hono floor|parse JSON, answer|${c}`;
  return `| ${c} | ${fmt(med(w, 'req_per_s') / med(ce, 'req_per_s'), 2)}× | ${fmt(med(w, 'p99_ms'), 2)} vs ${fmt(med(ce, 'p99_ms'), 2)} | ${fmt(med(w, 'req_per_s') / med(h, 'req_per_s'), 2)}× |`;
});
// CPU per answer and cores kept busy, headline writ row vs Cerbos audit-on, at the largest connection count.
const cpuNote = (() => {
  const c = Math.max(...CONNS);
  const w = `writ|${WRIT_HEADLINE}|${c}`, ce = `cerbos|audit-on|${c}`;
  const perAnswer = (k) => (1000 * med(k, 'server_cpu_cores')) / med(k, 'req_per_s');
  return `At ${c} connections writ's server spent ${fmt(perAnswer(w), 3)} ms of CPU per answer and Cerbos ${fmt(perAnswer(ce), 3)} ms ` +
    `(${fmt(perAnswer(w) / perAnswer(ce), 2)}×); Cerbos kept ${fmt(med(ce, 'server_cpu_cores'), 2)} cores busy, writ ${fmt(med(w, 'server_cpu_cores'), 2)}: ` +
    `writ's answers wait on its group commit (one LMDB transaction + fsync per batch) rather than on CPU.`;
})();
const md = `## HTTP decisions: writ serve (durable ledger) vs Cerbos (audit on) vs a bare Hono endpoint

Run ${startedAt}; machine: ${cpus().length} cores (${cpus()[0]?.model}), Node ${process.version}, load average at start ${load0.toFixed(1)}.
All servers on 127.0.0.1; autocannon in the bench process (it shares the 2 cores with the server).
${REPS} repetitions, alternating writ → Hono floor → Cerbos in each; each measured run is ${DURATION} s after a ${WARMUP} s warm-up
at that connection count. Figures are medians over the repetitions (req/s range in brackets).
req/s = 2xx responses / measured wall time; p50/p99 from every 2xx response's own time (ms); server CPU from
/proc/PID/stat over the measured run (CPU ms / request is the cost of one answer, independent of how many cores the
server got while other work ran).

- **writ**: \`bin/writ serve --config\` on a fresh temp data dir per repetition (bundled \`policies/\`,
  default \`durability: flushed\`: each answer only after its group commit is fsync'd; checkpoints every
  1000 records). Every request: \`execute\` of \`hris/read_employee\` for \`Employee::"7721"\`, requester
  \`User::"manager-1842"\`, actor \`Agent::"offboarding-agent-prod"\`, a fresh \`execution_id\` → allow,
  \`invoking\`, one durable decision record. Rows per \`evaluator_threads\` (Cedar on worker threads beside the
  event loop; 0 = on the event loop); the ratios below use the first row (${WRIT_HEADLINE}).
- **Cerbos 0.55.0**: \`../shared/peers/cerbos/run.sh cerbos\` (its own scenario, audit \`local\` backend on
  BadgerDB; its audit-off configuration is shown for reference).
- **Hono floor**: \`bench/hono-floor.mjs\` (same Hono + @hono/node-server; parses the same body, answers a small JSON).

| target | config | connections | req/s (min–max) | p50 ms | p99 ms | server CPU cores | server CPU ms / request | runs |
|---|---|---:|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}

| connections | writ / Cerbos audit-on req/s (goal ≥ 2× at 50) | p99 ms writ vs Cerbos (goal: lower) | writ / Hono floor |
|---:|---:|---|---:|
${ratios.join('\n')}

${cpuNote}

Reproduce: \`npm run build && node bench/http.mjs\` (≈ ${Math.round((REPS * ((TARGETS.length + EVALUATOR_THREADS.length - 1) * CONNS.length * (DURATION + WARMUP) + 40)) / 60)} min; raw lines in \`bench/tmp/http-raw.jsonl\`).
`;
if (!a['no-write']) writeFileSync(join(here, 'results', 'http.md'), md);
process.stdout.write(md);
