#!/usr/bin/env node
// HTTP decision throughput and latency (issues 4, 8 and 14): `writ serve` with its durable ledger
// (LMDB, default `durability: sync` = fsync'd before the answer) next to, in the same session and
// alternating per repetition,
//   - the bare Hono floor (bench/hono-floor.mjs: parse the JSON, answer), and
//   - Cerbos 0.55 with its audit log on (the external, optional peer ../shared/peers/cerbos/run.sh
//     cerbos, run where it lies — nothing of it is part of this project; its audit-off runs are
//     reported too).
// Two writ workloads, both `execute` of hris/read_employee with a fresh execution_id per call
// (allow → invoking, one durable decision record per request):
//   - repeated: the same Cedar-visible inputs every time (an agent doing the same job again);
//   - distinct: the envelope's task_id differs on every call and a policy reads it (a `like` forbid
//     added to the bundled policies for the bench, never matching), so no two calls are the same to Cedar.
// (Not run unless named: repeated-uuid, the repeated workload with random UUIDv4 execution ids; and
// distinct-subjects, where the subject — an Employee the entity store does not hold — and the arguments'
// employee_id are new on every call as well as task_id: an agent working through many employees.)
// Latency percentiles come from every 2xx response time (autocannon's per-response hrtime, as the
// peer's helper does), not autocannon's 1 ms histogram. Server CPU is read from /proc (per thread too).
//
//   node bench/http.mjs [--reps 3] [--duration 10] [--warmup 2] [--connections "10 50"]
//                       [--targets writ,hono,cerbos] [--workloads "repeated distinct"]
//                       [--http-threads "default"] [--memo-sizes "4096"] [--node-bins "PATH ..."]
//                       [--cpu-prof DIR] [--no-write] [--render-only] [--checkouts "before=DIR after=DIR"]
// --node-bins runs writ under each Node binary given (default: this one), started directly (the Node 20
// wasm-inlining flag is applied by the engine itself on Node 20 only).
// Writes bench/results/http.md (unless --no-write) and the raw JSON lines to bench/tmp/http-raw.jsonl.
import autocannon from 'autocannon';
import { execFileSync, spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { randomUUID } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { machineBusySeconds, procCpuSeconds, threadCpuSeconds } from './proc.mjs';
import { wrkAvailable, wrkLoad } from './wrk.mjs';
import { benchPolicyDir } from './bench-policies.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const { values: a } = parseArgs({
  options: {
    reps: { type: 'string', default: '3' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '10 50' },
    targets: { type: 'string', default: 'writ,hono,cerbos' },
    workloads: { type: 'string', default: 'repeated distinct' },
    'cpu-prof': { type: 'string' },
    // Extra Node flags for writ (e.g. "--max-semi-space-size=16"), split on spaces.
    'node-args': { type: 'string', default: '' },
    // writ's http_threads settings to run (HTTP front threads, src/front/), the first being the headline
    // row; "default" leaves the setting out (one front per core where Node supports fronts, else none);
    // 0 = HTTP on the main thread with Cedar on the evaluator thread(s), as before fronts.
    'http-threads': { type: 'string', default: 'default' },
    // writ's evaluator_threads settings (Cedar beside the fronts, or beside the event loop without them).
    'evaluator-threads': { type: 'string', default: 'default' },
    // writ's durability setting (both fsync before answering): 'default' leaves it out (the product's
    // default, 'sync'), or 'sync' / 'flushed'.
    durability: { type: 'string', default: 'default' },
    // decision_memo_size settings to run (0 = no memo); the first is the headline.
    'memo-sizes': { type: 'string', default: '4096' },
    // Node binaries to run writ under; the first is the headline.
    'node-bins': { type: 'string', default: process.execPath },
    // Builds of writ to run, as LABEL=DIR (a checkout with its dist built); default: this checkout. Two of them
    // (e.g. before=/tmp/before after=.) compare builds in the same run, each bracketed by the same Cerbos runs.
    checkouts: { type: 'string', default: '' },
    'no-write': { type: 'boolean', default: false },
    // Re-render bench/results/http.md from bench/tmp/http-raw.jsonl (the last run) without measuring.
    'render-only': { type: 'boolean', default: false },
    // The load generator: autocannon (the peer's own, the headline) or wrk (bench/wrk.mjs: a C program,
    // for how much of the 2 cores the load generator itself takes). With wrk, Cerbos is started here
    // from the peer's files (its configs, policies and request), since run.sh drives only autocannon.
    loadgen: { type: 'string', default: 'autocannon' },
  },
});
const REPS = Number(a.reps);
const DURATION = Number(a.duration);
const WARMUP = Number(a.warmup);
const CONNS = a.connections.split(/[ ,]+/).filter(Boolean).map(Number);
const WORKLOADS = a.workloads.split(/[ ,]+/).filter(Boolean);
const settingList = (v) =>
  v
    .split(/[ ,]+/)
    .filter(Boolean)
    .map((x) => (x === 'default' ? x : Number(x)));
