/**
 * Replay is exact (docs/protocol.md §12): over generated workloads run through the in-process sidecar —
 * proposes and executes of several tools and subjects, approvals by HR and by others, revocations,
 * admin PUTs of the subject's record, outcomes, reconciliations, supersedes, a moving clock, and bursts
 * of concurrent requests that group-commit together with an entity change — replaying the ledger with
 * the policies that produced it reports 0 changed and re-decides every decision record. Seeded.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { DEFAULTS, type WritConfig } from '../../src/config/config.js';
import { isWritError } from '../../src/errors.js';
import { verifyExportSync } from '../../src/ledger/verify.js';
import { PolicyEngine } from '../../src/policy/engine.js';
import { entitiesVersionOf, loadPolicyDir } from '../../src/policy/load.js';
import { supersedeTargetOf } from '../../src/replay/executions.js';
import { Replayer } from '../../src/replay/replayer.js';
import { startSidecar } from '../../src/server/serve.js';
import type { PdpServices } from '../../src/pdp/services.js';
import { REPO } from '../helpers/server.js';

const SEED = 0x7e_91a7;
const RUNS = 10;
const POLICIES = join(REPO, 'policies');
const ACTOR = { type: 'Agent', id: 'offboarding-agent-prod' };
const START = Date.parse('2026-08-24T08:00:00Z');

interface ExecSpec {
  tool: 'disable_sign_in' | 'read_employee';
  subject: string;
  requester: string;
  executeAfterMin: number;
  /** Index of an earlier execution this one supersedes, if any. */
  supersedes: number | null;
}

type Op =
  | { op: 'decide'; exec: number; phase: 'propose' | 'execute' }
  | { op: 'approve'; exec: number; approver: 'hr' | 'it'; ttlMin: number }
  | { op: 'revoke'; exec: number }
  | { op: 'put'; subject: string; status: string; legalHold: boolean; manager: string }
  | { op: 'outcome'; exec: number; status: 'committed' | 'rejected' | 'unknown' }
  | { op: 'reconcile'; exec: number; resolution: 'committed' | 'absent' }
  | { op: 'tick'; minutes: number }
  | { op: 'burst'; execs: number[]; put: { subject: string; legalHold: boolean } };

const EXECS = 5;
const execIndex = fc.integer({ min: 0, max: EXECS - 1 });
const subject = fc.constantFrom('7721', '8830', '9999');
const execSpec: fc.Arbitrary<ExecSpec> = fc.record({
  tool: fc.constantFrom('disable_sign_in' as const, 'read_employee' as const),
  subject,
  requester: fc.constantFrom('manager-1842', 'manager-2090', 'hr-5519', 'it-3001'),
  executeAfterMin: fc.integer({ min: -30, max: 120 }),
  supersedes: fc.option(execIndex, { nil: null, freq: 3 }),
});
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('decide' as const), exec: execIndex, phase: fc.constantFrom('propose' as const, 'execute' as const) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('approve' as const),
      exec: execIndex,
      approver: fc.constantFrom('hr' as const, 'it' as const),
      ttlMin: fc.integer({ min: 1, max: 240 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('revoke' as const), exec: execIndex }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('put' as const),
      subject,
      status: fc.constantFrom('active', 'termination_delayed', 'terminated'),
      legalHold: fc.boolean(),
      manager: fc.constantFrom('manager-1842', 'manager-2090'),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('outcome' as const),
      exec: execIndex,
      status: fc.constantFrom('committed' as const, 'rejected' as const, 'unknown' as const),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('reconcile' as const), exec: execIndex, resolution: fc.constantFrom('committed' as const, 'absent' as const) }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('tick' as const), minutes: fc.integer({ min: 1, max: 90 }) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('burst' as const),
      execs: fc.array(execIndex, { minLength: 2, maxLength: 4 }),
      put: fc.record({ subject, legalHold: fc.boolean() }),
    }),
  },
);

