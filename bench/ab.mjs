#!/usr/bin/env node
// Interleaved A/B of two writ builds (issue 14, http-notes eleventh pass): `writ serve` of checkout A and
// of checkout B, alternately (A B, B A, …), each a fresh process and data dir, the bundled policies plus
// the bench policy of bench/http.mjs, under autocannon; prints req/s, p50/p99 and server CPU per answer
// per run, the medians, and B/A per pair. Not part of `npm run bench`: it compares builds, not products.
//
//   node bench/ab.mjs NODE_BIN WRIT_A WRIT_B PAIRS CONNECTIONS SECONDS [repeated|distinct|distinct-subjects]
// (the workloads of bench/http.mjs: distinct changes task_id per call, distinct-subjects the subject and
// arguments.employee_id too)
//   e.g. git worktree add /tmp/base HEAD~1 && (cd /tmp/base && npm ci)
//        node bench/ab.mjs "$(which node)" /tmp/base/bin/writ bin/writ 4 10 6
// AB_EXTRA_CONFIG='{"http_threads":0}' adds config members to both; AB_EXTRA_CONFIG_A / AB_EXTRA_CONFIG_B to
// one (to compare two settings of one build, give the same checkout twice); AB_ENV_A / AB_ENV_B (JSON) add
// environment variables to one server's process. Needs a quiet machine.
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir, setPriority } from 'node:os';
import { join } from 'node:path';
import { benchPolicyDir } from './bench-policies.mjs';
import { procCpuSeconds } from './proc.mjs';
const [bin, writA, writB, pairsS, connsS, durS, workload = 'repeated'] = process.argv.slice(2);
const actor = { type: 'Agent', id: 'offboarding-agent-prod' };
const env0 = {
  task_id: 'BENCH-1',
  purpose: 'scheduled_employee_offboarding',
  requester: { type: 'User', id: 'manager-1842' },
  actor,
  subject: { type: 'Employee', id: '7721' },
};
async function one(label, writBin, conns) {
  const extra = { ...JSON.parse(process.env.AB_EXTRA_CONFIG ?? '{}'), ...JSON.parse(process.env[`AB_EXTRA_CONFIG_${label}`] ?? '{}') };
  const dir = mkdtempSync(join(tmpdir(), 'ab-'));
  writeFileSync(
    join(dir, 'c.json'),
    JSON.stringify({
      listen: '127.0.0.1:8798',
      policy_dir: benchPolicyDir(dir),
      data_dir: join(dir, 'data'),
      tokens: [{ token: 'tok', role: 'pep', actor }],
      ...extra,
    }),
  );
  const child = spawn(bin, [writBin, 'serve', '--config', join(dir, 'c.json')], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, ...JSON.parse(process.env[`AB_ENV_${label}`] ?? '{}') },
  });
  for (;;) {
    try {
      if ((await fetch('http://127.0.0.1:8798/healthz')).ok) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  renice(child.pid, JSON.parse(process.env[`AB_RENICE_${label}`] ?? '{}'));
  let i = 0;
  const run = (d) =>
    autocannon({
      url: 'http://127.0.0.1:8798/v1/decisions',
      connections: conns,
      duration: d,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer tok' },
      requests: [
        {
          method: 'POST',
          setupRequest: (req) => {
            const n = i++;
            const employeeId = workload === 'distinct-subjects' ? `E-${n}` : '7721';
            const envelope = workload === 'repeated' ? env0 : { ...env0, task_id: `T-${n}`, subject: { type: 'Employee', id: employeeId } };
            return {
              ...req,
              body: JSON.stringify({
                execution_id: `r-${String(n).padStart(8, '0')}`,
                phase: 'execute',
                envelope,
                action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: employeeId } },
              }),
            };
          },
        },
      ],
    });
  await run(2);
  const c0 = procCpuSeconds(child.pid);
  const r = await run(Number(durS));
  const c1 = procCpuSeconds(child.pid);
  child.kill('SIGTERM');
  await new Promise((res) => child.on('exit', res));
  rmSync(dir, { recursive: true, force: true });
  const rps = r.requests.average;
  return { label, rps, p50: r.latency.p50, p99: r.latency.p99, cpuMs: ((c1 - c0) * 1000) / (rps * Number(durS)), non2xx: r.non2xx + r.errors };
}
// AB_RENICE_A / AB_RENICE_B (JSON {"<thread name or 'main'>": nice}): set the scheduling niceness of the
// server's threads by name once it answers (an experiment on how the commit loop shares the 2 cores).
function renice(pid, byName) {
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const name = Number(tid) === pid ? 'main' : readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    if (byName[name] !== undefined) setPriority(Number(tid), byName[name]);
  }
}
const res = { A: [], B: [] };
for (let p = 0; p < Number(pairsS); p++) {
  for (const [k, w] of p % 2
    ? [
        ['B', writB],
        ['A', writA],
      ]
    : [
        ['A', writA],
        ['B', writB],
      ]) {
    const m = await one(k, w, Number(connsS));
    res[k].push(m);
    console.log(`${k} ${Math.round(m.rps)} req/s p50 ${m.p50} p99 ${m.p99} cpu ${m.cpuMs.toFixed(3)} ms/ans non2xx ${m.non2xx}`);
  }
}
const med = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
for (const k of ['A', 'B'])
  console.log(
    `${k} median ${Math.round(med(res[k].map((m) => m.rps)))} req/s, p50 ${med(res[k].map((m) => m.p50))}, cpu ${med(res[k].map((m) => m.cpuMs)).toFixed(3)}`,
  );
console.log('B/A per pair', res.A.map((a, j) => (res.B[j].rps / a.rps).toFixed(2)).join(' '));
