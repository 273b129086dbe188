#!/usr/bin/env node
// The decision memo in-process (issue 14): what one decision costs uncached, as a memo hit, and as a
// residual program (a new task_id, or a clock that moves, every call), and where the memo should live —
// on the event loop before the evaluator-thread hop, or behind it. Runs itself once per Node binary given.
//
//   npm run build && node bench/memo.mjs [--node-bins "PATH ..."] [--no-write]
// Writes bench/results/memo.md.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const { values: a } = parseArgs({
  options: {
    'node-bins': { type: 'string', default: process.execPath },
    'no-write': { type: 'boolean', default: false },
    child: { type: 'boolean', default: false },
  },
});
const ROUNDS = 3;

/** The bundled policies plus the bench's forbid that reads task_id (as bench/http.mjs), in a temp dir. */
function benchPolicies() {
  const dir = mkdtempSync(join(tmpdir(), 'writ-bench-memo-'));
  const src = join(root, 'policies');
  for (const f of readdirSync(src)) if (statSync(join(src, f)).isFile()) copyFileSync(join(src, f), join(dir, f));
  writeFileSync(
    join(dir, 'bench.cedar'),
    '@id("bench-blocked-task")\nforbid (principal, action == Action::"hris/read_employee", resource)\nwhen { context.task_id like "*-blocked" };\n',
  );
  return dir;
}

