#!/usr/bin/env node
// Benchmark: `writ policy replay` decisions/s (docs/protocol.md §12, issue 17) against bare cedar-wasm on
// the same inputs, run once. Writes bench/results/replay.md.
//
// The export is generated once into bench/tmp/ as the sidecar would have written it: the bundled
// policies/ with their entities.json seeded as `entity` records, 20 employees more, an admin change of
// one employee's record every 500 records, and decision records for idp/disable_sign_in (propose and
// execute, with 0–2 approvals, before and after execute_after) and hris/read_employee by several
// requesters. Each recorded decision is the engine's own answer (memoized on everything that differs
// between records in this workload), so replay with the same policies must report 0 changed — checked.
//
// Timed, each once, as child processes (wall time, includes Node start-up):
//   - `writ policy replay --dir policies EXPORT --no-verify`;
//   - `writ policy replay --dir policies EXPORT` (verification pass included);
//   - the same at a quarter of the size, for its peak RSS (bounded memory: the two should be close).
// Baseline, in process: bare cedar-wasm `statefulIsAuthorized` on the whole preparsed policy set, one
// call per decision with the full §2 context and the request's entity slice, all inputs prebuilt in
// memory (so neither parsing the export nor rebuilding state is counted) for the first BASELINE_N
// decisions. writ makes 1 to 3 Cedar calls per decision (one per valid approval, the base evaluation,
// the approval_required re-check); the baseline makes one.
//
// Run: npx tsc -p . && node bench/replay.mjs [--records N]   (default 50000)
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, statSync, writeFileSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { recordLine, sealRecord, ZERO_HASH } from '../dist/src/ledger/record.js';
import { bindCall, envelopeDigest } from '../dist/src/binding/index.js';
import { loadPolicyDir } from '../dist/src/policy/load.js';
import { PolicyEngine, buildCedarContext, entityRootsOf } from '../dist/src/policy/engine.js';
import { entitiesVersionOf, entitySlice } from '../dist/src/policy/entities.js';
import { Replayer } from '../dist/src/replay/replayer.js';
import { uidKey } from '../dist/src/util/uid.js';
import { jcs } from '../dist/src/util/canonical.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const { values } = parseArgs({ options: { records: { type: 'string', default: '50000' } } });
const RECORDS = Number(values.records);
const BASELINE_N = 50_000;
const INTERLEAVED_N = 5_000;
const ROUNDS = 5;
const POLICIES = path.join(root, 'policies');
const tmpDir = path.join(here, 'tmp');
const LOAD_AT_START = os.loadavg()[0].toFixed(1);

const bundle = loadPolicyDir(POLICIES);
const engine = new PolicyEngine(bundle);
const ACTOR = { type: 'Agent', id: 'offboarding-agent-prod' };
const T0 = Date.parse('2026-08-24T08:00:00Z');
const NOWS = ['2026-08-24T09:30:00.000Z', '2026-08-24T09:59:59.000Z', '2026-08-24T10:00:01.000Z', '2026-08-24T11:15:00.000Z'];
const AFTERS = ['2026-08-24T17:00:00+07:00', '2026-08-24T09:00:00Z'];
const REQUESTERS = ['manager-1842', 'manager-2090', 'hr-5519', 'it-3001'];
const EMPLOYEES = Array.from({ length: 20 }, (_, i) => String(9000 + i));

