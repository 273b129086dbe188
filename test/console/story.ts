/**
 * The offboarding story of test/http/offboarding-story.test.ts, replayed to fill a ledger for the
 * console tests: approval_required → approval → deny (too early) → the subject changes → approval
 * invalid → legal hold → deny → hold lifted, fresh approval → allow → outcome committed.
 */
import assert from 'node:assert/strict';
import { offboardingSteps } from '../helpers/offboarding.js';
import { call, offboardingBody, type TestServer } from '../helpers/server.js';

export const STORY_EXECUTION = 'OFF-2048:disable-sign-in';
export const STORY_ACTOR = 'Agent::"offboarding-agent-prod"';

/** Runs the story; `at` pins the PDP clock (the server's clock file). */
export async function runOffboardingStory(s: TestServer, at: (t: string) => void): Promise<void> {
  const t = s.tokens;
  const steps = offboardingSteps(s);
  const { propose, execute, approve, putEmployee } = steps;
  const decide = async (body: unknown, expected: string) => {
    const r = await steps.decide(body);
    assert.equal(r.decision, expected, JSON.stringify(r));
    return r;
  };

  at('2026-08-24T15:30:00+07:00');
  const p = await decide(propose, 'approval_required');
  at('2026-08-24T15:35:00+07:00');
  await approve(p);
  at('2026-08-24T16:30:00+07:00');
  await decide(execute, 'deny');
  at('2026-08-24T16:45:00+07:00');
  await putEmployee({ status: 'termination_delayed' });
  at('2026-08-24T17:01:00+07:00');
  await decide(execute, 'approval_required');
  await putEmployee({ status: 'termination_delayed', legal_hold: true });
  await approve(p);
  await decide(execute, 'deny');
  await putEmployee({ status: 'terminated', legal_hold: false });
  at('2026-08-24T17:10:00+07:00');
  await approve(p);
  await decide(execute, 'allow');
  const outcome = await call(s, 'POST', `/v1/executions/${encodeURIComponent(propose.execution_id)}/outcome`, {
    token: t.pep,
    body: { status: 'committed', confirmation: 'system_of_record', downstream_ref: 'idp:event:5521' },
  });
  assert.equal(outcome.status, 200, outcome.text);
}

/** More traffic for the ledger page: `n` proposals of other executions, spread over a few minutes. */
export async function runBackgroundTraffic(s: TestServer, at: (t: string) => void, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    at(`2026-08-24T17:${String(12 + Math.floor(i / 8)).padStart(2, '0')}:${String((i * 7) % 60).padStart(2, '0')}+07:00`);
    // A mix per the bundled policies: reading a record is allowed, disabling sign-in needs HR, and
    // a call naming another employee than the subject is denied.
    const action = [
      { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } },
      { server: 'idp', tool: 'disable_sign_in', arguments: { employee_id: '7721' } },
      { server: 'idp', tool: 'disable_sign_in', arguments: { employee_id: '0000' } },
    ][i % 3]!;
    const body = offboardingBody({ execution_id: `OFF-${3000 + i}:${action.tool}`, envelope: { task_id: `OFF-${3000 + i}` }, action });
    const r = await call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, body });
    assert.equal(r.status, 200, r.text);
  }
}
