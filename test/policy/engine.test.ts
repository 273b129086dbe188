import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildCedarContext, PolicyEngine, type ValidApproval } from '../../src/policy/engine.js';
import { StaticEntitySource } from '../../src/policy/entities.js';
import { loadPolicyDir } from '../../src/policy/load.js';
import { BUNDLED_DIR, ENTITIES, input, tempPolicyDir } from './helpers.js';

function engineFor(files: Record<string, string>): PolicyEngine {
  const { dir, cleanup } = tempPolicyDir(files);
  try {
    return new PolicyEngine(loadPolicyDir(dir));
  } finally {
    cleanup();
  }
}

const PERMIT_ALL = '@id("permit-all") permit(principal, action, resource);';
const NEEDS_HR =
  '@id("needs-hr") @requires_approval("Role::\\"hr\\"") forbid(principal, action, resource) unless { context has approver && context.approver in Role::"hr" };';
const NEEDS_LEGAL =
  '@id("needs-legal") @requires_approval("Role::\\"legal\\"") forbid(principal, action, resource) unless { context has approver && context.approver in Role::"legal" };';
const PLAIN_FORBID = '@id("plain") forbid(principal, action, resource) when { context.arguments.n == 1 };';

function approval(id: string, approver: string, approvedAt: string): ValidApproval {
  return { approval_id: id, approver: { type: 'User', id: approver }, approved_at: approvedAt, expires_at: '2026-08-25T00:00:00Z' };
}

test('buildCedarContext maps the envelope as docs/protocol.md §2', () => {
  const ctx = buildCedarContext(
    input({
      envelope: {
        task_id: 'T-1',
        purpose: 'p',
        requester: { type: 'User', id: 'req' },
        actor: { type: 'Agent', id: 'a1' },
        execute_after: '2026-08-24T17:00:00+07:00',
        authoritative_event: 'hris:1',
        evidence_refs: ['e1'],
        supersedes: 'OLD-1',
        traceparent: 'x',
      },
      phase: 'execute',
      approvals: [approval('late', 'bob', '2026-08-24T09:00:00.25+01:00'), approval('early', 'alice', '2026-08-24T07:00:00Z')],
      supersedes: { execution_id: 'OLD-1', state: 'reconciled', resolution: 'absent' },
    }),
    approval('early', 'alice', '2026-08-24T07:00:00Z'),
  );
  assert.deepEqual(ctx, {
    requester: { __entity: { type: 'User', id: 'req' } },
    task_id: 'T-1',
    purpose: 'p',
    phase: 'execute',
    server: 's',
    tool: 't',
    binding: `writ-bind/1:sha256:${'0'.repeat(64)}`,
    arguments: { n: 1 },
    evidence_refs: ['e1'],
    now: { __extn: { fn: 'datetime', arg: '2026-08-24T10:00:00.000Z' } },
    execute_after: { __extn: { fn: 'datetime', arg: '2026-08-24T17:00:00+0700' } },
    authoritative_event: 'hris:1',
    prior: { committed: 0, unknown: 0, invoking: 0, proposed_allowed: 0 },
    approvals: [
      {
        approver: { __entity: { type: 'User', id: 'alice' } },
        approved_at: { __extn: { fn: 'datetime', arg: '2026-08-24T07:00:00Z' } },
        expires_at: { __extn: { fn: 'datetime', arg: '2026-08-25T00:00:00Z' } },
      },
      {
        approver: { __entity: { type: 'User', id: 'bob' } },
        approved_at: { __extn: { fn: 'datetime', arg: '2026-08-24T09:00:00.250+0100' } },
        expires_at: { __extn: { fn: 'datetime', arg: '2026-08-25T00:00:00Z' } },
      },
    ],
    approver: { __entity: { type: 'User', id: 'alice' } },
    supersedes: { execution_id: 'OLD-1', state: 'reconciled', resolution: 'absent' },
  });
});

test('optional context fields are absent, evidence_refs is an empty set, when the envelope lacks them', () => {
  const ctx = buildCedarContext(input({ envelope: { task_id: 'T', purpose: 'p', requester: { type: 'User', id: 'req' }, execute_after: null } }));
  assert.deepEqual(ctx.evidence_refs, []);
  assert.deepEqual(ctx.approvals, []);
  for (const key of ['execute_after', 'authoritative_event', 'approver', 'supersedes']) assert.ok(!(key in ctx), key);
});

test('allow names the determining permits; deny without any permit has no reasons', () => {
  assert.deepEqual(engineFor({ 'p.cedar': PERMIT_ALL }).evaluate(input()), { decision: 'allow', reasons: ['permit-all'], errors: [], obligations: [] });
  assert.deepEqual(engineFor({ 'p.cedar': 'permit(principal, action, resource) when { false };' }).evaluate(input()), {
    decision: 'deny',
    reasons: [],
    errors: [],
    obligations: [],
  });
});

