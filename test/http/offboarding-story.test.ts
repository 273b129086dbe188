/**
 * Issue 5's story as one end-to-end test over HTTP, step by step, with the PDP clock pinned:
 * 15:30 manager requests → approval_required; HR approves; execute before 17:00 → deny; the subject's
 * record changes → the approval is invalid, approval_required again; legal hold → deny; hold lifted,
 * after 17:00 with a fresh approval → allow → outcome recorded — and the ledger tells it all.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { offboardingEmployee, offboardingSteps } from '../helpers/offboarding.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let dir: string;
const clock = () => join(dir, 'now');
const at = (t: string) => writeFileSync(clock(), t);

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'writ-story-'));
  at('2026-08-24T15:30:00+07:00');
  s = await startTestServer({ clockFile: clock() });
});
after(async () => {
  await s.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('the offboarding story, end to end', async () => {
  const t = s.tokens;
  const { propose, execute, decide, approve } = offboardingSteps(s);

  // 15:30 — the manager's request needs HR.
  const p = await decide(propose);
  assert.equal(p.decision, 'approval_required');
  assert.deepEqual(p.obligations, [{ policy: 'hr-approval-required', approver_group: 'Role::"hr"' }]);

  // HR approves at 15:35.
  at('2026-08-24T15:35:00+07:00');
  const first = await approve(p);

  // 16:30 — too early, whatever the approval.
  at('2026-08-24T16:30:00+07:00');
  const early = await decide(execute);
  assert.equal(early.decision, 'deny');
  // No evaluation allows, so the reasons are those of the evaluation without an approver (§2).
  assert.deepEqual([...early.reasons].sort(), ['hr-approval-required', 'not-before-execute-after']);

  // 16:45 — the termination is delayed: the subject's record changes, the 15:35 approval stops counting.
  at('2026-08-24T16:45:00+07:00');
  const changed = await call(s, 'PUT', '/v1/entities/Employee/7721', { token: t.admin, body: offboardingEmployee({ status: 'termination_delayed' }) });
  assert.equal(changed.status, 200, changed.text);
  at('2026-08-24T17:01:00+07:00');
  const stale = await decide(execute);
  assert.equal(stale.decision, 'approval_required');
  const view = await call(s, 'GET', `/v1/executions/${encodeURIComponent(propose.execution_id)}`, { token: t.pep });
  assert.deepEqual(
    view.body.approvals.map((a: { approval_id: string; valid: boolean; invalid_reason?: string }) => [a.approval_id, a.valid, a.invalid_reason]),
    [[first, false, 'subject_changed']],
  );

  // 16:50 (recorded later) — legal places a hold: deny, even with a fresh approval.
  await call(s, 'PUT', '/v1/entities/Employee/7721', { token: t.admin, body: offboardingEmployee({ status: 'termination_delayed', legal_hold: true }) });
  const second = await approve(p);
  const held = await decide(execute);
  assert.equal(held.decision, 'deny');
  assert.ok(held.reasons.includes('legal-hold'));

  // The hold is lifted; after 17:00 a fresh approval allows, and the outcome is recorded.
  await call(s, 'PUT', '/v1/entities/Employee/7721', { token: t.admin, body: offboardingEmployee({ status: 'terminated', legal_hold: false }) });
  at('2026-08-24T17:10:00+07:00');
  const third = await approve(p);
  const allowed = await decide(execute);
  assert.equal(allowed.decision, 'allow', JSON.stringify(allowed));
  assert.equal(allowed.approval_used, third);
  assert.equal(allowed.state, 'invoking');
  const outcome = await call(s, 'POST', `/v1/executions/${encodeURIComponent(propose.execution_id)}/outcome`, {
    token: t.pep,
    body: { status: 'committed', confirmation: 'system_of_record', downstream_ref: 'idp:event:5521' },
  });
  assert.equal(outcome.status, 200, outcome.text);
  assert.equal(outcome.body.state, 'committed');

  // The ledger holds every step for this execution, in order.
  const records = await call(s, 'GET', `/v1/ledger/records?execution_id=${encodeURIComponent(propose.execution_id)}&limit=100`, { token: t.auditor });
  const kinds = records.body.records.map((r: { kind: string; decision?: string }) => (r.decision ? `${r.kind}:${r.decision}` : r.kind));
  assert.deepEqual(kinds, [
    'decision:approval_required',
    'approval',
    'decision:deny',
    'decision:approval_required',
    'approval',
    'decision:deny',
    'approval',
    'decision:allow',
    'outcome',
  ]);
  const allowRecord = records.body.records[7];
  assert.equal(allowRecord.approval_used, third);
  assert.deepEqual(
    allowRecord.approvals.map((a: { approval_id: string; valid: boolean }) => [a.approval_id, a.valid]),
    // The second approval was given under the hold; lifting it changed the record again.
    [
      [first, false],
      [second, false],
      [third, true],
    ],
  );
  const entityRecords = await call(s, 'GET', '/v1/ledger/records?kind=entity&limit=1000', { token: t.auditor });
  assert.ok(entityRecords.body.records.filter((r: { uid: { id: string } }) => r.uid.id === '7721').length >= 4);
});