const HTTP_THREADS = settingList(a['http-threads']);
const EVALUATOR_THREADS = settingList(a['evaluator-threads']);
const MEMO_SIZES = a['memo-sizes'].split(/[ ,]+/).filter(Boolean).map(Number);
const NODE_BINS = a['node-bins'].split(/[ ,]+/).filter(Boolean);
const nodeVersionOf = (bin) => execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim();
const CHECKOUTS = a.checkouts
  .split(/[ ,]+/)
  .filter(Boolean)
  .map((x) => {
    const [label, dir] = x.split('=');
    if (!label || !dir) throw new Error(`--checkouts takes LABEL=DIR, not ${x}`);
    return { label, dir: resolve(dir) };
  });
const WRIT_CONFIGS = [];
for (const checkout of CHECKOUTS.length > 0 ? CHECKOUTS : [{ label: '', dir: root }])
  for (const bin of NODE_BINS) {
    const node = nodeVersionOf(bin);
    for (const fronts of HTTP_THREADS)
      for (const evaluators of EVALUATOR_THREADS) for (const memo of MEMO_SIZES) WRIT_CONFIGS.push({ checkout, bin, node, fronts, evaluators, memo });
  }
const writConfigLabel = ({ checkout, node, fronts, evaluators, memo }) =>
  `${checkout.label ? `${checkout.label}: ` : ''}Node ${node}, ${fronts === 'default' && evaluators === 'default' ? 'default threads' : `http_threads ${fronts}, evaluator_threads ${evaluators}`}, memo ${memo === 0 ? 'off' : memo}`;
const TARGETS = a.targets.split(',');
const CERBOS_RUN = join(root, '..', 'shared', 'peers', 'cerbos', 'run.sh');
const WRIT_PORT = 8791;
const FLOOR_PORT = 8792;
const TOKEN = 'bench-pep-token-0123456789abcdef';
const LOADGEN = a.loadgen;
if (!['autocannon', 'wrk'].includes(LOADGEN)) throw new Error(`--loadgen is autocannon or wrk, not ${LOADGEN}`);
if (LOADGEN === 'wrk' && !wrkAvailable()) throw new Error('--loadgen wrk needs wrk on the PATH (Debian: apt-get install -y wrk)');

