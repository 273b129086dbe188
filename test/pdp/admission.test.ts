// The evaluator's input of an admitted decision (src/pdp/admission.ts evaluationInputOf), the one the
// writer's own decisions and the fronts' both evaluate: every member from the request or the facts
// given, `supersedes` only when there is one, the members in one order on both paths.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { admitDecision, evaluationInputOf } from '../../src/pdp/admission.js';
import { DEFAULT_ADMISSION_LIMITS } from '../../src/binding/limits.js';
import { StaticEntitySource } from '../../src/policy/entities.js';
import { noPrior } from '../../src/executions/prior.js';
import type { Caller } from '../../src/identity/caller.js';

const caller = { role: 'pep', name: 'test-pep', actor: { type: 'Agent', id: 'a-1' } } as Caller;
const body = {
  execution_id: 'X-1',
  phase: 'execute',
  envelope: {
    task_id: 'T-1',
    purpose: 'p',
    requester: { type: 'User', id: 'u-1' },
    actor: { type: 'Agent', id: 'a-1' },
    subject: { type: 'Employee', id: '7721' },
  },
  action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721', limit: 1.5 } },
};

test('evaluationInputOf: the request members from admission, the rest from the facts, supersedes only when given', () => {
  const admitted = admitDecision(caller, JSON.stringify(body), DEFAULT_ADMISSION_LIMITS);
  const entities = new StaticEntitySource([]);
  const now = new Date('2026-08-24T10:00:00Z');
  const approvals = [{ approval_id: 'ap-1', approver: { type: 'User', id: 'm-1' }, approved_at: '2026-08-24T09:00:00Z', expires_at: '2026-08-25T09:00:00Z' }];
  const fresh = evaluationInputOf(admitted, { now, approvals: [], prior: noPrior(), entities });
  assert.deepEqual(Object.keys(fresh), [
    'actor',
    'server',
    'tool',
    'subject',
    'envelope',
    'phase',
    'binding',
    'cedarArguments',
    'now',
    'approvals',
    'prior',
    'entities',
  ]);
  assert.deepEqual(fresh.actor, { type: 'Agent', id: 'a-1' });
  assert.deepEqual(fresh.subject, body.envelope.subject);
  assert.equal(fresh.envelope, admitted.envelope);
  assert.equal(fresh.server, 'hris');
  assert.equal(fresh.tool, 'read_employee');
  assert.equal(fresh.phase, 'execute');
  assert.equal(fresh.binding, admitted.bound.binding);
  assert.equal(fresh.cedarArguments, admitted.bound.cedar);
  assert.equal(fresh.now, now);
  assert.equal(fresh.entities, entities);
  const supersedes = { execution_id: 'X-0', state: 'unknown', resolution: 'absent' as const };
  const retry = evaluationInputOf(admitted, { now, approvals, supersedes, prior: noPrior(), entities });
  assert.deepEqual(Object.keys(retry), [
    'actor',
    'server',
    'tool',
    'subject',
    'envelope',
    'phase',
    'binding',
    'cedarArguments',
    'now',
    'approvals',
    'supersedes',
    'prior',
    'entities',
  ]);
  assert.equal(retry.supersedes, supersedes);
  assert.equal(retry.approvals, approvals);
  assert.equal('supersedes' in evaluationInputOf(admitted, { now, approvals, supersedes: undefined, prior: noPrior(), entities }), false);
});
