#!/usr/bin/env node
// Fair under hostile load (issue 49): the latency of a victim PEP's decisions while another PEP keeps
// H wide requests in flight, before and after — two builds of writ in the same run, interleaved per level.
//   - victim: autocannon, 50 connections, POST /v1/decisions (the offboarding story's propose, a fresh
//     execution id each request), its own `pep` token;
//   - hostile: H loops, each sending one decision at a time whose arguments are 96,000 small members
//     (~1 MiB, just under the body limit), with another `pep` token — what a prompt-injected agent's PEP
//     forwards as is.
// Reported: the victim's p50/p99/max latency and throughput, and the hostile answers by status.
//
//   node bench/fairness.mjs [--before /work/main] [--after .] [--duration 8] [--warmup 2] [--hostile "0 8 16 48"] [--no-write]
// Each --before/--after is a built writ checkout (its bin/writ is run). Writes bench/results/fairness.md.
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const { values: a } = parseArgs({
  options: {
    before: { type: 'string', default: '/work/main' },
    after: { type: 'string', default: root },
    duration: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '2' },
    hostile: { type: 'string', default: '0 8 16 48' },
    connections: { type: 'string', default: '50' },
    'no-write': { type: 'boolean', default: false },
  },
});
const DURATION = Number(a.duration);
const WARMUP = Number(a.warmup);
const LEVELS = a.hostile.split(/[ ,]+/).filter(Boolean).map(Number);
const CONNS = Number(a.connections);
const VICTIM = 'bench-fair-victim-0123456789';
const HOSTILE = 'bench-fair-hostile-0123456789';
const log = (s) => process.stderr.write(`${s}\n`);
const startedAt = new Date().toISOString();
const load = loadavg()[0].toFixed(1);

const envelope = (actorId, task) => ({
  task_id: task,
  purpose: 'scheduled_employee_offboarding',
  requester: { type: 'User', id: 'manager-1842' },
  actor: { type: 'Agent', id: actorId },
  subject: { type: 'Employee', id: '7721' },
  evidence_refs: [],
  supersedes: null,
});
const victimBody = (id) =>
  JSON.stringify({
    execution_id: id,
    phase: 'propose',
    envelope: envelope('victim-agent', 'V-1'),
    action: { server: 'idp', tool: 'disable_sign_in', arguments: { employee_id: '7721' } },
  });
const wideArguments = {};
for (let i = 0; i < 96_000; i++) wideArguments[i.toString(36)] = 0;
const wideArgsText = JSON.stringify(wideArguments);
const hostileBody = (id) =>
  `{"execution_id":"${id}","phase":"propose","envelope":${JSON.stringify(envelope('hostile-agent', 'H-1'))},"action":{"server":"idp","tool":"disable_sign_in","arguments":${wideArgsText}}}`;