test('approval_required when every determining forbid requires approval and the rest allows', () => {
  const outcome = engineFor({ 'p.cedar': [PERMIT_ALL, NEEDS_HR, NEEDS_LEGAL].join('\n') }).evaluate(input());
  assert.deepEqual(outcome, {
    decision: 'approval_required',
    reasons: ['needs-hr', 'needs-legal'],
    errors: [],
    obligations: [
      { policy: 'needs-hr', approver_group: 'Role::"hr"' },
      { policy: 'needs-legal', approver_group: 'Role::"legal"' },
    ],
  });
});

test('a plain forbid among the determining ones makes it a deny', () => {
  const outcome = engineFor({ 'p.cedar': [PERMIT_ALL, NEEDS_HR, PLAIN_FORBID].join('\n') }).evaluate(input());
  assert.deepEqual(outcome, { decision: 'deny', reasons: ['needs-hr', 'plain'], errors: [], obligations: [] });
});

test('requires_approval forbids without a permit behind them: deny, not approval_required', () => {
  const outcome = engineFor({ 'p.cedar': NEEDS_HR }).evaluate(input());
  assert.deepEqual(outcome, { decision: 'deny', reasons: ['needs-hr'], errors: [], obligations: [] });
});

test('approvals are tried earliest first; the first that allows is used', () => {
  const engine = engineFor({ 'p.cedar': [PERMIT_ALL, NEEDS_HR].join('\n') });
  const extraHr = { uid: { type: 'User', id: 'carol' }, attrs: {}, parents: [{ type: 'Role', id: 'hr' }] };
  const entities = new StaticEntitySource([...ENTITIES, extraHr]);
  const approvals = [
    approval('carol-later', 'carol', '2026-08-24T09:30:00Z'),
    approval('bob-earliest', 'bob', '2026-08-24T08:00:00Z'),
    approval('alice-earlier', 'alice', '2026-08-24T11:00:00+02:00'),
  ];
  assert.deepEqual(engine.evaluate(input({ approvals, entities })), {
    decision: 'allow',
    reasons: ['permit-all'],
    errors: [],
    obligations: [],
    approval_used: 'alice-earlier',
  });
});

test('approvals given in the same millisecond are tried in the order they were given, not by approval id', () => {
  const engine = engineFor({ 'p.cedar': [PERMIT_ALL, NEEDS_HR].join('\n') });
  const extraHr = { uid: { type: 'User', id: 'carol' }, attrs: {}, parents: [{ type: 'Role', id: 'hr' }] };
  const entities = new StaticEntitySource([...ENTITIES, extraHr]);
  const at = '2026-08-24T08:00:00.000Z';
  for (const [first, second] of [
    ['z-given-first', 'a-given-second'],
    ['a-given-first', 'z-given-second'],
  ] as const) {
    const approvals = [approval(first, 'carol', at), approval(second, 'alice', '2026-08-24T10:00:00+02:00')];
    assert.equal(engine.evaluate(input({ approvals, entities })).approval_used, first);
  }
});

test('approvals that satisfy nothing leave the outcome of the evaluation without approver', () => {
  const engine = engineFor({ 'p.cedar': [PERMIT_ALL, NEEDS_HR].join('\n') });
  const outcome = engine.evaluate(input({ approvals: [approval('legal-only', 'bob', '2026-08-24T08:00:00Z')] }));
  assert.deepEqual(outcome, {
    decision: 'approval_required',
    reasons: ['needs-hr'],
    errors: [],
    obligations: [{ policy: 'needs-hr', approver_group: 'Role::"hr"' }],
  });
});

test('an approver is an entity of the slice: ancestors reach Cedar transitively', () => {
  const engine = engineFor({ 'p.cedar': [PERMIT_ALL, NEEDS_HR].join('\n') });
  const entities = new StaticEntitySource([
    ...ENTITIES,
    { uid: { type: 'Team', id: 'payroll' }, attrs: {}, parents: [{ type: 'Role', id: 'hr' }] },
    { uid: { type: 'User', id: 'dave' }, attrs: {}, parents: [{ type: 'Team', id: 'payroll' }] },
  ]);
  const outcome = engine.evaluate(input({ entities, approvals: [approval('dave', 'dave', '2026-08-24T08:00:00Z')] }));
  assert.equal(outcome.decision, 'allow');
  assert.equal(outcome.approval_used, 'dave');
});

test('fail closed: a forbid that errors denies even though Cedar would allow', () => {
  const engine = engineFor({ 'p.cedar': [PERMIT_ALL, '@id("hold") forbid(principal, action, resource) when { resource.legal_hold };'].join('\n') });
  const outcome = engine.evaluate(input());
  assert.equal(outcome.decision, 'deny');
  assert.deepEqual(outcome.reasons, []);
  assert.equal(outcome.errors.length, 1);
  assert.equal(outcome.errors[0]!.policy, 'hold');
  assert.match(outcome.errors[0]!.message, /legal_hold/);
});