mkdirSync(join(here, 'tmp'), { recursive: true });
const rawFile = join(here, 'tmp', a.loadgen === 'wrk' ? 'http-wrk-raw.jsonl' : 'http-raw.jsonl');
const RENDER_ONLY = a['render-only'];
const results = RENDER_ONLY
  ? readFileSync(rawFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
  : [];
if (!RENDER_ONLY) writeFileSync(rawFile, '');
const log = (s) => process.stderr.write(`${s}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

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
  const threads0 = threadCpuSeconds(pid);
  const self0 = process.cpuUsage();
  const machine0 = machineBusySeconds();
  const t0 = process.hrtime.bigint();
  const inst = autocannon(opts);
  inst.on('response', (_c, status, _b, rt) => {
    if (status >= 200 && status < 300) lat.push(rt);
  });
  const r = await inst;
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu1 = procCpuSeconds(pid);
  const threads1 = threadCpuSeconds(pid);
  const self = process.cpuUsage(self0);
  const machine1 = machineBusySeconds();
  lat.sort((x, y) => x - y);
  const threadCores = {};
  for (const [name, s1] of Object.entries(threads1)) {
    const d = (s1 - (threads0[name] ?? 0)) / wall;
    if (d > 0.005) threadCores[name] = Math.round(d * 1000) / 1000;
  }
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
    server_thread_cores: threadCores,
    loadgen_cpu_cores: (self.user + self.system) / 1e6 / wall,
    // Every process on the machine (server, load generator, anything else): what is left idle of the cores.
    machine_busy_cores: machine0 === null || machine1 === null ? null : (machine1 - machine0) / wall,
    wall_s: wall,
  };
}

function record(target, config, connections, rep, m, workload = '') {
  const line = { target, config, workload, connections, rep, started_at: startedAt, load_at_start: load0, loadavg_1m: loadavg()[0], ...m };
  results.push(line);
  appendFileSync(rawFile, `${JSON.stringify(line)}\n`);
  log(
    `  => ${target} ${config} ${workload} c=${connections} rep ${rep}: ${m.req_per_s.toFixed(0)} req/s, p50 ${m.p50_ms.toFixed(2)} ms, p99 ${m.p99_ms.toFixed(2)} ms, server ${m.server_cpu_cores?.toFixed(2)} cores, ${((1000 * m.server_cpu_cores) / m.req_per_s).toFixed(3)} ms CPU/answer` +
      (m.non2xx || m.errors || m.timeouts ? `  FAILURES non2xx=${m.non2xx} errors=${m.errors} timeouts=${m.timeouts}` : ''),
  );
}

// ── writ ──
const envelope = {
  task_id: 'BENCH-1',
  purpose: 'scheduled_employee_offboarding',
  requester: { type: 'User', id: 'manager-1842' },
  actor: { type: 'Agent', id: 'offboarding-agent-prod' },
  subject: { type: 'Employee', id: '7721' },
};
const writBody = (id, taskId = envelope.task_id, employeeId = envelope.subject.id) =>
  JSON.stringify({
    execution_id: id,
    phase: 'execute',
    envelope:
      taskId === envelope.task_id && employeeId === envelope.subject.id
        ? envelope
        : { ...envelope, task_id: taskId, subject: { type: 'Employee', id: employeeId } },
    action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: employeeId } },
  });
/**
 * The body of call i of a workload: repeated keeps every Cedar-visible input, distinct changes task_id.
 * Execution ids are `<prefix>-<i>` (consecutive calls sort next to each other, as time-ordered ids do),
 * except in repeated-uuid: random UUIDv4 ids, as many agent runtimes mint them — each lands at a random
 * place in the store's execution-keyed B-trees (not a headline workload; see http-notes, eighth pass).
 */
const bodyFor = (workload, prefix) =>
  workload === 'distinct'
    ? (i) => writBody(`${prefix}-${i}`, `BENCH-${prefix}-${i}`)
    : workload === 'distinct-subjects'
      ? (i) => writBody(`${prefix}-${i}`, `BENCH-${prefix}-${i}`, `E-${prefix}-${i}`)
      : workload === 'repeated-uuid'
        ? () => writBody(randomUUID())
        : (i) => writBody(`${prefix}-${i}`);

/** The same bodies for wrk: a template with `%s` holes and the Lua expressions that fill them (bench/wrk.mjs). */
const wrkBodyFor = (workload) => {
  const id = 'prefix .. "-" .. i';
  if (workload === 'distinct') return { template: writBody('%s', 'BENCH-%s'), holes: `${id}, ${id}` };
  if (workload === 'repeated') return { template: writBody('%s'), holes: id };
  throw new Error(`--loadgen wrk runs the repeated and distinct workloads, not ${workload}`);
};

async function runWrit(rep, cfg) {
  const dir = mkdtempSync(join(tmpdir(), 'writ-bench-http-'));
  const config = {
    listen: `127.0.0.1:${WRIT_PORT}`,
    policy_dir: benchPolicyDir(dir),
    data_dir: join(dir, 'data'),
    tokens: [{ token: TOKEN, role: 'pep', actor: envelope.actor }],
    ...(cfg.fronts === 'default' ? {} : { http_threads: cfg.fronts }),
    ...(cfg.evaluators === 'default' ? {} : { evaluator_threads: cfg.evaluators }),
    ...(a.durability === 'default' ? {} : { durability: a.durability }),
    decision_memo_size: cfg.memo,
  };
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  const nodeArgs = [...(a['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${a['cpu-prof']}`] : []), ...a['node-args'].split(' ').filter(Boolean)];
  const child = spawn(cfg.bin, [...nodeArgs, join(cfg.checkout.dir, 'bin', 'writ'), 'serve', '--config', join(dir, 'config.json')], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    await waitHealthy(`http://127.0.0.1:${WRIT_PORT}/healthz`, child);
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` };
    for (const [i, task] of [
      [0, envelope.task_id],
      [1, 'BENCH-check-2'],
    ]) {
      const check = await fetch(`http://127.0.0.1:${WRIT_PORT}/v1/decisions`, { method: 'POST', headers, body: writBody(`check-${rep}-${i}`, task) });
      const answer = await check.json();
      if (check.status !== 200 || answer.decision !== 'allow' || answer.state !== 'invoking')
        throw new Error(`writ check failed: ${check.status} ${JSON.stringify(answer)}`);
    }
    const blocked = await fetch(`http://127.0.0.1:${WRIT_PORT}/v1/decisions`, { method: 'POST', headers, body: writBody(`check-${rep}-blocked`, 'T-blocked') });
    const denied = await blocked.json();
    if (denied.decision !== 'deny') throw new Error(`writ check failed: the bench policy did not deny: ${JSON.stringify(denied)}`);
    let run = 0;
    for (const c of CONNS) {
      for (const workload of WORKLOADS) {
        const prefix = `b${rep}-${c}-${run++}`;
        const url = `http://127.0.0.1:${WRIT_PORT}/v1/decisions`;
        const measure = (p, duration) =>
          LOADGEN === 'wrk'
            ? wrkLoad({ url, headers, ...wrkBodyFor(workload), prefix: p, connections: c, duration, pid: child.pid })
            : load({ url, headers, makeBody: bodyFor(workload, p), connections: c, duration, pid: child.pid });
        if (WARMUP > 0) await measure(`${prefix}w`, WARMUP);
        const m = await measure(prefix, DURATION);
        record('writ', writConfigLabel(cfg), c, rep, m, workload);
      }
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
      const run = (p, duration) =>
        LOADGEN === 'wrk'
          ? wrkLoad({ url, headers, ...wrkBodyFor('repeated'), prefix: p, connections: c, duration, pid: child.pid })
          : load({ url, headers, makeBody: (i) => writBody(`${p}${i}`), connections: c, duration, pid: child.pid });
      if (WARMUP > 0) await run('w', WARMUP);
      record('hono floor', 'parse JSON, answer', c, rep, await run('f', DURATION));
    }
  } finally {
    await stop(child);
  }
}

