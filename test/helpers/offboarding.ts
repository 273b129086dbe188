/**
 * The steps of the offboarding story (issue 5) over HTTP, shared by the tests that tell it
 * (test/http/offboarding-story.test.ts, test/replay/story.test.ts, test/console/story.ts): the
 * proposal and execute bodies, a decision, an HR approval, and an admin PUT of the subject's record.
 * Each test keeps its own order of steps and its own assertions on what they return.
 */
import assert from 'node:assert/strict';
import { call, offboardingBody, type TestServer } from './server.js';

/** The subject's Employee entity (7721) with `over` applied to its attributes. */
export const offboardingEmployee = (over: Record<string, unknown>) => ({
  attrs: {
    employee_id: '7721',
    status: 'active',
    legal_hold: false,
    manager: { __entity: { type: 'User', id: 'manager-1842' } },
    termination_event: 'hris:termination:99108',
    terminates_at: { __extn: { fn: 'datetime', arg: '2026-08-24T10:00:00Z' } },
    ...over,
  },
  parents: [],
});

/** The body of an approval of decision request `request`, bound to its answer `p` (binding, envelope digest). */
export const approvalOf = (
  request: { execution_id: string; envelope: { actor: unknown } },
  p: { binding: string; envelope_digest: string },
  expires_at: string,
) => ({ actor: request.envelope.actor, execution_id: request.execution_id, binding: p.binding, envelope_digest: p.envelope_digest, expires_at });

export function offboardingSteps(s: TestServer) {
  const t = s.tokens;
  const propose = offboardingBody();
  const execute = offboardingBody({ phase: 'execute' });
  /** POST /v1/decisions as the PEP; the decision body. */
  const decide = async (body: unknown) => {
    const r = await call(s, 'POST', '/v1/decisions', { token: t.pep, body });
    assert.equal(r.status, 200, r.text);
    return r.body;
  };
  /** An HR approval of the proposal `p` (its binding and envelope digest); the approval id. */
  const approve = async (p: { binding: string; envelope_digest: string }) => {
    const r = await call(s, 'POST', '/v1/approvals', { token: t.approver, body: approvalOf(propose, p, '2026-08-24T23:00:00+07:00') });
    assert.equal(r.status, 201, r.text);
    return r.body.approval_id as string;
  };
  /** The admin replaces the subject's record. */
  const putEmployee = async (over: Record<string, unknown>) => {
    const r = await call(s, 'PUT', '/v1/entities/Employee/7721', { token: t.admin, body: offboardingEmployee(over) });
    assert.equal(r.status, 200, r.text);
  };
  return { propose, execute, decide, approve, putEmployee };
}