/** A small deterministic PRNG (mulberry32), so the export is the same on every machine. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function generate(exportPath, records) {
  mkdirSync(tmpDir, { recursive: true });
  const rand = prng(17);
  const pick = (xs) => xs[Math.floor(rand() * xs.length)];
  const fd = openSync(`${exportPath}.part`, 'w');
  let prev = ZERO_HASH;
  let seq = 0;
  let pending = [];
  const emit = (kind, fields) => {
    const rec = sealRecord({ v: 1, seq, ts: new Date(T0 + seq).toISOString(), kind, prev, ...fields });
    pending.push(recordLine(rec));
    if (pending.length >= 4096) {
      writeSync(fd, `${pending.join('\n')}\n`);
      pending = [];
    }
    prev = rec.hash;
    seq++;
  };
  const store = new Map();
  const employee = (id, status, hold, manager) => ({
    uid: { type: 'Employee', id },
    attrs: { employee_id: id, status, legal_hold: hold, manager: { __entity: { type: 'User', id: manager } } },
    parents: [],
  });
  const source = {
    get: (k) => store.get(k),
    get version() {
      return version;
    },
  };
  let version;
  const applyEntities = (entities, src) => {
    for (const e of entities) store.set(uidKey(e.uid), e);
    version = entitiesVersionOf([...store.values()]);
    for (const e of entities) emit('entity', { uid: e.uid, source: src, entities_version: version, attrs: e.attrs, parents: e.parents });
  };
  emit('policy', { result: 'loaded', policy_version: bundle.policyVersion, files: bundle.files.map(([p]) => p), ids: bundle.ids });
  applyEntities([...bundle.seedEntities, ...EMPLOYEES.map((id, i) => employee(id, 'active', false, i % 2 ? 'manager-2090' : 'manager-1842'))], 'file');

  const memo = new Map();
  let n = 0;
  while (seq < records) {
    if (seq % 500 === 0) {
      applyEntities([employee(pick(EMPLOYEES), pick(['active', 'terminated']), rand() < 0.3, pick(['manager-1842', 'manager-2090']))], 'api');
      continue;
    }
    n++;
    const read = rand() < 0.4;
    const subject = pick(EMPLOYEES);
    const phase = read ? 'propose' : pick(['propose', 'execute']);
    const requester = pick(REQUESTERS);
    const now = pick(NOWS);
    const after = pick(AFTERS);
    const approvers = phase === 'execute' ? [pick([null, 'hr-5519', 'it-3001']), pick([null, 'hr-5519'])].filter(Boolean) : [];
    const approvals = approvers.map((a, i) => ({
      approval_id: `apr-${n}-${i}`,
      approver: { type: 'User', id: a },
      approved_at: '2026-08-24T09:00:00.000Z',
      expires_at: '2026-08-24T23:00:00Z',
      valid: i === 0 || rand() < 0.5,
    }));
    const server = read ? 'hris' : 'idp';
    const tool = read ? 'read_employee' : 'disable_sign_in';
    const envelope = {
      task_id: `OFF-${n}`,
      purpose: 'scheduled_employee_offboarding',
      requester: { type: 'User', id: requester },
      actor: ACTOR,
      subject: { type: 'Employee', id: subject },
      authoritative_event: `hris:termination:${90000 + n}`,
      execute_after: after,
      evidence_refs: [`hris:employee:${subject}@version-44`],
      supersedes: null,
    };
    const bound = bindCall(server, tool, { employee_id: subject, reason: 'terminated', notify: n % 3 === 0 });
    const valid = approvals.filter((a) => a.valid).map(({ valid: _v, ...a }) => a);
    const key = jcs([tool, phase, requester, now, after, valid.map((a) => a.approver.id), store.get(uidKey(envelope.subject)), bound.arguments.employee_id]);
    let outcome = memo.get(key);
    if (outcome === undefined) {
      outcome = engine.evaluate({
        actor: ACTOR,
        server,
        tool,
        subject: envelope.subject,
        envelope,
        phase,
        binding: bound.binding,
        cedarArguments: bound.cedar,
        now: new Date(now),
        approvals: valid,
        entities: source,
      });
      memo.set(key, outcome);
    }
    const execution_id = `OFF-${n}:${tool}`;
    const state = phase === 'execute' && outcome.decision === 'allow' ? 'invoking' : 'proposed';
    const fields = {
      decision_id: `dec-${n}`,
      execution_id,
      actor: ACTOR,
      phase,
      envelope,
      envelope_digest: envelopeDigest(envelope),
      server,
      tool,
      arguments: bound.arguments,
      binding: bound.binding,
      decision: outcome.decision,
      reasons: outcome.reasons,
      errors: outcome.errors,
      obligations: outcome.obligations,
      approvals,
      policy_version: bundle.policyVersion,
      entities_version: version,
      now,
      state,
    };
    if (outcome.approval_used !== undefined) fields.approval_used = outcome.approval_used.replace(/^apr-\d+-/, `apr-${n}-`);
    emit('decision', fields);
    if (state === 'invoking' && seq < records) emit('outcome', { execution_id, actor: ACTOR, status: 'committed', confirmation: 'tool_reported' });
  }
  if (pending.length) writeSync(fd, `${pending.join('\n')}\n`);
  closeSync(fd);
  renameSync(`${exportPath}.part`, exportPath);
}

function exportFor(records) {
  const p = path.join(tmpDir, `replay-${records}.jsonl`);
  if (!existsSync(p)) {
    const t = Date.now();
    generate(p, records);
    console.error(`generated ${p} in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  }
  return p;
}

/** Wall time and peak RSS (KiB, from /usr/bin/time when present) of `writ policy replay …`. */
function timeReplayWithRss(args) {
  const timeBin = '/usr/bin/time';
  const timing = existsSync(timeBin) ? [timeBin, '-f', 'maxrss_kib=%M'] : [];
  const cmd = [...timing, process.execPath, '--no-turbo-inline-js-wasm-calls', path.join(root, 'bin/writ'), 'policy', 'replay', '--dir', POLICIES, ...args];
  const t = process.hrtime.bigint();
  const r = spawnSyncCapture(cmd);
  const seconds = Number(process.hrtime.bigint() - t) / 1e9;
  if (r.status !== 0) throw new Error(`${cmd.join(' ')} exited ${r.status}: ${r.stdout.slice(0, 2000)}${r.stderr}`);
  const m = /maxrss_kib=(\d+)/.exec(r.stderr);
  return { seconds, stdout: r.stdout, rssKiB: m ? Number(m[1]) : undefined };
}