/**
 * Cerbos under wrk: started here the way the peer's run.sh starts it (its binary from a writable copy of
 * the peer with its pinned npm packages, the same config files, policies, log level and request), each of
 * audit-off and audit-on, then loaded with wrk. The copy lives in the user's cache, never in the project.
 */
async function runCerbosWrk(rep) {
  const peer = dirname(CERBOS_RUN);
  const work = join(process.env.XDG_CACHE_HOME ?? join(process.env.HOME ?? tmpdir(), '.cache'), 'writ-bench-cerbos');
  const bin = join(work, 'node_modules', '@cerbos', 'cerbos-linux-x64', 'cerbos-linux-x64');
  try {
    statSync(bin);
  } catch {
    log(`copying the Cerbos peer to ${work} and installing its pinned packages (npm ci)`);
    mkdirSync(work, { recursive: true });
    execFileSync('cp', ['-r', `${peer}/.`, `${work}/`]);
    execFileSync('chmod', ['-R', 'u+w', work]);
    execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: work, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  const request = readFileSync(join(work, 'requests', 'allow.json'), 'utf8');
  for (const cfg of ['audit-off', 'audit-on']) {
    const tmp = mkdtempSync(join(tmpdir(), 'writ-bench-cerbos-'));
    const child = spawn(bin, ['server', `--config=config/cerbos-${cfg}.yaml`, '--log-level=info', '--debug-listen-addr=127.0.0.1:3594'], {
      cwd: work,
      env: { ...process.env, POLICY_DIR: join(work, 'policies'), BENCH_TMP: tmp, CERBOS_NO_TELEMETRY: '1' },
      stdio: ['ignore', 'ignore', 'ignore'],
    });
    try {
      await waitHealthy('http://127.0.0.1:3592/_cerbos/health', child);
      const url = 'http://127.0.0.1:3592/api/check/resources';
      const check = await (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: request })).json();
      if (check.results?.[0]?.actions?.['idp/disable_sign_in'] !== 'EFFECT_ALLOW') throw new Error(`cerbos check failed: ${JSON.stringify(check)}`);
      for (const c of CONNS) {
        const run = (duration) =>
          wrkLoad({ url, headers: { 'content-type': 'application/json' }, template: request, holes: '', prefix: '', connections: c, duration, pid: child.pid });
        if (WARMUP > 0) await run(WARMUP);
        record('cerbos', cfg, c, rep, await run(DURATION));
      }
    } finally {
      await stop(child);
      rmSync(tmp, { recursive: true, force: true });
    }
  }
}

