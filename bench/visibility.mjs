// Tool visibility (docs/protocol.md §15): the cost of judging a tools/list of 100 tools against 1,000
// policies — cold (a new engine, every answer a Cedar partial evaluation) and cached (the same caller
// again) — next to a full decision of one call of each tool on the same engine, in the same run.
//
// Usage: npm run build && node bench/visibility.mjs   → writes bench/results/visibility.md
import { mkdtempSync, cpSync, writeFileSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir, cpus, loadavg } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadPolicyDir } from '../dist/src/policy/load.js';
import { PolicyEngine } from '../dist/src/policy/engine.js';
import { StaticEntitySource } from '../dist/src/policy/entities.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const BUNDLED = join(HERE, '..', 'policies');
const TOOLS = 100;
const POLICIES = 1000;
const ROUNDS = 5;

/** The bundled policies plus filler up to POLICIES, over TOOLS tools of one server (some forbidden outright). */
function policyDir() {
  const dir = mkdtempSync(join(tmpdir(), 'writ-bench-visibility-'));
  cpSync(BUNDLED, dir, { recursive: true });
  rmSync(join(dir, 'tests'), { recursive: true, force: true });
  const lines = [];
  const bundled = loadPolicyDir(dir).ids.length;
  for (let i = 0; i < POLICIES - bundled; i++) {
    // Permits over 90 of the tools; forbids for IT requesters and approval-lifted forbids spread over all.
    const tool = i % 10 === 3 || i % 10 === 7 ? `tool_${(i * 7) % TOOLS}` : `tool_${i % 90}`;
    if (i % 10 === 3) lines.push(`@id("f-${i}") forbid (principal, action == Action::"svc/${tool}", resource) when { context.requester in Role::"it" };`);
    else if (i % 10 === 7)
      lines.push(
        `@id("a-${i}") @requires_approval("Role::\\"hr\\"") forbid (principal, action == Action::"svc/${tool}", resource) unless { context has approver && context.approver in Role::"hr" };`,
      );
    else
      lines.push(
        `@id("p-${i}") permit (principal is Agent, action == Action::"svc/${tool}", resource is Employee) when { principal.trusted && context.arguments has n && context.arguments.n < ${i} };`,
      );
  }
  writeFileSync(join(dir, 'filler.cedar'), `${lines.join('\n')}\n`);
  return dir;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const dir = policyDir();
const bundle = loadPolicyDir(dir);
const entities = new StaticEntitySource(bundle.seedEntities);
const tools = Array.from({ length: TOOLS }, (_, i) => `tool_${i}`);
const ask = (engine, requester) => {
  let visible = 0;
  for (const tool of tools) {
    if (
      engine.mayBeCalled({
        actor: { type: 'Agent', id: 'offboarding-agent-prod' },
        requester: { type: 'User', id: requester },
        subject: { type: 'Employee', id: '7721' },
        server: 'svc',
        tool,
        entities,
      })
    )
      visible++;
  }
  return visible;
};
const cold = [];
const cached = [];
const decisions = [];
let visibleManager = 0;
let visibleIt = 0;
for (let r = 0; r < ROUNDS; r++) {
  const engine = new PolicyEngine(bundle);
  let t = performance.now();
  visibleManager = ask(engine, 'manager-1842');
  cold.push(performance.now() - t);
  t = performance.now();
  ask(engine, 'manager-1842');
  cached.push(performance.now() - t);
  visibleIt = ask(engine, 'it-3001');
  t = performance.now();
  for (const tool of tools) {
    engine.evaluate({
      actor: { type: 'Agent', id: 'offboarding-agent-prod' },
      server: 'svc',
      tool,
      subject: { type: 'Employee', id: '7721' },
      envelope: { task_id: 'T', purpose: 'p', requester: { type: 'User', id: 'manager-1842' } },
      phase: 'execute',
      binding: `writ-bind/1:sha256:${'0'.repeat(64)}`,
      cedarArguments: { n: 5 },
      now: new Date(),
      approvals: [],
      entities,
    });
  }
  decisions.push(performance.now() - t);
}
rmSync(dir, { recursive: true, force: true });
const f = (x) => x.toFixed(1);
const md = `## Tool visibility (tools/list filtering)

\`node bench/visibility.mjs\` (after \`npm run build\`), ${new Date().toISOString().slice(0, 16)}Z, ${cpus().length} cores, Node ${process.version}.
A tools/list of ${TOOLS} tools judged against ${POLICIES} policies (the bundled example plus filler: per tool, permits on an
argument, forbids for IT requesters, approval-lifted forbids), medians of ${ROUNDS} rounds, one fresh engine per round; load average ${loadavg()[0].toFixed(1)} at the end.

| what | ms for ${TOOLS} tools | per tool |
| --- | ---: | ---: |
| cold: every tool a Cedar partial evaluation (per context variant) | ${f(median(cold))} | ${(median(cold) / TOOLS).toFixed(2)} |
| cached: the same caller again (policy and entities versions unchanged) | ${f(median(cached))} | ${(median(cached) / TOOLS).toFixed(3)} |
| baseline: one full decision of one call of each tool, same engine | ${f(median(decisions))} | ${(median(decisions) / TOOLS).toFixed(2)} |

Visible for the manager's agent: ${visibleManager} of ${TOOLS}; for an IT requester: ${visibleIt} of ${TOOLS}.
A list costs one partial evaluation per tool (and per combination of the optional context members the
kept policies name) once per policy load and entities version; afterwards a lookup.
`;
mkdirSync(join(HERE, 'results'), { recursive: true });
writeFileSync(join(HERE, 'results', 'visibility.md'), md);
process.stdout.write(md);