function spawnSyncCapture(cmd) {
  const r = spawnSync(cmd[0], cmd.slice(1), { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * The replay core in a child with --expose-gc: the JS heap after a full GC every 5,000 records. Flat
 * means what replay keeps does not grow with the export (RSS also holds V8's and wasm's reserves).
 */
const HEAP_PROBE = `
import { PolicyEngine } from '${path.join(root, 'dist/src/policy/engine.js')}';
import { loadPolicyDir } from '${path.join(root, 'dist/src/policy/load.js')}';
import { Replayer } from '${path.join(root, 'dist/src/replay/replayer.js')}';
import { forEachLine } from '${path.join(root, 'dist/src/replay/lines.js')}';
const replayer = new Replayer(new PolicyEngine(loadPolicyDir(process.argv[1])));
let n = 0;
const heap = [];
await forEachLine(process.argv[2], (buf, start, end) => {
  replayer.push(JSON.parse(buf.toString('utf8', start, end)));
  if (++n % 5000 === 0) { globalThis.gc(); heap.push([n, process.memoryUsage().heapUsed]); }
});
process.stdout.write(JSON.stringify(heap));
`;

function heapProbe(exportPath) {
  const r = spawnSync(process.execPath, ['--expose-gc', '--no-turbo-inline-js-wasm-calls', '--input-type=module', '-e', HEAP_PROBE, POLICIES, exportPath], {
    cwd: root,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`heap probe failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

function summaryOf(stdout) {
  const m = /(\d+) replayed, (\d+) changed\s*$/.exec(stdout);
  if (!m) throw new Error(`no summary in: ${stdout.slice(-500)}`);
  return { replayed: Number(m[1]), changed: Number(m[2]) };
}

/** Bare cedar-wasm on the first `limit` decisions of the export: inputs prebuilt, only the calls timed. */
function bareCedar(exportPath, limit) {
  const setId = 'bench-replay-bare';
  const pre = cedar.preparsePolicySet(setId, { staticPolicies: bundle.policies });
  if (pre.type !== 'success') throw new Error('preparse failed');
  const store = new Map();
  const source = { get: (k) => store.get(k), version: '' };
  const calls = [];
  let writCalls = 0;
  for (const line of readFileSync(exportPath, 'utf8').split('\n')) {
    if (calls.length >= limit || line === '') break;
    const r = JSON.parse(line);
    if (r.kind === 'entity') store.set(uidKey(r.uid), { uid: r.uid, attrs: r.attrs, parents: r.parents });
    if (r.kind !== 'decision') continue;
    writCalls += cedarCallsOf(r);
    const bound = bindCall(r.server, r.tool, r.arguments);
    const input = {
      actor: r.actor,
      server: r.server,
      tool: r.tool,
      subject: r.envelope.subject,
      envelope: r.envelope,
      phase: r.phase,
      binding: r.binding,
      cedarArguments: bound.cedar,
      now: new Date(r.now),
      approvals: r.approvals.filter((a) => a.valid),
      entities: source,
    };
    calls.push({
      principal: r.actor,
      action: { type: 'Action', id: `${r.server}/${r.tool}` },
      resource: r.envelope.subject,
      context: buildCedarContext(input),
      entities: entitySlice(source, entityRootsOf(input)),
      preparsedPolicySetId: setId,
    });
  }
  const seconds = timeBare(calls);
  return { n: calls.length, seconds, calls, writCallsPerDecision: writCalls / calls.length };
}

function timeBare(calls) {
  const t = process.hrtime.bigint();
  for (const call of calls) {
    const a = cedar.statefulIsAuthorized(call);
    if (a.type !== 'success') throw new Error('bare cedar call failed');
  }
  return Number(process.hrtime.bigint() - t) / 1e9;
}

/** The replay core alone (parse each line, rebuild state, re-decide) over lines held in memory. */
function timeReplayCore(lines) {
  const t = process.hrtime.bigint();
  const replayer = new Replayer(engine);
  for (const line of lines) replayer.push(JSON.parse(line));
  const seconds = Number(process.hrtime.bigint() - t) / 1e9;
  if (replayer.counts.changed !== 0) throw new Error('replay core: changed');
  return { seconds, decisions: replayer.counts.replayed };
}

/**
 * The fairest comparison on a shared machine: in one process, rounds of the replay core and of the
 * bare calls alternate over the same first decisions, so both see the same load; medians of ROUNDS.
 */
function interleaved(exportPath, bareCalls) {
  const lines = [];
  let decisionsSeen = 0;
  for (const line of readFileSync(exportPath, 'utf8').split('\n')) {
    if (line === '') continue;
    if (line.includes('"kind":"decision"')) {
      if (decisionsSeen === INTERLEAVED_N) break;
      decisionsSeen++;
    }
    lines.push(line);
  }
  const calls = bareCalls.slice(0, decisionsSeen);
  const replayRates = [];
  const bareRates = [];
  for (let r = 0; r < ROUNDS; r++) {
    const core = timeReplayCore(lines);
    replayRates.push(core.decisions / core.seconds);
    bareRates.push(calls.length / timeBare(calls));
  }
  return { n: decisionsSeen, replay: median(replayRates), bare: median(bareRates), replayRates, bareRates };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * How many Cedar calls the engine made for a recorded decision (src/policy/engine.ts decide): one per
 * valid approval, earliest first, until one allows; else the base evaluation, and the
 * approval_required re-check when every determining policy carries @requires_approval.
 */
function cedarCallsOf(r) {
  const valid = r.approvals
    .filter((a) => a.valid)
    .sort((a, b) => Date.parse(a.approved_at) - Date.parse(b.approved_at) || (a.approval_id < b.approval_id ? -1 : 1));
  if (r.approval_used !== undefined) return valid.findIndex((a) => a.approval_id === r.approval_used) + 1;
  const recheck =
    r.errors.length === 0 && r.reasons.length > 0 && r.decision !== 'allow' && r.reasons.every((id) => bundle.info.get(id)?.requiresApproval !== undefined);
  return valid.length + 1 + (recheck ? 1 : 0);
}

const exportPath = exportFor(RECORDS);
const quarterPath = exportFor(Math.round(RECORDS / 4));
const decisionsIn = (p) =>
  readFileSync(p, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"kind":"decision"')).length;
const decisions = decisionsIn(exportPath);
const bytes = statSync(exportPath).size;

const noVerify = timeReplayWithRss([exportPath, '--no-verify']);
const noVerifySummary = summaryOf(noVerify.stdout);
if (noVerifySummary.changed !== 0 || noVerifySummary.replayed !== decisions) throw new Error(`replay with the same policies: ${noVerify.stdout.slice(-300)}`);
console.error(`replay --no-verify: ${noVerify.seconds.toFixed(2)} s`);
const verified = timeReplayWithRss([exportPath]);
if (summaryOf(verified.stdout).changed !== 0) throw new Error('changed with verify');
console.error(`replay (verified): ${verified.seconds.toFixed(2)} s`);
const quarter = timeReplayWithRss([quarterPath, '--no-verify']);
console.error(`replay quarter: ${quarter.seconds.toFixed(2)} s`);
const heap = heapProbe(exportPath);
console.error(`heap probe: ${heap.map(([n, b]) => `${n}: ${(b / 1e6).toFixed(1)} MB`).join(', ')}`);
const bare = bareCedar(exportPath, Math.min(BASELINE_N, decisions));
console.error(`bare cedar-wasm: ${bare.n} calls in ${bare.seconds.toFixed(2)} s`);
const inter = interleaved(exportPath, bare.calls);
console.error(`interleaved: replay core ${inter.replayRates.map(Math.round).join(', ')}; bare ${inter.bareRates.map(Math.round).join(', ')}`);
const LOAD_AT_END = os.loadavg()[0].toFixed(1);

const fmt = (x) => Math.round(x).toLocaleString('en-US');
const rate = (n, s) => n / s;
const bareRate = rate(bare.n, bare.seconds);
const rss = (r) => (r.rssKiB === undefined ? 'n/a' : `${(r.rssKiB / 1024).toFixed(0)} MB`);
const md = `## writ policy replay (${fmt(decisions)} decisions, ${fmt(RECORDS)} records)

Command: \`npx tsc -p . && node bench/replay.mjs --records ${RECORDS}\` — run once. Machine: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}),
Node ${process.version}, ${os.platform()} ${os.arch()}; **shared with other jobs while it ran** (load average (1 min) ${LOAD_AT_START} at start,
${LOAD_AT_END} at end), so the figures are indicative, not a quiet-machine measurement.
Export: ${fmt(RECORDS)} records, ${(bytes / 1e6).toFixed(0)} MB: the bundled policies' entities seeded as entity records plus 20
employees, an admin change of one employee every 500 records, ${fmt(decisions)} decision records (idp/disable_sign_in propose and
execute with 0–2 approvals, hris/read_employee) and outcomes. Replay with the same policies reported 0 changed (checked).

| | wall time | decisions/s | peak RSS |
|---|---:|---:|---:|
| \`writ policy replay --no-verify\` (scan + replay passes, child process) | ${noVerify.seconds.toFixed(2)} s | **${fmt(rate(decisions, noVerify.seconds))}** | ${rss(noVerify)} |
| \`writ policy replay\` (verify + scan + replay passes) | ${verified.seconds.toFixed(2)} s | ${fmt(rate(decisions, verified.seconds))} | ${rss(verified)} |
| \`writ policy replay --no-verify\` on a quarter-size export (${fmt(Math.round(RECORDS / 4))} records) | ${quarter.seconds.toFixed(2)} s | ${fmt(rate(summaryOf(quarter.stdout).replayed, quarter.seconds))} | ${rss(quarter)} |
| bare cedar-wasm \`statefulIsAuthorized\`, whole set, one call per decision, inputs prebuilt (${fmt(bare.n)} decisions, in process) | ${bare.seconds.toFixed(2)} s | ${fmt(bareRate)} | |

**Interleaved, in one process** (the comparison the machine's varying load disturbs least): ${ROUNDS} alternating rounds over the
first ${fmt(inter.n)} decisions (with the records between them) — the replay core (parse each line, rebuild the entities,
re-admit the arguments, re-decide) at a median **${fmt(inter.replay)} decisions/s**, bare cedar-wasm at ${fmt(inter.bare)}/s:
**${(inter.replay / inter.bare).toFixed(2)}×** (rounds: replay ${inter.replayRates.map(fmt).join(', ')}; bare ${inter.bareRates.map(fmt).join(', ')}); with ${bare.writCallsPerDecision.toFixed(2)} Cedar
calls per replayed decision, **${((inter.replay * bare.writCallsPerDecision) / inter.bare).toFixed(2)}× the bare rate per Cedar call**.

End to end, the CLI runs at ${(rate(decisions, noVerify.seconds) / bareRate).toFixed(2)}× the bare rate measured after it without verification, making
${bare.writCallsPerDecision.toFixed(2)} Cedar calls per decision on this workload (counted from each recorded outcome): per Cedar call,
${((rate(decisions, noVerify.seconds) * bare.writCallsPerDecision) / bareRate).toFixed(2)}× the bare rate. The bare figure
counts only the Cedar calls (its inputs are built beforehand and it makes one call per decision); replay's
figure includes Node start-up, reading and parsing every line, rebuilding the entity store, re-admitting
the stored arguments, and writ's 1–3 Cedar calls per decision (one per valid approval, the base
evaluation, the approval_required re-check) on the narrowed policy set, context and entity attributes
the live sidecar uses.

Memory: the JS heap after a full GC, sampled every 5,000 records of the full export while the replay
core runs (a separate child with \`--expose-gc\`): ${heap.map(([n, b]) => `${fmt(n)}: ${(b / 1e6).toFixed(1)} MB`).join('; ')} —
flat, because replay keeps only the entity store, the last 4,096 entity changes, the superseded
executions, and one line at a time. Peak RSS (above) adds V8's and the Cedar wasm module's reserves.
`;
mkdirSync(path.join(here, 'results'), { recursive: true });
writeFileSync(path.join(here, 'results', 'replay.md'), md);
process.stdout.write(md);
