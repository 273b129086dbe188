/**
 * docs/protocol.md §17 over HTTP, on one sidecar with the PDP clock pinned: every record names its
 * caller; a second id for one consequence is refused (`context.prior`, the bundled
 * `duplicate-consequence`); tool events are sealed only while invoking; the reconciliation queue
 * lists what is stuck and a reconciler ends a stuck `invoking` after `stuck_after_s`; the system of
 * record confirms a committed outcome once.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { offboardingEmployee } from '../helpers/offboarding.js';
import { call, offboardingBody, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let dir: string;
const at = (t: string) => writeFileSync(join(dir, 'now'), t);
const nameOf = (token: string) => `sha256:${createHash('sha256').update(token).digest('hex').slice(0, 16)}`;
const ACTOR = encodeURIComponent('Agent::"offboarding-agent-prod"');

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'writ-offboarding-complete-'));
  at('2026-08-24T17:05:00+07:00');
  s = await startTestServer({ clockFile: join(dir, 'now'), config: { stuck_after_s: 900 } });
});
after(async () => {
  await s.stop();
  rmSync(dir, { recursive: true, force: true });
});

const t = () => s.tokens;
const record = async (seq: number) => (await call(s, 'GET', `/v1/ledger/records/${seq}`, { token: t().auditor })).body;
const decide = async (body: unknown) => {
  const r = await call(s, 'POST', '/v1/decisions', { token: t().pep, body });
  assert.equal(r.status, 200, r.text);
  return r.body;
};

test('§17: callers named, one run per consequence, events, the queue, stuck reconcile, confirmation', async () => {
  const pep = { role: 'pep', name: nameOf(t().pep) };

  // An entity change names the admin who made it.
  const put = await call(s, 'PUT', '/v1/entities/Employee/7721', { token: t().admin, body: offboardingEmployee({}) });
  assert.equal(put.status, 200, put.text);
  assert.deepEqual((await record(put.body.record.seq)).caller, { role: 'admin', name: nameOf(t().admin) });

  // A: proposed, approved by HR, executed → invoking. Its records name the PEP, the trace and the prior counts.
  const a = offboardingBody({ execution_id: 'OFF-2048:a' });
  const proposed = await decide(a);
  assert.equal(proposed.decision, 'approval_required');
  // The HR approver sees what it is asked to approve; an IT approver (not in Role::"hr") sees nothing.
  const pending = await call(s, 'GET', '/v1/approvals/pending', { token: t().approver });
  assert.equal(pending.status, 200, pending.text);
  assert.equal(pending.body.pending.length, 1, pending.text);
  const item = pending.body.pending[0];
  assert.equal(item.execution_id, 'OFF-2048:a');
  assert.deepEqual(item.action, { server: 'idp', tool: 'disable_sign_in', arguments: { employee_id: '7721' } });
  assert.deepEqual(item.subject, { type: 'Employee', id: '7721' });
  assert.deepEqual(item.requester, { type: 'User', id: 'manager-1842' });
  assert.equal(item.execute_after, '2026-08-24T17:00:00+07:00');
  assert.equal(item.authoritative_event, 'hris:termination:99108');
  assert.equal(item.binding, proposed.binding);
  assert.equal(item.envelope_digest, proposed.envelope_digest);
  assert.deepEqual(item.reasons, ['hr-approval-required']);
  assert.deepEqual(item.obligations, [{ policy: 'hr-approval-required', approver_group: 'Role::"hr"' }]);
  assert.deepEqual(item.approvals, []);
  assert.deepEqual((await call(s, 'GET', '/v1/approvals/pending', { token: t().approver2 })).body, { pending: [] });
  assert.equal((await call(s, 'GET', '/v1/approvals/pending', { token: t().auditor })).status, 403);
  const seen = await call(s, 'GET', `/v1/executions/OFF-2048:a?actor=${ACTOR}`, { token: t().approver });
  assert.equal(seen.status, 200, seen.text);
  assert.equal(seen.body.state, 'proposed');
  assert.equal((await call(s, 'GET', `/v1/executions/OFF-2048:a?actor=${ACTOR}`, { token: t().approver2 })).status, 404);
  const approval = await call(s, 'POST', '/v1/approvals', {
    token: t().approver,
    body: {
      actor: a.envelope.actor,
      execution_id: a.execution_id,
      binding: proposed.binding,
      envelope_digest: proposed.envelope_digest,
      expires_at: '2026-08-24T23:00:00+07:00',
    },
  });
  assert.equal(approval.status, 201, approval.text);
  assert.deepEqual((await record(approval.body.record.seq)).caller, { role: 'approver', name: nameOf(t().approver) });
  const approved = (await call(s, 'GET', '/v1/approvals/pending', { token: t().approver })).body.pending[0];
  assert.equal(approved.approvals.length, 1);
  assert.equal(approved.approvals[0].valid, true);
  const executed = await decide({ ...a, phase: 'execute' });
  assert.deepEqual((await call(s, 'GET', '/v1/approvals/pending', { token: t().approver })).body, { pending: [] }, 'no longer waiting once it runs');
  assert.equal(executed.decision, 'allow', JSON.stringify(executed));
  const execRecord = await record(executed.record.seq);
  assert.deepEqual(execRecord.caller, pep);
  assert.equal(execRecord.trace_id, '4bf92f3577b34da6a3ce929d0e0e4736');
  assert.deepEqual(execRecord.prior, { committed: 0, unknown: 0, invoking: 0, proposed_allowed: 0 });

  // B: the same call under a fresh id while A runs → refused by the bundled example, the counts recorded.
  const b = await decide({ ...offboardingBody({ execution_id: 'OFF-2048:b' }), phase: 'execute' });
  assert.equal(b.decision, 'deny');
  assert.ok(b.reasons.includes('duplicate-consequence'), JSON.stringify(b));
  assert.deepEqual((await record(b.record.seq)).prior, { committed: 0, unknown: 0, invoking: 1, proposed_allowed: 0 });

  // Tool events while A is invoking: one record each, in order; malformed ones refused before any record.
  const events = await call(s, 'POST', '/v1/executions/OFF-2048:a/events', {
    token: t().pep,
    body: {
      events: [
        { type: 'idp.session:revoked', data: { sessions: 3 } },
        { type: 'mailbox.locked', data: 'ok' },
      ],
    },
  });
  assert.equal(events.status, 200, events.text);
  assert.equal(events.body.records.length, 2);
  const first = await record(events.body.records[0].seq);
  assert.equal(first.kind, 'event');
  assert.deepEqual(first.event, { type: 'idp.session:revoked', data: { sessions: 3 } });
  assert.deepEqual(first.caller, pep);
  assert.equal((await record(events.body.records[1].seq)).seq, events.body.records[0].seq + 1);
  const badType = await call(s, 'POST', '/v1/executions/OFF-2048:a/events', { token: t().pep, body: { events: [{ type: 'no spaces', data: 1 }] } });
  assert.equal(badType.status, 400);
  const lossy = await call(s, 'POST', '/v1/executions/OFF-2048:a/events', { token: t().pep, rawBody: '{"events":[{"type":"x","data":{"n":1.0}}]}' });
  assert.equal(lossy.status, 400);
  assert.equal(lossy.body.error.code, 'BINDING_LOSSY_NUMBER');
  assert.equal(lossy.body.error.path, '/events/0/data/n');
  const tooMany = await call(s, 'POST', '/v1/executions/OFF-2048:a/events', {
    token: t().pep,
    body: { events: Array.from({ length: 101 }, () => ({ type: 'x', data: null })) },
  });
  assert.equal(tooMany.status, 400);
  assert.equal(
    (await call(s, 'POST', '/v1/executions/OFF-2048:a/events', { token: t().pep2, body: { events: [{ type: 'x', data: 1 }] } })).status,
    404,
    "another PEP's execution is not found",
  );

  // The queue: A is invoking; not yet stuck, so a reconciler cannot end it.
  const queue = await call(s, 'GET', '/v1/executions?state=invoking', { token: t().reconciler });
  assert.equal(queue.status, 200, queue.text);
  assert.deepEqual(
    queue.body.executions.map((e: { execution_id: string }) => e.execution_id),
    ['OFF-2048:a'],
  );
  assert.equal(queue.body.executions[0].tool, 'disable_sign_in');
  assert.equal(queue.body.executions[0].since, '2026-08-24T10:05:00.000Z');
  assert.equal(queue.body.next, null);
  assert.equal((await call(s, 'GET', '/v1/executions?state=invoking&older_than_s=60', { token: t().auditor })).body.executions.length, 0);
  assert.equal((await call(s, 'GET', '/v1/executions?state=invoking', { token: t().pep })).status, 403);
  assert.equal((await call(s, 'GET', '/v1/executions?state=committed', { token: t().reconciler })).status, 400);
  const early = await call(s, 'POST', `/v1/executions/OFF-2048:a/reconcile?actor=${ACTOR}`, {
    token: t().reconciler,
    body: { resolution: 'committed', evidence_ref: 'hris:audit:1' },
  });
  assert.equal(early.status, 409);
  assert.equal(early.body.error.code, 'EXECUTION_NOT_UNKNOWN');

  // 15 minutes on, A is stuck: listed as older than 900 s, and a reconciler ends it.
  at('2026-08-24T17:20:00+07:00');
  assert.equal((await call(s, 'GET', '/v1/executions?state=invoking&older_than_s=900', { token: t().reconciler })).body.executions.length, 1);
  const reconciled = await call(s, 'POST', `/v1/executions/OFF-2048:a/reconcile?actor=${ACTOR}`, {
    token: t().reconciler,
    body: { resolution: 'committed', evidence_ref: 'hris:audit:1' },
  });
  assert.equal(reconciled.status, 200, reconciled.text);
  assert.equal(reconciled.body.state, 'reconciled');
  assert.deepEqual((await record(reconciled.body.record.seq)).caller, { role: 'reconciler', name: nameOf(t().reconciler) });
  assert.equal((await call(s, 'GET', '/v1/executions?state=invoking', { token: t().reconciler })).body.executions.length, 0);
  const late = await call(s, 'POST', '/v1/executions/OFF-2048:a/events', { token: t().pep, body: { events: [{ type: 'x', data: 1 }] } });
  assert.equal(late.status, 409);
  assert.equal(late.body.error.code, 'EXECUTION_NOT_INVOKING');

  // C: the consequence was found to have happened → another id is still refused.
  const c = await decide(offboardingBody({ execution_id: 'OFF-2048:c' }));
  assert.ok(c.reasons.includes('duplicate-consequence'), JSON.stringify(c));
  assert.equal((await record(c.record.seq)).prior.committed, 1);

  // Correlation: the decisions of one task, and of one trace.
  const byTask = await call(s, 'GET', '/v1/ledger/records?task_id=OFF-2048', { token: t().auditor });
  assert.equal(byTask.status, 200, byTask.text);
  assert.deepEqual(
    byTask.body.records.map((r: { execution_id: string }) => r.execution_id),
    ['OFF-2048:a', 'OFF-2048:a', 'OFF-2048:b', 'OFF-2048:c'],
  );
  const byTrace = await call(s, 'GET', '/v1/ledger/records?trace_id=4bf92f3577b34da6a3ce929d0e0e4736&kind=decision', { token: t().auditor });
  assert.equal(byTrace.body.records.length, 4, byTrace.text);
  assert.deepEqual((await call(s, 'GET', '/v1/ledger/records?task_id=OFF-9999', { token: t().auditor })).body, { records: [], next: null });
  assert.equal((await call(s, 'GET', '/v1/ledger/records?trace_id=xyz', { token: t().auditor })).status, 400);

  // Confirmation by the system of record: a committed, tool-reported outcome, once.
  const read = {
    execution_id: 'read-1',
    phase: 'execute' as const,
    envelope: { ...a.envelope, execute_after: undefined, authoritative_event: undefined },
    action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } },
  };
  const readDecision = await decide(read);
  assert.equal(readDecision.decision, 'allow', JSON.stringify(readDecision));
  assert.equal((await call(s, 'POST', '/v1/executions/read-1/outcome', { token: t().pep, body: { status: 'committed' } })).status, 200);
  const confirm = (id: string) =>
    call(s, 'POST', `/v1/executions/${id}/confirm?actor=${ACTOR}`, { token: t().reconciler, body: { evidence_ref: 'hris:employee:7721@version-45' } });
  const confirmed = await confirm('read-1');
  assert.equal(confirmed.status, 200, confirmed.text);
  const confirmation = await record(confirmed.body.record.seq);
  assert.equal(confirmation.kind, 'confirmation');
  assert.equal(confirmation.confirmation, 'system_of_record');
  assert.equal(confirmation.evidence_ref, 'hris:employee:7721@version-45');
  for (const id of ['read-1', 'OFF-2048:a']) {
    const again = await confirm(id);
    assert.equal(again.status, 409, again.text);
    assert.equal(again.body.error.code, 'EXECUTION_NOT_CONFIRMABLE');
  }
});

test('§17: the queue pages oldest first, `next` going back as `from`', async () => {
  at('2026-08-24T18:00:00+07:00');
  const read = (id: string, n: number) => ({
    execution_id: id,
    phase: 'execute' as const,
    envelope: { ...offboardingBody().envelope, execute_after: undefined, authoritative_event: undefined },
    action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721', n } },
  });
  assert.equal((await decide(read('q-1', 1))).state, 'invoking');
  at('2026-08-24T18:01:00+07:00');
  assert.equal((await decide(read('q-2', 2))).state, 'invoking');
  const first = await call(s, 'GET', '/v1/executions?state=invoking&limit=1', { token: t().reconciler });
  assert.equal(first.status, 200, first.text);
  assert.deepEqual(
    first.body.executions.map((e: { execution_id: string }) => e.execution_id),
    ['q-1'],
  );
  assert.equal(typeof first.body.next, 'string');
  const second = await call(s, 'GET', `/v1/executions?state=invoking&limit=1&from=${first.body.next}`, { token: t().reconciler });
  assert.deepEqual(
    second.body.executions.map((e: { execution_id: string }) => e.execution_id),
    ['q-2'],
  );
  assert.equal(second.body.next, null);
  assert.equal((await call(s, 'GET', '/v1/executions?state=invoking&from=bogus', { token: t().reconciler })).status, 400);
  // Ended by their outcomes, they leave the queue.
  for (const id of ['q-1', 'q-2'])
    assert.equal((await call(s, 'POST', `/v1/executions/${id}/outcome`, { token: t().pep, body: { status: 'unknown' } })).status, 200);
  assert.equal((await call(s, 'GET', '/v1/executions?state=invoking', { token: t().reconciler })).body.executions.length, 0);
  const unknown = await call(s, 'GET', '/v1/executions?state=unknown', { token: t().auditor });
  assert.deepEqual(
    unknown.body.executions.map((e: { execution_id: string; since: string }) => [e.execution_id, e.since]),
    [
      ['q-1', '2026-08-24T11:01:00.000Z'],
      ['q-2', '2026-08-24T11:01:00.000Z'],
    ],
  );
});
