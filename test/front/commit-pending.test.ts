// The ledger writer's side of an HTTP front, in-process against the real sidecar and LMDB store: a
// decision a front prepared (src/front/prepare.ts) is committed as the very record the sidecar would
// have written itself; and whenever what the front assumed no longer holds — the entities or the
// policy set moved, or the execution id is not fresh — the sidecar decides the text again itself.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WritConfig } from '../../src/config/config.js';
import type { LmdbStore } from '../../src/store/lmdb/lmdb-store.js';
import type { PdpServices } from '../../src/pdp/services.js';
import { openPdp } from '../helpers/pdp.js';
import { loadPolicyDir } from '../../src/policy/load.js';
import { PolicyEngine } from '../../src/policy/engine.js';
import { prepareDecision, frontDecisionAnswer, type FrontState } from '../../src/front/prepare.js';
import { recordHash } from '../../src/ledger/record.js';
import type { Caller } from '../../src/identity/caller.js';
import { offboardingBody, REPO } from '../helpers/server.js';
import { AuthzenService } from '../../src/authzen/handler.js';
import { admitAuthzen, type PendingAuthzen } from '../../src/authzen/request.js';
import { DEFAULT_ADMISSION_LIMITS } from '../../src/binding/limits.js';
import { authzenRecordOf, presealAuthzenRecords } from '../../src/authzen/records.js';
import type { DecisionOutcome } from '../../src/policy/engine.js';

const CALLER: Caller = { role: 'pep', name: 'test-pep', actor: { type: 'Agent', id: 'offboarding-agent-prod' } };
const read = (id: string, phase: 'propose' | 'execute' = 'execute') =>
  JSON.stringify(offboardingBody({ execution_id: id, phase, action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } } }));
/** What two records of the same question share: everything but what is unique to each call. */
const UNIQUE = new Set(['decision_id', 'execution_id', 'now', 'ts', 'seq', 'prev', 'hash']);
const shared = (r: Record<string, unknown>) => Object.fromEntries(Object.entries(r).filter(([k]) => !UNIQUE.has(k)));

/** A sidecar on the bundled policies and a fresh LMDB store in a temp dir, as `writ serve` wires them. */
async function openSidecar(prefix: string): Promise<{ config: WritConfig; store: LmdbStore; sidecar: PdpServices; close(): Promise<void> }> {
  const opened = await openPdp(prefix);
  return { ...opened, sidecar: opened.pdp };
}