async function start(checkout) {
  const dir = mkdtempSync(join(tmpdir(), 'writ-bench-fair-'));
  const config = {
    listen: '127.0.0.1:0',
    policy_dir: join(checkout, 'policies'),
    data_dir: join(dir, 'data'),
    tokens: [
      { token: VICTIM, role: 'pep', actor: { type: 'Agent', id: 'victim-agent' } },
      { token: HOSTILE, role: 'pep', actor: { type: 'Agent', id: 'hostile-agent' } },
    ],
  };
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  const child = spawn(process.execPath, [join(checkout, 'bin', 'writ'), 'serve', '--config', join(dir, 'config.json')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise((resolveUrl, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolveUrl(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`writ serve exited ${code}`)));
  });
  child.stdout.resume();
  return {
    url,
    async stop() {
      // Killed, not stopped gracefully: a server still holding minutes of hostile work would finish it first.
      if (child.exitCode === null) child.kill('SIGKILL');
      await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** H loops of wide decisions until `until()` says stop; returns the answers by status. */
function hostileLoad(url, h, stopped, signal) {
  const statuses = {};
  let n = 0;
  const loop = async () => {
    while (!stopped()) {
      try {
        const r = await fetch(`${url}/v1/decisions`, {
          method: 'POST',
          signal,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${HOSTILE}` },
          body: hostileBody(`h-${n++}`),
        });
        await r.arrayBuffer();
        statuses[r.status] = (statuses[r.status] ?? 0) + 1;
        // A PEP told to come back later does (Retry-After), rather than at once.
        if (r.status === 429) await new Promise((res) => setTimeout(res, 1000 * Number(r.headers.get('retry-after') ?? 1)));
      } catch {
        if (!stopped()) statuses.error = (statuses.error ?? 0) + 1; // (requests cut at the end are not counted)
      }
    }
  };
  return { done: Promise.all(Array.from({ length: h }, loop)), statuses };
}

async function victim(url, seconds, tag) {
  let i = 0;
  const result = await autocannon({
    url: `${url}/v1/decisions`,
    connections: CONNS,
    duration: seconds,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${VICTIM}` },
    requests: [{ setupRequest: (req) => ({ ...req, body: victimBody(`${tag}-${i++}`) }) }],
  });
  return result;
}

const rows = [];
for (const h of LEVELS) {
  for (const [name, checkout] of [
    ['before', resolve(a.before)],
    ['after', resolve(a.after)],
  ]) {
    log(`${name}: ${h} hostile in flight, ${CONNS} victim connections, ${WARMUP}s warm-up + ${DURATION}s`);
    const server = await start(checkout);
    let stop = false;
    try {
      await victim(server.url, WARMUP, `w${h}`);
      const cut = new AbortController();
      const hostile = hostileLoad(server.url, h, () => stop, cut.signal);
      const r = await victim(server.url, DURATION, `m${h}`);
      stop = true;
      cut.abort();
      await hostile.done;
      rows.push({
        h,
        name,
        p50: r.latency.p50,
        p99: r.latency.p99,
        max: r.latency.max,
        answered: r.requests.total,
        rps: r.requests.average,
        non2xx: r.non2xx,
        errors: r.errors + r.timeouts,
        hostile: hostile.statuses,
      });
      log(JSON.stringify(rows.at(-1)));
    } finally {
      stop = true;
      await server.stop();
    }
  }
}

const fmt = (s) =>
  Object.entries(s)
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ') || '—';
const table = [
  '| hostile in flight | build | victim p50 ms | victim p99 ms | victim max ms | victim decisions answered (/s) | victim non-2xx or timed out | hostile answers by status |',
  '| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |',
  ...rows.map(
    (r) => `| ${r.h} | ${r.name} | ${r.p50} | ${r.p99} | ${r.max} | ${r.answered} (${r.rps.toFixed(0)}) | ${r.non2xx + r.errors} | ${fmt(r.hostile)} |`,
  ),
].join('\n');
const md = `## Fair under hostile load (issue 49)

Run ${startedAt}; machine: ${cpus().length} cores (${cpus()[0]?.model.trim()}), Node ${process.version}; load average at start ${load}
(shared machine: other work ran alongside — compare rows of one level, not runs).
Method: \`writ serve\` on the bundled policies with its defaults (durable ledger, HTTP fronts). The victim is autocannon,
${CONNS} connections, POST /v1/decisions with its own pep token (a fresh execution id per request), ${DURATION} s after ${WARMUP} s of
warm-up; meanwhile H loops of another pep token each keep one decision in flight whose arguments are 96,000 small
members (~1 MiB). **before** = ${a.before === '/work/main' ? 'main' : a.before}, **after** = this branch (admission limits, callers' shares, evaluation deadline).
Latencies are of the victim's answered decisions (autocannon; a request still unanswered after 10 s counts as timed out).
Reproduce: \`npm run build && node bench/fairness.mjs --before <main checkout, built> --after .\`

${table}

A victim row of 0 answered: not one of its decisions was answered within the window; hostile answers "—": none of
them was answered within it either.
`;
if (!a['no-write']) writeFileSync(join(here, 'results', 'fairness.md'), md);
process.stdout.write(md);