async function runCerbos(rep) {
  if (LOADGEN === 'wrk') return runCerbosWrk(rep);
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
      req_per_s: j.requests_2xx / j.measured_s,
      req_per_s_autocannon_mean: j.req_per_s_mean,
      p50_ms: j.latency_ms_p50,
      p99_ms: j.latency_ms_p99,
      mean_ms: j.latency_ms_mean,
      n2xx: j.requests_2xx,
      non2xx: j.non2xx,
      errors: j.errors,
      timeouts: j.timeouts,
      server_cpu_cores: j.server_cpu_cores,
      loadgen_cpu_cores: j.loadgen_cpu_cores,
      wall_s: j.measured_s,
    });
  }
}

const startedAt = RENDER_ONLY ? (results[0]?.started_at ?? 'unknown') : new Date().toISOString();
const load0 = RENDER_ONLY ? (results[0]?.load_at_start ?? NaN) : loadavg()[0];
for (let rep = 1; rep <= (RENDER_ONLY ? 0 : REPS); rep++) {
  log(`rep ${rep}/${REPS}`);
  // Cerbos brackets each repetition (before and after writ): this machine's speed drifts by up to ~1.7×
  // over minutes (the Hono floor moved from 14k to 8k req/s between repetitions of one run), so each
  // writ run is compared with the Cerbos runs on either side of it, not with one taken minutes away.
  if (TARGETS.includes('cerbos')) await runCerbos(rep);
  if (TARGETS.includes('writ')) for (const cfg of WRIT_CONFIGS) await runWrit(rep, cfg);
  if (TARGETS.includes('hono')) await runFloor(rep);
  if (TARGETS.includes('cerbos')) await runCerbos(rep);
}