async function measure() {
  const { PolicyEngine } = await import(join(root, 'dist/src/policy/engine.js'));
  const { EvaluatorPool } = await import(join(root, 'dist/src/policy/evaluator-pool.js'));
  const { loadPolicyDir } = await import(join(root, 'dist/src/policy/load.js'));
  const { StaticEntitySource } = await import(join(root, 'dist/src/policy/entities.js'));
  const policyDir = benchPolicies();
  const bundle = loadPolicyDir(policyDir);
  rmSync(policyDir, { recursive: true, force: true });
  const entities = new StaticEntitySource(bundle.seedEntities);
  void entities.version; // the sidecar's entity store holds its version ready; so does this source after one read
  const envelope = {
    task_id: 'BENCH-1',
    purpose: 'scheduled_employee_offboarding',
    requester: { type: 'User', id: 'manager-1842' },
    actor: { type: 'Agent', id: 'offboarding-agent-prod' },
    subject: { type: 'Employee', id: '7721' },
    execute_after: '2026-08-24T17:00:00+07:00',
  };
  const input = (i, tool = 'read_employee', server = 'hris') => ({
    actor: { type: 'Agent', id: 'offboarding-agent-prod' },
    server,
    tool,
    subject: { type: 'Employee', id: '7721' },
    envelope: i === undefined ? envelope : { ...envelope, task_id: `BENCH-${i}` },
    phase: 'execute',
    binding: `writ-bind/1:sha256:${'0'.repeat(64)}`,
    cedarArguments: { employee_id: '7721' },
    now: new Date('2026-08-24T10:30:00Z'),
    approvals: [],
    entities,
  });
  // The story's own decision (idp/disable_sign_in, no approval yet: its policies read now and
  // execute_after) with the clock one second further on every call.
  const clocked = (i) => ({ ...input(i, 'disable_sign_in', 'idp'), now: new Date(Date.parse('2026-08-24T09:00:00Z') + i * 1000) });
  const mainThreadMs = () => {
    const s = readFileSync(`/proc/${process.pid}/task/${process.pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  };
  const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
  const perCall = (engine, make, n) => {
    for (let i = 0; i < 500; i++) engine.evaluate(make(i));
    // CPU time, not wall time: on a shared machine the process is descheduled at random.
    const c0 = process.cpuUsage();
    for (let i = 0; i < n; i++) engine.evaluate(make(i + 1000));
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / n;
  };
  const out = {};
  const rows = [
    ['repeated inputs, memo off', () => new PolicyEngine(bundle), () => input(), 1000],
    ['repeated inputs, memo hit', () => new PolicyEngine(bundle, { memoSize: 4096 }), () => input(), 10000],
    ['distinct task_id, memo off', () => new PolicyEngine(bundle), (i) => input(i), 1000],
    ['distinct task_id, memo on (a miss; the residual program answers)', () => new PolicyEngine(bundle, { memoSize: 4096 }), (i) => input(i), 1000],
    ['disable_sign_in with a moving clock, memo off', () => new PolicyEngine(bundle), clocked, 1000],
    ['disable_sign_in with a moving clock, memo on (residual program)', () => new PolicyEngine(bundle, { memoSize: 4096 }), clocked, 1000],
  ];
  for (const [name, make, inp, n] of rows) {
    const xs = [];
    for (let r = 0; r < ROUNDS; r++) xs.push(perCall(make(), inp, n));
    out[name] = median(xs);
  }
  // Where the memo lives: event-loop CPU per decision through the evaluator pool (1 thread), 50 at a time.
  for (const [name, memoSize] of [
    ['pool: memo hit on the event loop', 4096],
    ['pool: dispatched to the evaluator thread (memo off)', 0],
  ]) {
    const xs = [];
    for (let r = 0; r < ROUNDS; r++) {
      const engine = new PolicyEngine(bundle, { memoSize });
      const pool = new EvaluatorPool(1);
      pool.register(engine, bundle);
      const go = async (n) => {
        for (let k = 0; k < n / 50; k++) await Promise.all(Array.from({ length: 50 }, () => pool.evaluate(engine, input())));
      };
      await go(1000);
      const m0 = mainThreadMs();
      await go(5000);
      xs.push(((mainThreadMs() - m0) / 5000) * 1000);
      await pool.close();
    }
    out[name] = median(xs);
  }
  return out;
}

if (a.child) {
  process.stdout.write(JSON.stringify(await measure()));
  process.exit(0);
}

const bins = a['node-bins'].split(/[ ,]+/).filter(Boolean);
const load0 = loadavg()[0];
const results = [];
for (const bin of bins) {
  const version = execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim();
  process.stderr.write(`memo bench on Node ${version}\n`);
  results.push({ version, figures: JSON.parse(execFileSync(bin, [fileURLToPath(import.meta.url), '--child'], { encoding: 'utf8', maxBuffer: 1 << 20 })) });
}
const names = Object.keys(results[0].figures);
const fmt = (x) => x.toFixed(1);
const md = `## The decision memo in-process (issue 14)

Run ${new Date().toISOString()}; machine: ${cpus().length} cores (${cpus()[0]?.model}); load average at start ${load0.toFixed(1)}
(shared machine: other work ran alongside — compare rows, not runs).
Method: \`PolicyEngine.decide\` on the bundled policies plus bench/http.mjs's forbid that reads \`task_id\`, the story's \`hris/read_employee\` request (allow), median of
${ROUNDS} rounds of the per-call mean (µs of process CPU time: on a shared machine wall time mostly measures the others). Pool rows: event-loop CPU per decision (from /proc) through an
\`EvaluatorPool\` with 1 thread, 50 decisions in flight at a time. Each Node runs writ's engine as it ships (the
wasm-inlining flag only on Node 20).

| µs per decision | ${results.map((r) => `Node ${r.version}`).join(' | ')} |
|---|${results.map(() => '---:').join('|')}|
${names.map((n) => `| ${n} | ${results.map((r) => fmt(r.figures[n])).join(' | ')} |`).join('\n')}

A hit costs the key (the narrowed context, approvals, slice roots and entities_version, encoded with the native
JSON.stringify behind an exact-JSON check) and one Map lookup. A residual program (\`src/policy/residual.ts\`) costs
the key again without the context's strings and datetimes, and the evaluation of what Cedar's partial evaluation
left (here \`context.task_id like "*-blocked"\`, or \`context.now < context.execute_after\` and the approval
forbid), with no Cedar call. Kept on the event loop, a hit never crosses to
the evaluator thread; a memo behind the hop would still pay the dispatch row on the event loop for every call.

Reproduce: \`npm run build && node bench/memo.mjs --node-bins "$(which node) /path/to/node24"\`.
`;
if (!a['no-write']) writeFileSync(join(here, 'results', 'memo.md'), md);
process.stdout.write(md);