const iso = (ms: number) => new Date(ms).toISOString();

function employee(id: string, status: string, legalHold: boolean, manager: string): string {
  return JSON.stringify({ attrs: { employee_id: id, status, legal_hold: legalHold, manager: { __entity: { type: 'User', id: manager } } }, parents: [] });
}

/** Runs one workload; a refusal (WritError) is part of the workload, anything else fails the test. */
async function runWorkload(sidecar: PdpServices, clockFile: string, specs: ExecSpec[], ops: Op[]): Promise<void> {
  let clock = START;
  writeFileSync(clockFile, iso(clock));
  const pep = { role: 'pep' as const, name: 'test-pep', actor: ACTOR };
  const approvers = {
    hr: { role: 'approver' as const, name: 'test-approver', principal: { type: 'User', id: 'hr-5519' } },
    it: { role: 'approver' as const, name: 'test-approver', principal: { type: 'User', id: 'it-3001' } },
  };
  const ids = specs.map((_, i) => `X-${i}`);
  const bound: Array<{ binding: string; envelope_digest: string } | undefined> = [];
  const approvals: Array<{ id: string; approver: 'hr' | 'it' } | undefined> = [];
  const body = (i: number, phase: 'propose' | 'execute') => {
    const spec = specs[i]!;
    // Only an earlier execution can be superseded; a supersedes of one never decided is refused (404).
    const supersedes = spec.supersedes !== null && spec.supersedes < i ? ids[spec.supersedes] : null;
    return JSON.stringify({
      execution_id: ids[i],
      phase,
      envelope: {
        task_id: `T-${i}`,
        purpose: 'scheduled_employee_offboarding',
        requester: { type: 'User', id: spec.requester },
        actor: ACTOR,
        subject: { type: 'Employee', id: spec.subject },
        execute_after: iso(START + spec.executeAfterMin * 60_000),
        evidence_refs: [`hris:employee:${spec.subject}`],
        supersedes,
      },
      action: { server: spec.tool === 'read_employee' ? 'hris' : 'idp', tool: spec.tool, arguments: { employee_id: spec.subject, note: 'x', weight: 1.5 } },
    });
  };
  const tolerate = async (p: Promise<unknown>) => {
    try {
      return await p;
    } catch (e) {
      if (!isWritError(e)) throw e;
      if (process.env.DEBUG_REPLAY) console.error(e.code, e.message);
      return undefined;
    }
  };
  const decide = async (i: number, phase: 'propose' | 'execute') => {
    const r = (await tolerate(sidecar.decisions.decide(pep, body(i, phase)))) as { binding: string; envelope_digest: string } | undefined;
    if (r) bound[i] = { binding: r.binding, envelope_digest: r.envelope_digest };
  };
  for (const o of ops) {
    switch (o.op) {
      case 'decide':
        await decide(o.exec, o.phase);
        break;
      case 'approve': {
        const b = bound[o.exec];
        if (!b) break;
        const r = (await tolerate(
          sidecar.approvals.approve(
            approvers[o.approver],
            JSON.stringify({ actor: ACTOR, execution_id: ids[o.exec], ...b, expires_at: iso(clock + o.ttlMin * 60_000) }),
          ),
        )) as { approval_id: string } | undefined;
        if (r) approvals[o.exec] = { id: r.approval_id, approver: o.approver };
        break;
      }
      case 'revoke': {
        const a = approvals[o.exec];
        if (a) await tolerate(sidecar.approvals.revoke(approvers[a.approver], a.id));
        break;
      }
      case 'put':
        await tolerate(
          sidecar.entities.putEntity({ role: 'admin', name: 'test-admin' }, 'Employee', o.subject, employee(o.subject, o.status, o.legalHold, o.manager)),
        );
        break;
      case 'outcome':
        await tolerate(sidecar.executions.outcome(pep, ids[o.exec]!, JSON.stringify({ status: o.status })));
        break;
      case 'reconcile':
        await tolerate(
          sidecar.executions.reconcile(ACTOR, ids[o.exec]!, JSON.stringify({ resolution: o.resolution, evidence_ref: 'ticket:1' }), {
            role: 'reconciler',
            name: 'test-reconciler',
          }),
        );
        break;
      case 'tick':
        clock += o.minutes * 60_000;
        writeFileSync(clockFile, iso(clock));
        break;
      case 'burst':
        // Concurrent decisions and an entity change: they may share one group commit, so a decision
        // can be recorded after an entity record it did not see (its entities_version says so).
        await Promise.all([
          ...o.execs.map((i, k) => decide(i, k % 2 === 0 ? 'propose' : 'execute')),
          tolerate(
            sidecar.entities.putEntity(
              { role: 'admin', name: 'test-admin' },
              'Employee',
              o.put.subject,
              employee(o.put.subject, 'active', o.put.legalHold, 'manager-1842'),
            ),
          ),
        ]);
        break;
    }
  }
}

