import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyOutcome, applyReconcile, checkDecisionAllowed, stateAfterDecision, takeSupersedeSlot, type Execution } from '../../src/executions/machine.js';

const base: Execution = {
  execution_id: 'E-1',
  actor: { type: 'Agent', id: 'a' },
  state: 'proposed',
  binding: 'b1',
  envelope_digest: 'd1',
  subject: { type: 'Employee', id: '1' },
  server: 's',
  tool: 't',
  approvals: [],
  records: [0],
};
const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as { code: string }).code;
  }
  return 'none';
};

test('decisions: terminal wins over conflict; conflict over in-flight', () => {
  for (const state of ['committed', 'rejected', 'unknown', 'reconciled'] as const) {
    assert.equal(
      code(() => checkDecisionAllowed({ ...base, state }, { phase: 'execute', binding: 'other', envelope_digest: 'd1' })),
      'EXECUTION_TERMINAL',
    );
  }
  assert.equal(
    code(() => checkDecisionAllowed({ ...base, state: 'invoking' }, { phase: 'execute', binding: 'other', envelope_digest: 'd1' })),
    'EXECUTION_CONFLICT',
  );
  assert.equal(
    code(() => checkDecisionAllowed(base, { phase: 'propose', binding: 'b1', envelope_digest: 'd2' })),
    'EXECUTION_CONFLICT',
  );
  assert.equal(
    code(() => checkDecisionAllowed({ ...base, state: 'invoking' }, { phase: 'execute', binding: 'b1', envelope_digest: 'd1' })),
    'EXECUTION_IN_FLIGHT',
  );
  assert.equal(
    code(() => checkDecisionAllowed(base, { phase: 'execute', binding: 'b1', envelope_digest: 'd1' })),
    'none',
  );
});

test('only an allowed execute invokes', () => {
  assert.equal(stateAfterDecision('execute', 'allow'), 'invoking');
  assert.equal(stateAfterDecision('execute', 'deny'), 'proposed');
  assert.equal(stateAfterDecision('execute', 'approval_required'), 'proposed');
  assert.equal(stateAfterDecision('propose', 'allow'), 'proposed');
});

test('outcomes only from invoking', () => {
  for (const s of ['committed', 'rejected', 'unknown'] as const) assert.equal(applyOutcome({ ...base, state: 'invoking' }, s).state, s);
  assert.equal(
    code(() => applyOutcome(base, 'committed')),
    'EXECUTION_NOT_INVOKING',
  );
  assert.equal(
    code(() => applyOutcome({ ...base, state: 'unknown' }, 'committed')),
    'EXECUTION_TERMINAL',
  );
});

test('reconcile only from unknown', () => {
  const r = applyReconcile({ ...base, state: 'unknown' }, 'absent');
  assert.equal(r.state, 'reconciled');
  assert.equal(r.resolution, 'absent');
  assert.equal(
    code(() => applyReconcile({ ...base, state: 'invoking' }, 'absent')),
    'EXECUTION_NOT_UNKNOWN',
  );
  assert.equal(
    code(() => applyReconcile({ ...base, state: 'committed' }, 'absent')),
    'EXECUTION_TERMINAL',
  );
  assert.equal(
    code(() => applyReconcile(r, 'committed')),
    'EXECUTION_TERMINAL',
  );
});

test('supersede slot is taken once', () => {
  const t = takeSupersedeSlot({ ...base, state: 'unknown' }, 'E-2', 'E-1');
  assert.equal(t.superseded_by, 'E-2');
  assert.equal(takeSupersedeSlot(t, 'E-2', 'E-1').superseded_by, 'E-2');
  assert.equal(
    code(() => takeSupersedeSlot(t, 'E-3', 'E-1')),
    'EXECUTION_SUPERSEDED',
  );
  assert.equal(
    code(() => takeSupersedeSlot(undefined, 'E-3', 'E-9')),
    'EXECUTION_NOT_FOUND',
  );
});
