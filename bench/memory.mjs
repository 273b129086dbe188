#!/usr/bin/env node
// Memory under a long run of decisions (issue 8): an in-process sidecar (`startSidecar`, the same
// wiring as `writ serve`: durable store, checkpointer, reload timer; no HTTP) answers decisions at a
// fixed concurrency, each a fresh execution (`execute` → allow → invoking, one durable record). RSS is
// sampled every SAMPLE decisions, split into anonymous memory (the JS heap, wasm, buffers: what a leak
// would grow) and file-backed pages (LMDB's memory map of the data file, which grows with the ledger
// by design and which the kernel can drop at will).
//
//   node --expose-gc bench/memory.mjs [--decisions 1000000] [--sample 100000] [--minutes 10] [--concurrency 50]
// Stops at whichever comes first, the decision count or the time budget. Writes bench/results/memory.md.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startSidecar } from '../dist/src/server/serve.js';
import { loadConfig } from '../dist/src/config/config.js';

const here = dirname(fileURLToPath(import.meta.url));
const { values: a } = parseArgs({
  options: {
    decisions: { type: 'string', default: '1000000' },
    sample: { type: 'string', default: '100000' },
    minutes: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '50' },
    'no-write': { type: 'boolean', default: false },
  },
});
const TOTAL = Number(a.decisions);
const SAMPLE = Number(a.sample);
const BUDGET_MS = Number(a.minutes) * 60_000;
const C = Number(a.concurrency);

function memory() {
  globalThis.gc?.();
  const status = readFileSync('/proc/self/status', 'utf8');
  const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  const m = process.memoryUsage();
  return { rss: kb('VmRSS') / 1024, anon: kb('RssAnon') / 1024, file: kb('RssFile') / 1024, heap: m.heapUsed / 2 ** 20, external: m.external / 2 ** 20 };
}

const dir = mkdtempSync(join(tmpdir(), 'writ-bench-memory-'));
const { config } = loadConfig({ dataDir: join(dir, 'data'), listen: '127.0.0.1:0', policyDir: join(here, '..', 'policies') });
const running = await startSidecar(config, { devTokens: false, log: () => undefined });
const actor = { type: 'Agent', id: 'offboarding-agent-prod' };
const envelope = {
  task_id: 'MEM-1',
  purpose: 'scheduled_employee_offboarding',
  requester: { type: 'User', id: 'manager-1842' },
  actor,
  subject: { type: 'Employee', id: '7721' },
};
const body = (id) =>
  JSON.stringify({ execution_id: id, phase: 'execute', envelope, action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } } });
const caller = { role: 'pep', actor };

const samples = [{ decisions: 0, seconds: 0, ...memory() }];
process.stderr.write(`start: ${JSON.stringify(samples[0])}\n`);
const t0 = performance.now();
let issued = 0;
let done = 0;
let nextSample = SAMPLE;
let sampling = false;
const overBudget = () => performance.now() - t0 > BUDGET_MS;
async function worker() {
  while (issued < TOTAL && !overBudget()) {
    const id = `m-${issued++}`;
    const r = await running.pdp.decisions.decide(caller, body(id));
    if (r.decision !== 'allow' || r.state !== 'invoking') throw new Error(`unexpected answer ${JSON.stringify(r)}`);
    done++;
    if (done >= nextSample && !sampling) {
      sampling = true;
      nextSample += SAMPLE;
      const s = { decisions: done, seconds: (performance.now() - t0) / 1000, ...memory() };
      samples.push(s);
      process.stderr.write(`${JSON.stringify(s)}\n`);
      sampling = false;
    }
  }
}
await Promise.all(Array.from({ length: C }, worker));
const end = { decisions: done, seconds: (performance.now() - t0) / 1000, ...memory() };
if (samples[samples.length - 1].decisions !== done) samples.push(end);
const ledger = running.pdp.core.store.size();
await running.close();
rmSync(dir, { recursive: true, force: true });

// Least-squares slope (MB per 100k decisions) over the samples after the first (warm-up) one.
function slope(key) {
  const pts = samples.filter((s) => s.decisions > 0);
  if (pts.length < 2) return NaN;
  const n = pts.length;
  const mx = pts.reduce((s, p) => s + p.decisions, 0) / n;
  const my = pts.reduce((s, p) => s + p[key], 0) / n;
  const num = pts.reduce((s, p) => s + (p.decisions - mx) * (p[key] - my), 0);
  const den = pts.reduce((s, p) => s + (p.decisions - mx) ** 2, 0);
  return (num / den) * 100_000;
}
const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '–');
const rows = samples.map(
  (s) => `| ${s.decisions.toLocaleString('en-US')} | ${f(s.seconds, 0)} | ${f(s.rss)} | ${f(s.anon)} | ${f(s.file)} | ${f(s.heap)} | ${f(s.external)} |`,
);
const md = `## Memory over a long run of decisions

Run ${new Date().toISOString()}; machine: ${cpus().length} cores (${cpus()[0]?.model}), Node ${process.version}.
In-process sidecar (\`startSidecar\`: durable store with \`durability: ${config.durability}\`, checkpointer, hot-reload timer; no HTTP),
${C} concurrent callers of \`DecisionService.decide\`, each call a fresh execution (\`execute\` → allow → \`invoking\`, one durable
decision record). ${done.toLocaleString('en-US')} decisions in ${f(end.seconds, 0)} s (${f(done / end.seconds, 0)}/s; the run stops at
${TOTAL.toLocaleString('en-US')} decisions or ${a.minutes} min); ledger at the end: ${ledger.toLocaleString('en-US')} records. Memory sampled after a
forced GC every ${SAMPLE.toLocaleString('en-US')} decisions. RSS = anonymous (JS heap, wasm memory, buffers: where a leak
would show) + file-backed (LMDB's read-only memory map of the data file: grows with the ledger by design,
reclaimable by the kernel, bounded by the map). Anonymous memory includes the sidecar's ${config.evaluator_threads} evaluator
thread(s) (\`evaluator_threads\`, the default on this machine): their JS heaps and cedar-wasm memory.

| decisions | s | RSS MB | anon MB | file-backed MB | JS heap used MB | external MB |
|---:|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}

Slope over the samples (least squares, MB per 100k decisions): RSS ${f(slope('rss'), 2)}, anonymous ${f(slope('anon'), 2)},
file-backed ${f(slope('file'), 2)}, JS heap ${f(slope('heap'), 2)}.

Reproduce: \`npm run build && node --expose-gc bench/memory.mjs\`${done < TOTAL ? ' (the run stopped at its time budget: raise `--minutes` to reach the full count)' : ''}.
`;
if (!a['no-write']) writeFileSync(join(here, 'results', 'memory.md'), md);
process.stdout.write(md);
