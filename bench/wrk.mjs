// A second load generator for bench/http.mjs (`--loadgen wrk`): wrk 4.1 (Debian package `wrk`, a C
// program driven by LuaJIT), for the question "how much of the machine does the load generator take?".
// autocannon, the peer's own load generator, runs JavaScript in the bench process and costs ≈ 0.1 ms of
// CPU per request on these 2 cores — a quarter of what writ itself spends per answer — so on a 2-core
// box it takes cores the server could use. wrk sends the same bodies (the execution id and, for the
// distinct workload, the task id varied per request by a Lua `request()` function) for a fraction of
// that. It is not the headline: the peer's published figures are autocannon's.
//
// Latency percentiles are wrk's own (its HdrHistogram of every response, in µs); a non-2xx/3xx answer is
// counted by wrk as a status error and excluded from req/s.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { machineBusySeconds, procCpuSeconds, threadCpuSeconds } from './proc.mjs';

export function wrkAvailable() {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (e) {
    // wrk prints its usage and exits 1 on --version; a missing binary is ENOENT.
    return e.code !== 'ENOENT';
  }
}

const luaString = (s) => `[==[${s}]==]`;

/**
 * The Lua script: `template` is a body with `%s` holes, filled per request by `holes(i)` — a Lua
 * expression list over the request counter `i` and the run's `prefix` (e.g. `prefix .. "-" .. i`).
 * `done()` prints one JSON line with the summary and percentiles (µs) on stdout.
 */
function script({ path, headers, template, holes, prefix }) {
  const headerLines = Object.entries(headers)
    .map(([k, v]) => `wrk.headers[ ${luaString(k)} ] = ${luaString(v)}`)
    .join('\n');
  return `
wrk.method = "POST"
${headerLines}
local template = ${luaString(template)}
local prefix = ${luaString(prefix)}
local path = ${luaString(path)}
local i = 0
request = function()
  i = i + 1
  return wrk.format(nil, path, nil, ${holes ? `string.format(template, ${holes})` : 'template'})
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50_us":%d,"p99_us":%d,"mean_us":%f}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.mean))
end
`;
}

function runWrk({ url, connections, duration, lua }) {
  const dir = mkdtempSync(join(tmpdir(), 'writ-bench-wrk-'));
  const file = join(dir, 'load.lua');
  writeFileSync(file, lua);
  // One wrk thread drives every connection (it is event-driven); the shell reports wrk's CPU time
  // afterwards from its own cutime/cstime (a waited-for child's CPU), which Node cannot read.
  const cmd = `wrk -t1 -c${connections} -d${duration}s --timeout 10s -s '${file}' '${url}'; rc=$?; cat /proc/$$/stat >&2; exit $rc`;
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', cmd], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '',
      err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => {
      rmSync(dir, { recursive: true, force: true });
      if (code !== 0) return reject(new Error(`wrk exited ${code}: ${err}${out}`));
      const summary = out
        .split('\n')
        .map((l) => l.trim())
        .find((l) => l.startsWith('{"requests"'));
      const statLine = err.split('\n').find((l) => / \(sh\) /.test(l) || /^\d+ \(/.test(l));
      if (!summary || !statLine) return reject(new Error(`wrk gave no summary: ${out}\n${err}`));
      const f = statLine.slice(statLine.lastIndexOf(')') + 2).split(' ');
      resolve({ summary: JSON.parse(summary), cpuSeconds: (Number(f[13]) + Number(f[14])) / 100 });
    });
  });
}

/**
 * One wrk run against `url`, measured like bench/http.mjs's autocannon runs (server CPU and threads from
 * /proc, the machine's busy cores), returning the same fields.
 */
export async function wrkLoad({ url, headers, template, holes, prefix, connections, duration, pid }) {
  const u = new URL(url);
  const lua = script({ path: u.pathname, headers, template, holes, prefix });
  const cpu0 = pid ? procCpuSeconds(pid) : null;
  const threads0 = pid ? threadCpuSeconds(pid) : {};
  const machine0 = machineBusySeconds();
  const t0 = process.hrtime.bigint();
  const { summary: s, cpuSeconds } = await runWrk({ url, connections, duration, lua });
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const measured = s.duration_us / 1e6;
  const cpu1 = pid ? procCpuSeconds(pid) : null;
  const threads1 = pid ? threadCpuSeconds(pid) : {};
  const machine1 = machineBusySeconds();
  const threadCores = {};
  for (const [name, s1] of Object.entries(threads1)) {
    const d = (s1 - (threads0[name] ?? 0)) / wall;
    if (d > 0.005) threadCores[name] = Math.round(d * 1000) / 1000;
  }
  const n2xx = s.requests - s.status;
  return {
    req_per_s: n2xx / measured,
    req_per_s_autocannon_mean: NaN,
    p50_ms: s.p50_us / 1000,
    p99_ms: s.p99_us / 1000,
    mean_ms: s.mean_us / 1000,
    n2xx,
    non2xx: s.status,
    errors: s.connect + s.read + s.write,
    timeouts: s.timeout,
    // The process is started and stopped around the run, so its CPU is over `wall`, not `measured`.
    server_cpu_cores: cpu0 === null || cpu1 === null ? null : (cpu1 - cpu0) / wall,
    server_thread_cores: threadCores,
    loadgen_cpu_cores: cpuSeconds / measured,
    machine_busy_cores: machine0 === null || machine1 === null ? null : (machine1 - machine0) / wall,
    wall_s: measured,
    loadgen: 'wrk',
  };
}