test('replaying a generated workload with the policies that produced it changes nothing', async () => {
  const engine = new PolicyEngine(loadPolicyDir(POLICIES));
  let totalDecisions = 0;
  let totalSuperseding = 0;
  let earlierEntities = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(execSpec, { minLength: EXECS, maxLength: EXECS }), fc.array(op, { minLength: 20, maxLength: 60 }), async (specs, ops) => {
      const dir = mkdtempSync(join(tmpdir(), 'writ-replay-prop-'));
      const clockFile = join(dir, 'now');
      writeFileSync(clockFile, iso(START));
      const config: WritConfig = {
        ...DEFAULTS,
        tokens: [],
        listen: '127.0.0.1:0',
        policy_dir: POLICIES,
        data_dir: join(dir, 'data'),
        clock_file: clockFile,
        checkpoint: { every_records: 25, every_ms: 600_000 },
      };
      const running = await startSidecar(config, { devTokens: false, log: () => undefined });
      let lines: string[];
      try {
        await runWorkload(running.pdp, clockFile, specs, ops);
        lines = [];
        for await (const line of running.pdp.core.store.exportLines()) lines.push(line);
      } finally {
        await running.close();
        rmSync(dir, { recursive: true, force: true });
      }
      assert.equal(verifyExportSync(lines).ok, true);
      const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      const targets = new Set<string>();
      for (const r of records) {
        const t = supersedeTargetOf(r);
        if (t !== undefined) targets.add(t);
      }
      const replayer = new Replayer(engine, { supersedeTargets: targets });
      const changes = [];
      for (const r of records) {
        if (r.kind === 'decision') {
          // The entities rebuilt for this decision are, by content, the ones it recorded seeing.
          const seen = replayer.entityTimeline.entitiesAt(r.entities_version as string);
          assert.ok(seen, `seq ${String(r.seq)}: entities_version not reachable`);
          assert.equal(entitiesVersionOf(seen), r.entities_version, `seq ${String(r.seq)}`);
        }
        const change = replayer.push(r);
        if (change) changes.push(change);
      }
      const decisions = records.filter((r) => r.kind === 'decision');
      assert.deepEqual(changes, []);
      assert.equal(replayer.counts.replayed, decisions.length);
      assert.equal(replayer.counts.inexactEntities, 0);
      totalDecisions += decisions.length;
      totalSuperseding += targets.size;
      earlierEntities += replayer.counts.earlierEntities;
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true },
  );
  // The workloads did exercise the paths in question.
  assert.ok(totalDecisions > RUNS * 5, `only ${totalDecisions} decisions`);
  assert.ok(totalSuperseding > 0, 'no supersedes in any workload');
  // Whether a burst raced an entity change into one group commit depends on timing: reported, not required.
  process.stdout.write(`# ${totalDecisions} decisions replayed, ${earlierEntities} of them recorded after an entity change they had not seen\n`);
});
