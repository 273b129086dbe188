/**
 * Black-box walk of docs/protocol.md §4, §5, §6 (auditor routes) and §8 over HTTP against the real server,
 * with the PDP clock pinned through `clock_file` to replay the offboarding story.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, decide, offboardingBody, readEmployeeBody, startTestServer, type TestServer } from '../helpers/server.js';
import { pinnedClock, type PinnedClock } from '../helpers/clock.js';
import { exportLedger, verifyExport } from '../helpers/ledger-export.js';
import { approvalOf, offboardingEmployee } from '../helpers/offboarding.js';

const AGENT = 'Agent%3A%3A%22offboarding-agent-prod%22';

describe('decisions, executions, approvals and the ledger over HTTP', () => {
  let s: TestServer;
  let clock: PinnedClock;
  const setClock = (t: string) => clock.set(t);

  before(async () => {
    clock = pinnedClock('2026-08-24T15:30:00+07:00');
    s = await startTestServer({ clockFile: clock.file });
  });
  after(async () => {
    const code = await s.stop();
    clock.dispose();
    assert.equal(code, 0, 'SIGTERM exits 0');
  });

  test('the offboarding story: approval_required → approve → early deny → allow → committed', async () => {
    const t = s.tokens;
    setClock('2026-08-24T15:30:00+07:00');
    const proposed = await decide(s, offboardingBody());
    assert.equal(proposed.status, 200, proposed.text);
    assert.equal(proposed.body.decision, 'approval_required');
    assert.equal(proposed.body.state, 'proposed');
    assert.deepEqual(proposed.body.obligations, [{ policy: 'hr-approval-required', approver_group: 'Role::"hr"' }]);
    assert.deepEqual(proposed.body.reasons, ['hr-approval-required']);
    assert.deepEqual(proposed.body.arguments, { employee_id: '7721' });
    assert.match(proposed.body.binding, /^writ-bind\/1:sha256:[0-9a-f]{64}$/);
    assert.match(proposed.body.envelope_digest, /^sha256:[0-9a-f]{64}$/);
    assert.match(proposed.body.policy_version, /^sha256:/);
    assert.match(proposed.body.entities_version, /^sha256:/);
    assert.equal(typeof proposed.body.record.seq, 'number');

    const approvalBody = approvalOf(offboardingBody(), proposed.body, '2026-08-24T20:00:00+07:00');
    // An approver outside HR may approve, but that does not satisfy the policy.
    const itApproval = await call(s, 'POST', '/v1/approvals', { token: t.approver2, body: approvalBody });
    assert.equal(itApproval.status, 201, itApproval.text);
    setClock('2026-08-24T15:40:00+07:00');
    const hrApproval = await call(s, 'POST', '/v1/approvals', { token: t.approver, body: approvalBody });
    assert.equal(hrApproval.status, 201, hrApproval.text);
    assert.match(hrApproval.body.approval_id, /\S/);

    setClock('2026-08-24T16:00:00+07:00');
    const early = await decide(s, offboardingBody({ phase: 'execute' }));
    assert.equal(early.status, 200, early.text);
    assert.equal(early.body.decision, 'deny');
    assert.ok(early.body.reasons.includes('not-before-execute-after'));
    assert.equal(early.body.state, 'proposed');

    setClock('2026-08-24T17:05:00+07:00');
    const allowed = await decide(s, offboardingBody({ phase: 'execute' }));
    assert.equal(allowed.status, 200, allowed.text);
    assert.equal(allowed.body.decision, 'allow');
    assert.equal(allowed.body.state, 'invoking');
    assert.equal(allowed.body.approval_used, hrApproval.body.approval_id);

    const again = await decide(s, offboardingBody({ phase: 'execute' }));
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'EXECUTION_IN_FLIGHT');

    const done = await call(s, 'POST', '/v1/executions/OFF-2048:disable-sign-in/outcome', {
      token: t.pep,
      body: { status: 'committed', downstream_ref: 'idp:audit:1' },
    });
    assert.equal(done.status, 200, done.text);
    assert.equal(done.body.state, 'committed');
    const twice = await call(s, 'POST', '/v1/executions/OFF-2048:disable-sign-in/outcome', { token: t.pep, body: { status: 'committed' } });
    assert.equal(twice.body.error.code, 'EXECUTION_TERMINAL');
    const retry = await decide(s, offboardingBody({ phase: 'execute' }));
    assert.equal(retry.status, 409);
    assert.equal(retry.body.error.code, 'EXECUTION_TERMINAL');

    const view = await call(s, 'GET', '/v1/executions/OFF-2048:disable-sign-in', { token: t.pep });
    assert.equal(view.status, 200);
    assert.equal(view.body.state, 'committed');
    assert.deepEqual(view.body.actor, { type: 'Agent', id: 'offboarding-agent-prod' });
    assert.equal(view.body.approvals.length, 2);
    assert.ok(view.body.records.length >= 7, JSON.stringify(view.body.records));
    const audited = await call(s, 'GET', `/v1/executions/OFF-2048:disable-sign-in?actor=${AGENT}`, { token: t.auditor });
    assert.deepEqual(audited.body, view.body);
    const refusals = await call(s, 'GET', '/v1/ledger/records?kind=refusal&execution_id=OFF-2048:disable-sign-in', { token: t.auditor });
    assert.equal(refusals.body.records.length, 3);
  });

  test('a changed fact invalidates an approval; legal hold denies', async () => {
    const t = s.tokens;
    setClock('2026-08-24T15:30:00+07:00');
    const body = offboardingBody({
      execution_id: 'OFF-3000:disable',
      envelope: { subject: { type: 'Employee', id: '7722' } },
      action: { arguments: { employee_id: '7722' } },
    });
    // Employee 7722 is created by the admin for this test.
    const put = await call(s, 'PUT', '/v1/entities/Employee/7722', { token: t.admin, body: offboardingEmployee({ employee_id: '7722' }) });
    assert.equal(put.status, 200, put.text);
    const p = await decide(s, body);
    assert.equal(p.body.decision, 'approval_required', p.text);
    const a = await call(s, 'POST', '/v1/approvals', { token: t.approver, body: approvalOf(body, p.body, '2026-08-24T23:00:00+07:00') });
    assert.equal(a.status, 201);
    setClock('2026-08-24T17:30:00+07:00');
    // The subject's record changes: the approval no longer counts.
    const changed = await call(s, 'PUT', '/v1/entities/Employee/7722', {
      token: t.admin,
      body: offboardingEmployee({ employee_id: '7722', status: 'terminating' }),
    });
    assert.equal(changed.status, 200);
    assert.notEqual(changed.body.entities_version, put.body.entities_version);
    const e1 = await decide(s, { ...body, phase: 'execute' });
    assert.equal(e1.body.decision, 'approval_required', e1.text);
    const v = await call(s, 'GET', `/v1/executions/${body.execution_id}`, { token: t.pep });
    assert.equal(v.body.approvals[0].valid, false);
    assert.equal(v.body.approvals[0].invalid_reason, 'subject_changed');
    // Legal hold: deny, even with a fresh approval.
    await call(s, 'PUT', '/v1/entities/Employee/7722', {
      token: t.admin,
      body: offboardingEmployee({ employee_id: '7722', status: 'terminating', legal_hold: true }),
    });
    const a2 = await call(s, 'POST', '/v1/approvals', { token: t.approver, body: approvalOf(body, p.body, '2026-08-24T23:00:00+07:00') });
    assert.equal(a2.status, 201);
    const e2 = await decide(s, { ...body, phase: 'execute' });
    assert.equal(e2.body.decision, 'deny', e2.text);
    assert.ok(e2.body.reasons.includes('legal-hold'));
    // Revocation: only by the approver who gave it.
    const wrong = await call(s, 'POST', `/v1/approvals/${a2.body.approval_id}/revoke`, { token: t.approver2 });
    assert.equal(wrong.status, 403);
    assert.equal(wrong.body.error.code, 'FORBIDDEN_ROLE');
    const ok = await call(s, 'POST', `/v1/approvals/${a2.body.approval_id}/revoke`, { token: t.approver });
    assert.equal(ok.status, 200, ok.text);
    // Revoking twice answers the first revocation, record included; no second revocation is ledgered.
    const again = await call(s, 'POST', `/v1/approvals/${a2.body.approval_id}/revoke`, { token: t.approver });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.body, ok.body);
    const entity = await call(s, 'GET', '/v1/entities/Employee/7722', { token: t.auditor });
    assert.equal(entity.body.attrs.legal_hold, true);
  });

  test('approvals are bound to one execution, binding and envelope', async () => {
    const t = s.tokens;
    setClock('2026-08-24T15:30:00+07:00');
    // Another call than OFF-2048's, which ran: the same one would be a duplicate consequence (§17).
    const body = offboardingBody({ execution_id: 'OFF-4000:disable', action: { arguments: { employee_id: '7721', ticket: 'OFF-4000' } } });
    const p = await decide(s, body);
    const base = approvalOf(body, p.body, '2026-08-24T20:00:00+07:00');
    for (const wrong of [
      { ...base, binding: `writ-bind/1:sha256:${'0'.repeat(64)}` },
      { ...base, envelope_digest: `sha256:${'0'.repeat(64)}` },
      { ...base, execution_id: 'OFF-4000:other' },
      { ...base, actor: { type: 'Agent', id: 'other-agent' } },
    ]) {
      const r = await call(s, 'POST', '/v1/approvals', { token: t.approver, body: wrong });
      assert.equal(r.status, 409, r.text);
      assert.equal(r.body.error.code, 'APPROVAL_STALE');
    }
    // Each stale approval is ledgered as a refusal naming the approver and what was approved; the two
    // aimed at this execution are among its records.
    const stale = await call(s, 'GET', '/v1/ledger/records?kind=refusal&limit=1000', { token: t.auditor });
    const mine = stale.body.records.filter((r: any) => r.code === 'APPROVAL_STALE' && r.execution_id.startsWith('OFF-4000:'));
    assert.equal(mine.length, 4, stale.text);
    for (const r of mine) {
      assert.equal(r.attempted.kind, 'approval');
      assert.ok(r.approver && typeof r.approver.type === 'string' && typeof r.approver.id === 'string', JSON.stringify(r));
      assert.ok(typeof r.attempted.expires_at === 'string');
    }
    const exec = await call(s, 'GET', '/v1/executions/OFF-4000:disable', { token: t.pep });
    const ownRefusals = mine.filter((r: any) => r.execution_id === 'OFF-4000:disable' && r.actor.id === body.envelope.actor.id).map((r: any) => r.seq);
    assert.equal(ownRefusals.length, 2);
    for (const seq of ownRefusals) assert.ok(exec.body.records.includes(seq), exec.text);
    const past = await call(s, 'POST', '/v1/approvals', { token: t.approver, body: { ...base, expires_at: '2026-08-24T15:00:00+07:00' } });
    assert.equal(past.status, 400);
    assert.equal(past.body.error.code, 'INVALID_REQUEST');
    const far = await call(s, 'POST', '/v1/approvals', { token: t.approver, body: { ...base, expires_at: '2026-09-24T15:00:00+07:00' } });
    assert.equal(far.body.error.code, 'INVALID_REQUEST');
    const pepApproves = await call(s, 'POST', '/v1/approvals', { token: t.pep, body: base });
    assert.equal(pepApproves.body.error.code, 'FORBIDDEN_ROLE');
    // An approval that expires stops counting.
    const short = await call(s, 'POST', '/v1/approvals', { token: t.approver, body: { ...base, expires_at: '2026-08-24T17:10:00+07:00' } });
    assert.equal(short.status, 201);
    setClock('2026-08-24T17:20:00+07:00');
    const e = await decide(s, { ...body, phase: 'execute' });
    assert.equal(e.body.decision, 'approval_required');
    const v = await call(s, 'GET', `/v1/executions/${body.execution_id}`, { token: t.pep });
    assert.equal(v.body.approvals[0].invalid_reason, 'expired');
  });

  test('conflicts, actor isolation and 20 concurrent executes', async () => {
    const t = s.tokens;
    setClock('2026-08-24T15:30:00+07:00');
    const first = await decide(s, readEmployeeBody('R-1', { phase: 'propose' }));
    assert.equal(first.body.decision, 'allow', first.text);
    assert.equal(first.body.state, 'proposed');
    const conflict = await decide(s, readEmployeeBody('R-1', { phase: 'propose', args: { employee_id: '7722' } }));
    assert.equal(conflict.status, 409);
    assert.equal(conflict.body.error.code, 'EXECUTION_CONFLICT');
    const envConflict = await decide(s, {
      ...readEmployeeBody('R-1', { phase: 'propose' }),
      envelope: { ...readEmployeeBody('R-1').envelope, purpose: 'other' },
    });
    assert.equal(envConflict.body.error.code, 'EXECUTION_CONFLICT');
    // Another actor's token cannot see or act on it, and cannot claim another actor.
    const other = await call(s, 'GET', '/v1/executions/R-1', { token: t.pep2 });
    assert.equal(other.status, 404);
    assert.equal(other.body.error.code, 'EXECUTION_NOT_FOUND');
    const mismatch = await decide(s, readEmployeeBody('R-1'), { token: t.pep2 });
    assert.equal(mismatch.status, 403);
    assert.equal(mismatch.body.error.code, 'ACTOR_MISMATCH');
    const notInvoking = await call(s, 'POST', '/v1/executions/R-1/outcome', { token: t.pep, body: { status: 'committed' } });
    assert.equal(notInvoking.body.error.code, 'EXECUTION_NOT_INVOKING');

    const results = await Promise.all(Array.from({ length: 20 }, () => decide(s, readEmployeeBody('R-CONC'))));
    const wins = results.filter((r) => r.status === 200);
    assert.equal(wins.length, 1, JSON.stringify(results.map((r) => r.status)));
    assert.equal(wins[0]!.body.state, 'invoking');
    for (const r of results.filter((x) => x.status !== 200)) {
      assert.equal(r.status, 409);
      assert.equal(r.body.error.code, 'EXECUTION_IN_FLIGHT');
    }
  });

  test('unknown outcome, reconciliation and supersession', async () => {
    const t = s.tokens;
    assert.equal((await decide(s, readEmployeeBody('U-1'))).body.state, 'invoking');
    const unknown = await call(s, 'POST', '/v1/executions/U-1/outcome', { token: t.pep, body: { status: 'unknown', detail: 'timeout' } });
    assert.equal(unknown.body.state, 'unknown');
    const retry = await decide(s, readEmployeeBody('U-1'));
    assert.equal(retry.body.error.code, 'EXECUTION_TERMINAL');
    const notUnknown = await call(s, 'POST', `/v1/executions/R-1/reconcile?actor=${AGENT}`, {
      token: t.reconciler,
      body: { resolution: 'absent', evidence_ref: 'x' },
    });
    assert.equal(notUnknown.status, 409);
    const cannot = await call(s, 'POST', `/v1/executions/U-1/reconcile?actor=${AGENT}`, {
      token: t.reconciler,
      body: { resolution: 'could_not_determine', evidence_ref: 'x' },
    });
    assert.equal(cannot.status, 400);
    assert.equal(cannot.body.error.code, 'INVALID_REQUEST');
    assert.equal((await call(s, 'GET', '/v1/executions/U-1', { token: t.pep })).body.state, 'unknown');
    const rec = await call(s, 'POST', `/v1/executions/U-1/reconcile?actor=${AGENT}`, {
      token: t.reconciler,
      body: { resolution: 'absent', evidence_ref: 'hris:audit:7' },
    });
    assert.equal(rec.status, 200, rec.text);
    assert.equal(rec.body.state, 'reconciled');
    const v = await call(s, 'GET', '/v1/executions/U-1', { token: t.pep });
    assert.equal(v.body.resolution, 'absent');
    const next = await decide(s, readEmployeeBody('U-2', { supersedes: 'U-1' }));
    assert.equal(next.status, 200, next.text);
    assert.equal(next.body.decision, 'allow');
    const second = await decide(s, readEmployeeBody('U-3', { supersedes: 'U-1' }));
    assert.equal(second.status, 409);
    assert.equal(second.body.error.code, 'EXECUTION_SUPERSEDED');
    const missing = await decide(s, readEmployeeBody('U-4', { supersedes: 'NOPE' }));
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'EXECUTION_NOT_FOUND');
    const view = await call(s, 'GET', '/v1/executions/U-1', { token: t.pep });
    assert.equal(view.body.superseded_by, 'U-2');
    assert.equal((await call(s, 'GET', '/v1/executions/U-2', { token: t.pep })).body.supersedes, 'U-1');
  });

  test('errors of §8 in the contract shape', async () => {
    const t = s.tokens;
    const bad = async (init: Parameters<typeof call>[3], status: number, code: string, path = '/v1/decisions', method = 'POST') => {
      const r = await call(s, method, path, init);
      assert.equal(r.status, status, `${code}: ${r.text}`);
      assert.equal(r.body.error.code, code, r.text);
      assert.equal(typeof r.body.error.message, 'string');
      return r;
    };
    await bad({ body: offboardingBody() }, 401, 'UNAUTHENTICATED');
    await bad({ token: 'nope', body: offboardingBody() }, 401, 'UNAUTHENTICATED');
    await bad({ token: t.auditor, body: offboardingBody() }, 403, 'FORBIDDEN_ROLE');
    await bad({ token: t.pep, rawBody: '{"execution_id":' }, 400, 'INVALID_JSON');
    await bad({ token: t.pep, rawBody: JSON.stringify(offboardingBody()), headers: { 'content-type': 'text/plain' } }, 415, 'UNSUPPORTED_MEDIA_TYPE');
    await bad({ token: t.pep, rawBody: `{"a":"${'x'.repeat(1024 * 1024 + 10)}"}` }, 413, 'PAYLOAD_TOO_LARGE');
    const { execution_id: _drop, ...noId } = offboardingBody();
    await bad({ token: t.pep, body: noId }, 400, 'INVALID_REQUEST');
    await bad({ token: t.pep, body: offboardingBody({ envelope: { execute_after: '2026-02-30T10:00:00Z' } }) }, 400, 'ENVELOPE_INVALID');
    await bad({ token: t.pep, body: offboardingBody({ envelope: { extra: 1 } }) }, 400, 'ENVELOPE_INVALID');
    await bad({ token: t.pep, body: offboardingBody({ envelope: { requester: { type: 'User', id: 'm', x: 1 } } }) }, 400, 'ENVELOPE_INVALID');
    const lossy = await bad(
      { token: t.pep, rawBody: JSON.stringify(offboardingBody({ execution_id: 'B-1' })).replace('"employee_id":"7721"', '"employee_id":1.0') },
      400,
      'BINDING_LOSSY_NUMBER',
    );
    assert.equal(lossy.body.error.path, '/action/arguments/employee_id');
    await bad(
      {
        token: t.pep,
        rawBody: JSON.stringify(offboardingBody({ execution_id: 'B-2' })).replace('"employee_id":"7721"', '"employee_id":"7721","employee_id":"7721"'),
      },
      400,
      'BINDING_DUPLICATE_KEY',
    );
    await bad({ token: t.pep, rawBody: Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]) }, 400, 'INVALID_JSON');
    await bad({ token: t.pep }, 404, 'EXECUTION_NOT_FOUND', '/v1/executions/never-seen', 'GET');
    await bad({ token: t.auditor }, 404, 'NOT_FOUND', '/v1/nothing-here', 'GET');
    await bad({ token: t.pep }, 403, 'FORBIDDEN_ROLE', '/v1/ledger/records', 'GET');
    assert.equal((await call(s, 'GET', '/healthz')).status, 200);
    assert.equal((await call(s, 'GET', '/readyz')).status, 200);
    const metrics = await call(s, 'GET', '/metrics');
    assert.match(metrics.text, /decisions_total/);
    // Every answer is counted by route pattern and status, whichever thread answered it; refusals by code.
    for (const series of [
      'writ_http_requests_total{route="/v1/decisions",status="400"}',
      'writ_http_requests_total{route="/v1/decisions",status="413"}',
      'writ_http_requests_total{route="/v1/executions/:id",status="404"}',
      'writ_http_requests_total{route="/v1/ledger/records",status="403"}',
      'writ_http_requests_total{route="unmatched",status="404"}',
      'writ_http_requests_total{route="/readyz",status="200"}',
      'writ_refusals_total{code="BINDING_LOSSY_NUMBER"}',
      'writ_refusals_total{code="PAYLOAD_TOO_LARGE"}',
    ]) {
      assert.ok(
        metrics.text.split('\n').some((line) => line.startsWith(`${series} `) && Number(line.slice(series.length + 1)) >= 1),
        series,
      );
    }
    const openapi = await call(s, 'GET', '/openapi.json');
    assert.ok(openapi.body.paths['/v1/decisions']);
  });

  test('auditor routes: records, proofs, keys, checkpoint, and an export that verifies offline', async () => {
    const t = s.tokens;
    const page = await call(s, 'GET', '/v1/ledger/records?from=0&limit=5', { token: t.auditor });
    assert.equal(page.body.records.length, 5);
    assert.equal(page.body.records[0].seq, 0);
    assert.equal(page.body.records[0].kind, 'key');
    assert.equal(page.body.next, 5);
    const one = await call(s, 'GET', '/v1/ledger/records/3', { token: t.auditor });
    assert.equal(one.body.seq, 3);
    const keys = await call(s, 'GET', '/v1/ledger/keys', { token: t.auditor });
    assert.equal(keys.body.keys.length, 1);
    const cp = await call(s, 'GET', '/v1/ledger/checkpoint', { token: t.auditor });
    assert.equal(cp.body.kind, 'checkpoint');
    const exported = await exportLedger(s);
    const size = exported.records.length;
    const inc = await call(s, 'GET', `/v1/ledger/proofs/inclusion?seq=2&size=${size}`, { token: t.auditor });
    assert.ok(Array.isArray(inc.body.path));
    const cons = await call(s, 'GET', `/v1/ledger/proofs/consistency?from=${cp.body.size}&to=${size}`, { token: t.auditor });
    assert.ok(Array.isArray(cons.body.path));
    const v = verifyExport(exported.text, keys.body, cp.body);
    assert.equal(v.status, 0, v.raw);
    assert.equal(v.out.ok, true);
    assert.equal(v.out.records, size);
    assert.equal(v.out.head, exported.records[size - 1].hash);
  });
});