describe('DecisionService.commitPending', () => {
  let opened: Awaited<ReturnType<typeof openSidecar>>;
  let store: LmdbStore;
  let sidecar: PdpServices;
  let front: FrontState;

  before(async () => {
    opened = await openSidecar('writ-commit-prepared-');
    ({ store, sidecar } = opened);
    front = {
      engine: new PolicyEngine(loadPolicyDir(opened.config.policy_dir)),
      entities: sidecar.core.entities,
      clockFile: null,
      limits: DEFAULT_ADMISSION_LIMITS,
      evaluate: (e, i) => e.evaluate(i),
    };
  });
  after(() => opened?.close());

  test('a fresh decision is committed as the record the sidecar writes itself, and answered the same', async () => {
    const own = await sidecar.decisions.decide(CALLER, read('own-1'));
    const prepared = (await prepareDecision(front, CALLER, read('front-1'), performance.timeOrigin + performance.now()))!;
    const commit = await sidecar.decisions.commitPending(prepared.ask);
    assert.ok('record' in commit, 'committed as prepared, not decided again');
    const answer = frontDecisionAnswer(prepared, commit);
    assert.equal(answer.decision, 'allow');
    assert.equal(answer.state, 'invoking');
    assert.deepEqual({ ...answer, decision_id: '', execution_id: '', record: null }, { ...own, decision_id: '', execution_id: '', record: null });
    const mine = (await store.getRecord(own.record.seq))!;
    const theirs = (await store.getRecord(commit.record.seq))!;
    // The second execution of the same call counts the first (invoking): the writer adds `prior` to
    // the record the front canonicalised, in its JCS place (the hash below is recomputed from the record).
    assert.deepEqual(mine.prior, { committed: 0, unknown: 0, invoking: 0, proposed_allowed: 0 });
    assert.deepEqual(theirs.prior, { committed: 0, unknown: 0, invoking: 1, proposed_allowed: 0 });
    assert.deepEqual({ ...shared(theirs), prior: null }, { ...shared(mine), prior: null });
    assert.equal(theirs.hash, recordHash(theirs));
    assert.equal(theirs.prev, (await store.getRecord(commit.record.seq - 1))!.hash, 'chained on the head');
    assert.equal((await sidecar.executions.getExecution(CALLER.actor!, 'front-1')).state, 'invoking');
  });

  test('entities that moved since the front evaluated: decided again, on the entities in force', async () => {
    const stale: FrontState = { ...front, entities: { get: (k) => sidecar.core.entities.get(k), version: `sha256:${'0'.repeat(64)}` } };
    const prepared = (await prepareDecision(stale, CALLER, read('front-2'), 0))!;
    const commit = await sidecar.decisions.commitPending(prepared.ask);
    assert.ok('response' in commit, 'not committed as prepared');
    assert.equal(commit.response.entities_version, sidecar.core.entities.version);
    const record = (await store.getRecord(commit.response.record.seq))!;
    assert.equal(record.entities_version, sidecar.core.entities.version);
    assert.equal(record.execution_id, 'front-2');
  });

  test('a policy set the sidecar no longer holds: decided again with the one in force', async () => {
    const other = mkdtempSync(join(tmpdir(), 'writ-commit-prepared-policies-'));
    try {
      const src = join(REPO, 'policies');
      for (const f of readdirSync(src)) if (statSync(join(src, f)).isFile()) copyFileSync(join(src, f), join(other, f));
      writeFileSync(join(other, 'deny-reads.cedar'), '@id("deny-reads")\nforbid (principal, action == Action::"hris/read_employee", resource);\n');
      const elsewhere: FrontState = { ...front, engine: new PolicyEngine(loadPolicyDir(other)) };
      const prepared = (await prepareDecision(elsewhere, CALLER, read('front-3'), 0))!;
      assert.equal(prepared.outcome.decision, 'deny', 'the front alone would have denied');
      const commit = await sidecar.decisions.commitPending(prepared.ask);
      assert.ok('response' in commit);
      assert.equal(commit.response.decision, 'allow');
      assert.equal(commit.response.policy_version, sidecar.core.engine.policyVersion);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  test('an execution id that is not fresh: decided again against its state, never reserved twice', async () => {
    const proposed = await sidecar.decisions.decide(CALLER, read('front-4', 'propose'));
    assert.equal(proposed.state, 'proposed');
    const prepared = (await prepareDecision(front, CALLER, read('front-4', 'execute'), 0))!;
    const commit = await sidecar.decisions.commitPending(prepared.ask);
    assert.ok('response' in commit);
    assert.equal(commit.response.state, 'invoking');
    const execution = await sidecar.executions.getExecution(CALLER.actor!, 'front-4');
    assert.equal(execution.state, 'invoking');
    assert.equal((execution.records as number[]).length, 2, 'one execution, two decision records');
    // And once invoking, a second prepared execute is refused exactly as decide refuses it.
    const again = (await prepareDecision(front, CALLER, read('front-4', 'execute'), 0))!;
    await assert.rejects(sidecar.decisions.commitPending(again.ask), (e: { code?: string }) => e.code === 'EXECUTION_IN_FLIGHT');
  });

  test('a supersedes is left to the sidecar', async () => {
    const body = offboardingBody({
      execution_id: 'front-5',
      phase: 'execute',
      envelope: { supersedes: 'front-4' },
      action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } },
    });
    assert.equal(await prepareDecision(front, CALLER, JSON.stringify(body), 0), undefined);
  });
});

describe('AuthzenService.recordPending', () => {
  let opened: Awaited<ReturnType<typeof openSidecar>>;
  let store: LmdbStore;
  let sidecar: PdpServices;
  let service: AuthzenService;
  const EVALUATOR: Caller = { role: 'evaluator', name: 'test-evaluator' };
  const text = JSON.stringify({
    subject: { type: 'Agent', id: 'offboarding-agent-prod' },
    action: { name: 'read' },
    resource: { type: 'Employee', id: '7721' },
  });
  // An outcome the bundled policies never give for this request (they name no AuthZEN action): it shows
  // whether the sidecar recorded the front's outcome or evaluated the request itself.
  const fabricated: DecisionOutcome = { decision: 'allow', reasons: ['as-the-front-evaluated'], errors: [], obligations: [] };
  /** What a front sends: its outcomes and their records, canonicalised there (over: what moved since). */
  const prepared = (over: Record<string, unknown> = {}): PendingAuthzen => {
    const evaluated = { policyVersion: sidecar.core.engine.policyVersion, entitiesVersion: sidecar.core.entities.version, now: '2026-08-24T08:30:00.000Z' };
    const records = presealAuthzenRecords(admitAuthzen(EVALUATOR, text, false, DEFAULT_ADMISSION_LIMITS), [fabricated], EVALUATOR, evaluated);
    return { single: true, outcomes: [fabricated], records, ...evaluated, ...over };
  };
  const recordOf = async (decisionId: string) => {
    const size = await store.size();
    for (let seq = size - 1; seq >= 0; seq--) {
      const r = (await store.getRecord(seq))!;
      if (r.decision_id === decisionId) return r;
    }
    throw new Error(`no record for ${decisionId}`);
  };

  before(async () => {
    opened = await openSidecar('writ-record-prepared-');
    ({ store, sidecar } = opened);
    service = new AuthzenService(sidecar.core);
  });
  after(() => opened?.close());

  test('what the front evaluated on the policy set and entities in force is recorded as it evaluated it', async () => {
    const answer = (await service.recordPending(EVALUATOR, text, false, prepared())) as any;
    assert.deepEqual([answer.decision, answer.context.reasons], [true, ['as-the-front-evaluated']]);
    const r = await recordOf(answer.context.decision_id);
    assert.deepEqual(
      [r.api, r.decision, r.reasons, r.now, r.entities_version],
      ['authzen', 'allow', ['as-the-front-evaluated'], '2026-08-24T08:30:00.000Z', sidecar.core.entities.version],
    );
    assert.equal(r.hash, recordHash(r));
  });

  test('entities or a policy set that moved since the front evaluated: evaluated again by the sidecar', async () => {
    const own = (await service.evaluate(EVALUATOR, text, false)) as any;
    for (const over of [{ entitiesVersion: `sha256:${'0'.repeat(64)}` }, { policyVersion: `sha256:${'1'.repeat(64)}` }]) {
      const answer = (await service.recordPending(EVALUATOR, text, false, prepared(over))) as any;
      assert.deepEqual([answer.decision, answer.context.reasons], [own.decision, own.context.reasons], JSON.stringify(over));
      const r = await recordOf(answer.context.decision_id);
      assert.deepEqual(
        [r.decision, r.entities_version, r.policy_version],
        [own.decision ? 'allow' : 'deny', sidecar.core.entities.version, sidecar.core.engine.policyVersion],
      );
    }
  });

  test('outcomes and records that do not pair up: evaluated again by the sidecar', async () => {
    const own = (await service.evaluate(EVALUATOR, text, false)) as any;
    const answer = (await service.recordPending(EVALUATOR, text, false, prepared({ records: [] }))) as any;
    assert.deepEqual([answer.decision, answer.context.reasons], [own.decision, own.context.reasons]);
  });

  test('the record a front canonicalised is the record the sidecar writes for the same evaluation', async () => {
    const p = prepared();
    const answer = (await service.recordPending(EVALUATOR, text, false, p)) as any;
    assert.equal(answer.context.decision_id, p.records[0]!.decisionId);
    const r = await recordOf(answer.context.decision_id);
    const { v, seq, ts, prev, hash, ...own } = r as Record<string, unknown>;
    assert.deepEqual([v, typeof seq, typeof ts, typeof prev, typeof hash], [1, 'number', 'string', 'string', 'string']);
    // The members as the sidecar's own path builds them (authzenRecordOf), field for field.
    const request = admitAuthzen(EVALUATOR, text, false, DEFAULT_ADMISSION_LIMITS);
    const versions = { policy_version: sidecar.core.engine.policyVersion, entities_version: sidecar.core.entities.version };
    assert.deepEqual(
      own,
      JSON.parse(
        JSON.stringify(authzenRecordOf(request.evaluations[0]!, fabricated, answer.context.decision_id, EVALUATOR, versions, '2026-08-24T08:30:00.000Z')),
      ),
    );
  });
});