test('fail closed: an entity missing from the store, a malformed envelope, an unconvertible timestamp', () => {
  const engine = engineFor({ 'p.cedar': [PERMIT_ALL, '@id("trusted-only") forbid(principal, action, resource) unless { principal.trusted };'].join('\n') });
  const missing = engine.evaluate(input({ actor: { type: 'Agent', id: 'ghost' } }));
  assert.equal(missing.decision, 'deny');
  assert.match(missing.errors[0]!.message, /does not exist/);
  const noRequester = engine.evaluate(input({ envelope: { task_id: 'T', purpose: 'p' } }));
  assert.equal(noRequester.decision, 'deny');
  assert.match(noRequester.errors[0]!.message, /requester/);
  const badTime = engine.evaluate(input({ envelope: { task_id: 'T', purpose: 'p', requester: { type: 'User', id: 'req' }, execute_after: 'tomorrow' } }));
  assert.equal(badTime.decision, 'deny');
  assert.equal(badTime.errors.length, 1);
});

test('with a schema, a request that fails validation is a deny with errors', () => {
  const engine = engineFor({
    'schema.cedarschema': `
      entity Agent { trusted: Bool }; entity Doc { secret: Bool }; entity User; entity Role;
      action "s/t" appliesTo { principal: Agent, resource: Doc, context: {
        requester: User, task_id: String, purpose: String, phase: String, server: String, tool: String,
        binding: String, arguments: { n: Long }, evidence_refs: Set<String>, now: datetime,
        execute_after?: datetime, authoritative_event?: String,
        approvals: Set<{ approver: User, approved_at: datetime, expires_at: datetime }>, approver?: User,
        supersedes?: { execution_id: String, state: String, resolution?: String },
        prior: { committed: Long, unknown: Long, invoking: Long, proposed_allowed: Long } } };`,
    'p.cedar': '@id("ok") permit(principal, action == Action::"s/t", resource) when { principal.trusted && context.arguments.n == 1 };',
  });
  assert.deepEqual(engine.evaluate(input()), { decision: 'allow', reasons: ['ok'], errors: [], obligations: [] });
  const extra = engine.evaluate(input({ cedarArguments: { n: 1, extra: 'x' } }));
  assert.equal(extra.decision, 'deny');
  assert.match(extra.errors[0]!.message, /extra/);
  const otherTool = engine.evaluate(input({ tool: 'unknown' }));
  assert.equal(otherTool.decision, 'deny');
  assert.ok(otherTool.errors.length > 0);
});

test('the bundled story: propose, early execute, approved execute, legal hold, wrong approver', () => {
  const bundle = loadPolicyDir(BUNDLED_DIR);
  const engine = new PolicyEngine(bundle);
  const entities = new StaticEntitySource(bundle.seedEntities);
  const story = (phase: 'propose' | 'execute', now: string, approvals: ValidApproval[], subject = '7721') =>
    engine.evaluate({
      actor: { type: 'Agent', id: 'offboarding-agent-prod' },
      server: 'idp',
      tool: 'disable_sign_in',
      subject: { type: 'Employee', id: subject },
      envelope: {
        task_id: 'OFF-2048',
        purpose: 'scheduled_employee_offboarding',
        requester: { type: 'User', id: 'manager-1842' },
        execute_after: '2026-08-24T17:00:00+07:00',
      },
      phase,
      binding: `writ-bind/1:sha256:${'1'.repeat(64)}`,
      cedarArguments: { employee_id: subject },
      now: new Date(now),
      approvals,
      entities,
    });
  const hr = {
    approval_id: 'ap-1',
    approver: { type: 'User', id: 'hr-5519' },
    approved_at: '2026-08-24T15:40:00+07:00',
    expires_at: '2026-08-25T15:40:00+07:00',
  };
  const it = { ...hr, approval_id: 'ap-it', approver: { type: 'User', id: 'it-3001' } };
  const proposed = story('propose', '2026-08-24T15:30:00+07:00', []);
  assert.equal(proposed.decision, 'approval_required');
  assert.deepEqual(proposed.obligations, [{ policy: 'hr-approval-required', approver_group: 'Role::"hr"' }]);
  assert.equal(story('execute', '2026-08-24T16:00:00+07:00', [hr]).decision, 'deny');
  assert.deepEqual(story('execute', '2026-08-24T17:00:01+07:00', [hr]), {
    decision: 'allow',
    reasons: ['disable-sign-in-by-manager'],
    errors: [],
    obligations: [],
    approval_used: 'ap-1',
  });
  assert.equal(story('execute', '2026-08-24T17:00:01+07:00', [it]).decision, 'approval_required');
  assert.deepEqual(story('execute', '2026-08-24T17:00:01+07:00', [hr], '8830').reasons, ['hr-approval-required', 'legal-hold']);
});

test('two engines over different sets never share preparsed state', () => {
  const allow = engineFor({ 'p.cedar': PERMIT_ALL });
  const deny = engineFor({ 'p.cedar': '@id("no") forbid(principal, action, resource);' });
  assert.equal(allow.evaluate(input()).decision, 'allow');
  assert.equal(deny.evaluate(input()).decision, 'deny');
  assert.equal(allow.evaluate(input()).decision, 'allow');
});
