// The replay core on hand-made records: what counts as changed, and AuthZEN records without an AuthZEN decider.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { PolicyEngine } from '../../src/policy/engine.js';
import { loadPolicyDir } from '../../src/policy/load.js';
import { decisionChanged, sameReasonSet } from '../../src/replay/diff.js';
import { Replayer } from '../../src/replay/replayer.js';
import { REPO } from '../helpers/server.js';

test('changed = a different decision, or reasons that differ as a set (order and repeats do not count)', () => {
  assert.equal(sameReasonSet(['a', 'b'], ['b', 'a', 'a']), true);
  assert.equal(sameReasonSet(['a'], ['a', 'b']), false);
  assert.equal(decisionChanged({ decision: 'deny', reasons: ['a', 'b'] }, { decision: 'deny', reasons: ['b', 'a'] }), false);
  assert.equal(decisionChanged({ decision: 'deny', reasons: ['a'] }, { decision: 'approval_required', reasons: ['a'] }), true);
  assert.equal(decisionChanged({ decision: 'allow', reasons: [] }, { decision: 'allow', reasons: ['p'] }), true);
});

test('AuthZEN records are counted, not guessed at, when no AuthZEN decider is given', () => {
  const replayer = new Replayer(new PolicyEngine(loadPolicyDir(join(REPO, 'policies'))));
  const change = replayer.push({
    v: 1,
    seq: 0,
    kind: 'decision',
    api: 'authzen',
    subject: { type: 'user', id: 'a' },
    action: { name: 'read' },
    resource: { type: 'doc', id: 'd' },
    context: {},
    decision: 'allow',
    reasons: ['x'],
    errors: [],
    obligations: [],
    entities_version: 'sha256:x',
    now: '2026-08-24T08:00:00.000Z',
  });
  assert.equal(change, undefined);
  assert.deepEqual([replayer.counts.replayed, replayer.counts.authzenSkipped], [0, 1]);
});

test('a decision record that cannot be rebuilt is refused, naming its seq', () => {
  const replayer = new Replayer(new PolicyEngine(loadPolicyDir(join(REPO, 'policies'))));
  assert.throws(() => replayer.push({ v: 1, seq: 7, kind: 'decision', decision: 'allow', reasons: [] }), /seq 7: the decision record has no envelope/);
  assert.throws(
    () =>
      replayer.push({
        v: 1,
        seq: 8,
        kind: 'decision',
        decision: 'allow',
        reasons: [],
        phase: 'propose',
        now: '2026-08-24T08:00:00.000Z',
        server: 'idp',
        tool: 't',
        binding: 'b',
        actor: { type: 'Agent', id: 'a' },
        envelope: { subject: { type: 'Employee', id: '1' } },
        arguments: { x: { __entity: { type: 'Role', id: 'hr' } } },
      }),
    /seq 8: stored arguments are not admissible/,
  );
});