// ── table ──
const groups = new Map();
const keyOf = (t, cfg, w, c) => `${t}|${cfg}|${w}|${c}`;
for (const r of results) {
  const k = keyOf(r.target, r.config, r.workload ?? '', r.connections);
  if (!groups.has(k)) groups.set(k, []);
  groups.get(k).push(r);
}
const med = (k, f) => (groups.has(k) ? median(groups.get(k).map((r) => r[f])) : NaN);
const cpuPerAnswer = (k) => (groups.has(k) ? median(groups.get(k).map((r) => (1000 * r.server_cpu_cores) / r.req_per_s)) : NaN);
const fmt = (x, d = 0) => (Number.isFinite(x) ? x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }) : '–');
const writLabels = [...new Set(results.filter((r) => r.target === 'writ').map((r) => r.config))];
const workloadsSeen = RENDER_ONLY ? [...new Set(results.filter((r) => r.target === 'writ').map((r) => r.workload))] : WORKLOADS;
const connsSeen = RENDER_ONLY ? [...new Set(results.map((r) => r.connections))].sort((x, y) => x - y) : CONNS;
const threadsNote = (k) => {
  if (!groups.has(k)) return '';
  const names = new Set(groups.get(k).flatMap((r) => Object.keys(r.server_thread_cores ?? {})));
  const parts = [];
  for (const n of names) {
    const v = median(groups.get(k).map((r) => r.server_thread_cores?.[n] ?? 0));
    if (v >= 0.02) parts.push([n, v]);
  }
  parts.sort((x, y) => y[1] - x[1]);
  return parts.map(([n, v]) => `${n} ${fmt(v, 2)}`).join(', ');
};
const rows = [];
const order = [
  ...(RENDER_ONLY ? writLabels : WRIT_CONFIGS.map(writConfigLabel)).flatMap((cfg) => workloadsSeen.map((w) => ['writ', cfg, w])),
  ['cerbos', 'audit-on', ''],
  ['cerbos', 'audit-off', ''],
  ['hono floor', 'parse JSON, answer', ''],
];
for (const c of connsSeen) {
  for (const [t, cfg, w] of order) {
    const k = keyOf(t, cfg, w, c);
    if (!groups.has(k)) continue;
    const g = groups.get(k);
    rows.push(
      `| ${t} | ${cfg} | ${w || '–'} | ${c} | ${fmt(med(k, 'req_per_s'))} (${fmt(Math.min(...g.map((r) => r.req_per_s)))}–${fmt(Math.max(...g.map((r) => r.req_per_s)))}) | ${fmt(med(k, 'p50_ms'), 2)} | ${fmt(med(k, 'p99_ms'), 2)} | ${fmt(med(k, 'server_cpu_cores'), 2)} | ${fmt(cpuPerAnswer(k), 3)} | ${fmt(med(k, 'loadgen_cpu_cores'), 2)} | ${fmt(med(k, 'machine_busy_cores'), 2)} | ${threadsNote(k) || '–'} | ${g.length} |`,
    );
  }
}
const ratios = [];
for (const c of connsSeen) {
  const ce = keyOf('cerbos', 'audit-on', '', c),
    h = keyOf('hono floor', 'parse JSON, answer', '', c);
  for (const [, cfg, w] of order.filter(([t]) => t === 'writ')) {
    const wk = keyOf('writ', cfg, w, c);
    if (!groups.has(wk)) continue;
    const perRep = groups
      .get(wk)
      .map((r) => {
        const bracket = (groups.get(ce) ?? []).filter((x) => x.rep === r.rep);
        return bracket.length ? r.req_per_s / (bracket.reduce((sum, x) => sum + x.req_per_s, 0) / bracket.length) : NaN;
      })
      .filter(Number.isFinite);
    const spread = perRep.length ? ` (${fmt(Math.min(...perRep), 2)}–${fmt(Math.max(...perRep), 2)})` : '';
    ratios.push(
      `| ${c} | ${cfg} | ${w} | **${fmt(perRep.length ? median(perRep) : med(wk, 'req_per_s') / med(ce, 'req_per_s'), 2)}×**${spread} | ${fmt(med(wk, 'p99_ms'), 2)} vs ${fmt(med(ce, 'p99_ms'), 2)} | ${fmt(cpuPerAnswer(wk), 3)} vs ${fmt(cpuPerAnswer(ce), 3)} | ${fmt(med(wk, 'server_cpu_cores'), 2)} vs ${fmt(med(ce, 'server_cpu_cores'), 2)} | ${fmt(med(wk, 'req_per_s') / med(h, 'req_per_s'), 2)}× |`,
    );
  }
}
const loads = results.map((r) => r.loadavg_1m).filter(Number.isFinite);
const md = `## HTTP decisions${LOADGEN === 'wrk' ? ', wrk as the load generator' : ''}: writ serve (durable ledger) vs Cerbos (audit on) vs a bare Hono endpoint

Run ${startedAt}; machine: ${cpus().length} cores (${cpus()[0]?.model}), bench process on Node ${process.version}; load average (1 min) at start ${fmt(load0, 1)}${loads.length ? `, during the runs ${fmt(Math.min(...loads), 1)}–${fmt(Math.max(...loads), 1)}` : ''}.
All servers on 127.0.0.1; ${LOADGEN === 'wrk' ? "the load generator is wrk 4.1 (one thread, a C program; bench/wrk.mjs), for every target, Cerbos included (started by the bench from the peer's files)" : 'autocannon in the bench process'} (it shares the 2 cores with the server).
${RENDER_ONLY ? Math.max(...results.map((r) => r.rep)) : REPS} repetitions, each Cerbos → writ → Hono floor → Cerbos (Cerbos brackets writ: the machine's speed drifts over
minutes); each measured run is ${DURATION} s after a ${WARMUP} s warm-up at that connection count. Figures are medians
over the runs (req/s range in brackets); a writ / Cerbos ratio is taken per repetition against the mean of the two
Cerbos runs around it, and the headline is the median of those ratios.
req/s = 2xx responses / measured wall time; p50/p99 from every 2xx response's own time (ms); server CPU from
/proc/PID/stat over the measured run (CPU ms / answer is the cost of one answer, independent of how many cores the
server got while other work ran); per-thread cores from /proc/PID/task/*/stat.

- **writ**: \`bin/writ serve --config\` started directly with the Node binary named in the row, on a fresh temp
  data dir per repetition, ${a.durability === 'default' ? 'default `durability: sync`' : `\`durability: ${a.durability}\``} (each answer only after its group commit is fsync'd;
  checkpoints every 1000 records). Policies: the bundled \`policies/\` plus one forbid on \`hris/read_employee\`
  that reads \`context.task_id\` with \`like\` (never matching the bench's ids). Every request: \`execute\` of
  \`hris/read_employee\` for \`Employee::"7721"\`, requester \`User::"manager-1842"\`, actor
  \`Agent::"offboarding-agent-prod"\`, a fresh \`execution_id\` → allow, \`invoking\`, one durable decision record.
  **repeated**: the same Cedar-visible inputs on every call (an agent doing the same job again: the decision
  memo answers it). **distinct**: \`task_id\` differs on every call, so no call is ever answered from the memo; the forbid's \`like\` is evaluated on every call's own \`task_id\` — by the residual program Cedar's partial evaluation made for everything else (\`src/policy/residual.ts\`; with \`decision_memo_size: 0\` it is a full Cedar call).${WORKLOADS.includes('distinct-subjects') ? ' **distinct-subjects**: the subject (an `Employee` the entity store does not hold) and `arguments.employee_id` are new on every call too; no kept policy reads more of the resource than its type, so the residual program is shared by every such subject (`resourceKeyOf` in `src/policy/engine.ts`).' : ''}
- **Cerbos 0.55.0**: the Cerbos peer's \`run.sh cerbos\` (from the workspace folder beside the checkout) (an external, optional peer: its own scenario,
  one fixed request, audit \`local\` backend on BadgerDB; its audit-off configuration is shown for reference).
  Every writ workload is compared with the same Cerbos runs.
- **Hono floor**: \`bench/hono-floor.mjs\` (same Hono + @hono/node-server; parses the same body, answers a small JSON).

| target | config | workload | connections | req/s (min–max) | p50 ms | p99 ms | server CPU cores | server CPU ms / answer | load generator cores | machine busy cores | cores by thread | runs |
|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|
${rows.join('\n')}

Threads: "event loop" is the main thread: with HTTP front threads (\`http_threads\`, Node ≥ 22.12) it is the one
ledger writer (record sealing, the LMDB commit) and passes through what fronts do not decide; without them it also
does HTTP, admission and the memo. \`WorkerThread\` (Node 24) / \`node\` (Node 20) are worker threads: the HTTP
fronts (HTTP, admission, memo, the record's canonical text) and the evaluator threads (Cedar misses);
\`V8Worker\` = V8's GC and compiler helpers; \`libuv-worker\` / LMDB threads = file-system and commit work.
"load generator cores" is ${LOADGEN === 'wrk' ? 'wrk' : 'autocannon in the bench process'}; "machine busy cores" is every process on the machine
(of ${cpus().length}), so what it leaves idle is time no one could use.

| connections | writ configuration | workload | writ / Cerbos audit-on req/s: median of the per-repetition ratios (range) | p99 ms writ vs Cerbos | CPU ms / answer writ vs Cerbos | cores busy writ vs Cerbos | writ / Hono floor |
|---:|---|---|---:|---|---|---|---:|
${ratios.join('\n')}

Reproduce: \`npm run build && node bench/http.mjs${LOADGEN === 'wrk' ? ' --loadgen wrk' : ''}${CHECKOUTS.length > 0 ? ` --checkouts "${CHECKOUTS.map((c) => `${c.label}=DIR`).join(' ')}"` : ''}\` (Cerbos needs the external peer beside the checkout, \`peers/cerbos\` of the workspace's shared folder; without it
run \`--targets writ,hono\`; \`--node-bins "$(which node) /path/to/node24"\` adds rows per Node; raw lines in \`bench/tmp/${LOADGEN === 'wrk' ? 'http-wrk-raw' : 'http-raw'}.jsonl\`${LOADGEN === 'wrk' ? '; wrk: `apt-get install -y wrk`' : ''}).
`;
// wrk runs go beside the headline (autocannon, as the peer measures), never over it.
// A comparison of builds is not the headline: it gets a page of its own.
const resultsPage = CHECKOUTS.length > 0 ? 'http-checkouts.md' : LOADGEN === 'wrk' ? 'http-wrk.md' : 'http.md';
if (!a['no-write']) writeFileSync(join(here, 'results', resultsPage), md);
process.stdout.write(md);
