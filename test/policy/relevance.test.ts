import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { PolicyEngine, type ValidApproval } from '../../src/policy/engine.js';
import { loadPolicyDir } from '../../src/policy/load.js';
import { contextReadsOf, mayApplyToAction, relevanceOf } from '../../src/policy/relevance.js';
import { StaticEntitySource } from '../../src/policy/entities.js';
import { BUNDLED_DIR, ENTITIES, input, withEngines } from './helpers.js';
import { prng } from '../helpers/prng.js';

function relevance(text: string) {
  const json = cedar.policyToJson(text);
  assert.equal(json.type, 'success');
  return relevanceOf((json as { json: Parameters<typeof relevanceOf>[0] }).json);
}

test('relevance: action scopes — only == names one action, everything else may apply to any', () => {
  const eq = relevance('permit(principal, action == Action::"s/t", resource);');
  assert.deepEqual(eq.action, { kind: 'equals', actionId: 's/t' });
  assert.equal(mayApplyToAction(eq, 's/t'), true);
  assert.equal(mayApplyToAction(eq, 's/u'), false);
  for (const scope of ['action', 'action in Action::"group"', 'action in [Action::"s/u", Action::"s/v"]']) {
    const r = relevance(`permit(principal, ${scope}, resource);`);
    assert.deepEqual(r.action, { kind: 'any' }, scope);
    assert.equal(mayApplyToAction(r, 's/t'), true, scope);
  }
});

test('relevance: context reads through ., [""] and has (first step of a has-path only)', () => {
  const r = relevance(
    'permit(principal, action, resource) when { context.a == 1 && context["b c"].x == 2 && context has d.e && resource.f == context.g } unless { context has h };',
  );
  assert.deepEqual([...(r.contextReads as Set<string>)].sort(), ['a', 'b c', 'd', 'g', 'h']);
  assert.deepEqual([...(relevance('permit(principal, action, resource);').contextReads as Set<string>)], []);
});

test('relevance: attribute reads off anything but context itself, including has-path steps', () => {
  const r = relevance(
    'permit(principal, action, resource) when { principal.trusted && resource["x y"].z == 1 && resource has p.q && context.requester.level > 2 && context has c.d };',
  );
  assert.deepEqual([...r.attributeReads].sort(), ['d', 'level', 'p', 'q', 'trusted', 'x y', 'z']);
  assert.deepEqual([...(r.contextReads as Set<string>)].sort(), ['c', 'requester']);
  assert.deepEqual([...relevance('permit(principal, action, resource) when { principal == resource.owner };').attributeReads], ['owner']);
});

test("relevance: a policy reads only the resource's type when its scope is `resource` or `resource is T` and no condition names resource", () => {
  for (const text of [
    'permit(principal, action, resource);',
    'permit(principal, action, resource is Doc) when { principal.trusted && context.a like "x*" };',
    'forbid(principal in Role::"r", action == Action::"s/t", resource) unless { principal == context.requester };',
  ]) {
    assert.equal(relevance(text).readsResource, false, text);
  }
  for (const text of [
    'permit(principal, action, resource == Doc::"d");',
    'permit(principal, action, resource in Folder::"f");',
    'permit(principal, action, resource is Doc in Folder::"f");',
    'permit(principal, action, resource) when { resource.open };',
    'permit(principal, action, resource) when { resource has open };',
    'permit(principal, action, resource) when { principal in resource };',
    'permit(principal, action, resource) unless { context.requester == resource };',
    'permit(principal, action, resource is Doc) when { [resource].contains(context.d) };',
  ]) {
    assert.equal(relevance(text).readsResource, true, text);
  }
});

test('relevance: any other use of context means the whole context', () => {
  for (const cond of ['context == {}', 'context is Foo', '[context].contains({})', '{r: context}.r has a', 'if context has a then context else {} == {}']) {
    assert.equal(relevance(`permit(principal, action, resource) when { ${cond} };`).contextReads, 'all', cond);
  }
  const some = relevance('permit(principal, action, resource) when { context.a == 1 };');
  const all = relevance('permit(principal, action, resource) when { context == {} };');
  assert.equal(contextReadsOf([some, all]), 'all');
  assert.deepEqual([...(contextReadsOf([some, some]) as Set<string>)], ['a']);
});

/**
 * The narrowing must be invisible: over many requests against a policy set that mixes every scope
 * kind, context reads, errors and approval obligations, the narrowed engine answers exactly what
 * the engine that hands Cedar the whole set and context answers.
 */
const MIXED_POLICIES = `
@id("t-permit") permit(principal is Agent, action == Action::"s/t", resource is Doc) when { principal.trusted && context.arguments.n < 5 };
@id("u-permit") permit(principal, action == Action::"s/u", resource) when { context.phase == "propose" || context has approver };
@id("u-needs-hr") @requires_approval("Role::\\"hr\\"") forbid(principal, action == Action::"s/u", resource) unless { context has approver && context.approver in Role::"hr" };
@id("v-errors") permit(principal, action == Action::"s/v", resource) when { context.missing_attribute == 1 };
@id("w-group") permit(principal, action in [Action::"s/w", Action::"s/x"], resource) when { context.phase == "execute" };
@id("any-forbid") forbid(principal, action, resource) when { context has arguments.n && context.arguments.n == 3 };
@id("x-whole") permit(principal, action == Action::"s/x", resource) when { context has purpose && context.purpose == "testing" };
@id("y-time") forbid(principal, action == Action::"s/y", resource) when { context.now < datetime("2026-01-01") };
@id("y-permit") permit(principal, action == Action::"s/y", resource);
@id("t-secret") forbid(principal, action == Action::"s/t", resource) when { resource has secret && resource.secret };
@id("z-owner") permit(principal, action == Action::"s/z", resource) when { resource has owner && resource.owner == context.requester && context.requester.level > 1 };
`;

/** The helpers' entities plus a secret document owned by a requester with a level. */
const MIXED_ENTITIES = [
  ...ENTITIES.filter((e) => !(e.uid.type === 'User' && e.uid.id === 'req')),
  { uid: { type: 'User', id: 'req' }, attrs: { level: 2, name: 'Req' }, parents: [] },
  { uid: { type: 'Doc', id: 'd2' }, attrs: { secret: true, owner: { __entity: { type: 'User', id: 'req' } }, title: 't' }, parents: [] },
];

test('narrowed decisions equal whole-set, whole-context decisions (500 random requests), in-process and on an evaluator thread', () =>
  withEngines({ 'mixed.cedar': MIXED_POLICIES }, async ({ narrowed, reference, threaded, pool }) => {
    const entities = new StaticEntitySource(MIXED_ENTITIES);
    const random = prng(20261130);
    const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)]!;
    const approvers: ValidApproval[] = [
      { approval_id: 'ap-hr', approver: { type: 'User', id: 'alice' }, approved_at: '2026-08-24T07:00:00Z', expires_at: '2026-08-25T00:00:00Z' },
      { approval_id: 'ap-legal', approver: { type: 'User', id: 'bob' }, approved_at: '2026-08-24T08:00:00Z', expires_at: '2026-08-25T00:00:00Z' },
    ];
    const seen = new Set<string>();
    for (let i = 0; i < 500; i++) {
      const request = input({
        server: 's',
        tool: pick(['t', 'u', 'v', 'w', 'x', 'y', 'z', `unnamed-${i}`]),
        actor: pick([
          { type: 'Agent', id: 'a1' },
          { type: 'Agent', id: 'nobody' },
        ]),
        subject: pick([
          { type: 'Doc', id: 'd1' },
          { type: 'Doc', id: 'd2' },
        ]),
        phase: pick(['propose', 'execute'] as const),
        cedarArguments: pick<Record<string, number>>([{ n: 1 }, { n: 3 }, { n: 7 }, {}]),
        approvals: pick([[], [approvers[0]!], [approvers[1]!], approvers]),
        now: new Date(pick(['2025-06-01T00:00:00Z', '2026-08-24T10:00:00Z'])),
        entities,
      });
      const got = narrowed.evaluate(request);
      const expected = reference.evaluate(request);
      const what = JSON.stringify({ tool: request.tool, phase: request.phase, args: request.cedarArguments, approvals: request.approvals.length });
      assert.deepEqual(got, expected, what);
      assert.deepEqual(await pool.evaluate(threaded, request), expected, `on the thread: ${what}`);
      seen.add(got.decision);
    }
    // The sample reached every kind of answer, so the comparison covered each path.
    assert.deepEqual([...seen].sort(), ['allow', 'approval_required', 'deny']);
  }));

/**
 * Entities that carry nothing once narrowed (no attributes read, no parents) are left out of the first
 * evaluation (engine.ts evaluate). Every way a policy can touch such an entity — `has`, `in` either
 * way round, `is`, `==`, an attribute read that errors, a parent edge pointing at it — must answer,
 * and record errors, exactly as the whole slice does.
 */
const EMPTY_ENTITY_POLICIES = `
@id("has-on-empty") permit(principal, action == Action::"s/a", resource) when { !(resource has owner) && !(context.requester has level) };
@id("in-empty-role") permit(principal, action == Action::"s/b", resource) when { context.requester in Role::"staff" };
@id("empty-in-itself") permit(principal, action == Action::"s/c", resource) when { resource in resource && !(resource in Role::"staff") };
@id("read-of-empty") permit(principal, action == Action::"s/d", resource) when { resource.owner == context.requester };
@id("is-and-eq") permit(principal is Agent, action == Action::"s/e", resource is Doc) when { resource == Doc::"d3" || principal == Agent::"a1" };
@id("forbid-read-of-empty") forbid(principal, action == Action::"s/f", resource) when { context.requester.level > 1 };
@id("f-permit") permit(principal, action == Action::"s/f", resource);
@id("owner-read") permit(principal, action == Action::"s/g", resource) when { resource has owner && resource.owner.level > 1 };
@id("needs-staff") @requires_approval("Role::\\"staff\\"") forbid(principal, action == Action::"s/h", resource) unless { context has approver && context.approver in Role::"staff" };
@id("h-permit") permit(principal, action == Action::"s/h", resource);
`;

const EMPTY_ENTITY_SET = [
  { uid: { type: 'Role', id: 'staff' }, attrs: {}, parents: [] },
  { uid: { type: 'Role', id: 'hr' }, attrs: {}, parents: [] },
  { uid: { type: 'User', id: 'alice' }, attrs: {}, parents: [{ type: 'Role', id: 'staff' }] },
  { uid: { type: 'User', id: 'bob' }, attrs: { level: 3 }, parents: [] },
  { uid: { type: 'User', id: 'req' }, attrs: { nickname: 'r' }, parents: [] },
  { uid: { type: 'Agent', id: 'a1' }, attrs: {}, parents: [] },
  { uid: { type: 'Agent', id: 'a2' }, attrs: { trusted: true }, parents: [] },
  { uid: { type: 'Doc', id: 'd1' }, attrs: { title: 'not read by any policy' }, parents: [] },
  { uid: { type: 'Doc', id: 'd2' }, attrs: { owner: { __entity: { type: 'User', id: 'bob' } } }, parents: [] },
  { uid: { type: 'Doc', id: 'd3' }, attrs: {}, parents: [{ type: 'Role', id: 'staff' }] },
  { uid: { type: 'Doc', id: 'd4' }, attrs: { owner: { __entity: { type: 'User', id: 'req' } } }, parents: [] },
];

test('leaving empty entities out of the first evaluation changes no decision and no error text (400 random requests)', () =>
  withEngines({ 'empty.cedar': EMPTY_ENTITY_POLICIES }, async ({ narrowed, reference, threaded, pool }) => {
    const entities = new StaticEntitySource(EMPTY_ENTITY_SET);
    const random = prng(20261201);
    const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)]!;
    const staff: ValidApproval = {
      approval_id: 'ap-staff',
      approver: { type: 'User', id: 'alice' },
      approved_at: '2026-08-24T07:00:00Z',
      expires_at: '2026-08-25T00:00:00Z',
    };
    const outsider: ValidApproval = {
      approval_id: 'ap-bob',
      approver: { type: 'User', id: 'bob' },
      approved_at: '2026-08-24T08:00:00Z',
      expires_at: '2026-08-25T00:00:00Z',
    };
    const seen = new Set<string>();
    let errored = 0;
    for (let i = 0; i < 400; i++) {
      const requester = pick([
        { type: 'User', id: 'alice' },
        { type: 'User', id: 'bob' },
        { type: 'User', id: 'req' },
        { type: 'User', id: 'ghost' },
      ]);
      const request = input({
        server: 's',
        tool: pick(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']),
        actor: pick([
          { type: 'Agent', id: 'a1' },
          { type: 'Agent', id: 'a2' },
        ]),
        subject: pick([
          { type: 'Doc', id: 'd1' },
          { type: 'Doc', id: 'd2' },
          { type: 'Doc', id: 'd3' },
          { type: 'Doc', id: 'd4' },
          { type: 'Doc', id: 'gone' },
        ]),
        envelope: { task_id: 'T-1', purpose: 'testing', requester },
        approvals: pick([[], [staff], [outsider], [outsider, staff]]),
        entities,
      });
      const expected = reference.evaluate(request);
      const what = JSON.stringify({ tool: request.tool, subject: request.subject, requester, approvals: request.approvals.length });
      assert.deepEqual(narrowed.evaluate(request), expected, what);
      assert.deepEqual(await pool.evaluate(threaded, request), expected, `on the thread: ${what}`);
      seen.add(expected.decision);
      if (expected.errors.length > 0) errored++;
    }
    assert.deepEqual([...seen].sort(), ['allow', 'approval_required', 'deny']);
    // Attribute reads of empty (and of absent) entities happened, so the error-text path was compared.
    assert.ok(errored > 20, `only ${errored} requests errored`);
  }));

test('narrowed decisions equal reference decisions on the bundled offboarding policies', () => {
  const bundle = loadPolicyDir(BUNDLED_DIR);
  const narrowed = new PolicyEngine(bundle);
  const reference = new PolicyEngine(bundle, { narrowRequests: false });
  const entities = new StaticEntitySource(bundle.seedEntities);
  const hr: ValidApproval = {
    approval_id: 'ap-1',
    approver: { type: 'User', id: 'hr-5519' },
    approved_at: '2026-08-24T15:40:00+07:00',
    expires_at: '2026-08-25T15:40:00+07:00',
  };
  for (const tool of ['idp/disable_sign_in', 'hris/read_employee', 'idp/other']) {
    for (const phase of ['propose', 'execute'] as const) {
      for (const approvals of [[], [hr]]) {
        for (const now of ['2026-08-24T08:30:00Z', '2026-08-24T10:05:00Z']) {
          const [server, name] = tool.split('/') as [string, string];
          const request = input({
            actor: { type: 'Agent', id: 'offboarding-agent-prod' },
            server,
            tool: name,
            subject: { type: 'Employee', id: '7721' },
            envelope: { task_id: 'OFF-2048', purpose: 'p', requester: { type: 'User', id: 'manager-1842' }, execute_after: '2026-08-24T17:00:00+07:00' },
            phase,
            cedarArguments: { employee_id: '7721' },
            approvals,
            now: new Date(now),
            entities,
          });
          assert.deepEqual(narrowed.evaluate(request), reference.evaluate(request), `${tool} ${phase} ${approvals.length} ${now}`);
        }
      }
    }
  }
});

test('a context value Cedar would refuse denies whether or not any kept policy reads it', () => {
  const bundle = loadPolicyDir(BUNDLED_DIR);
  const narrowed = new PolicyEngine(bundle);
  const reference = new PolicyEngine(bundle, { narrowRequests: false });
  const entities = new StaticEntitySource(bundle.seedEntities);
  // hris/read_employee's policy never reads execute_after, so the narrowed call leaves it out.
  for (const executeAfter of [
    '2026-02-29T00:00:00Z',
    '2026-08-24T24:00:00Z',
    '2026-08-24T17:00:60Z',
    '2026-08-24T17:00:00+24:00',
    '2026-08-24T17:00:00+07:00',
  ]) {
    const request = input({
      actor: { type: 'Agent', id: 'offboarding-agent-prod' },
      server: 'hris',
      tool: 'read_employee',
      subject: { type: 'Employee', id: '7721' },
      envelope: { task_id: 'T', purpose: 'p', requester: { type: 'User', id: 'manager-1842' }, execute_after: executeAfter },
      phase: 'execute',
      cedarArguments: { employee_id: '7721' },
      entities,
    });
    const got = narrowed.evaluate(request);
    assert.deepEqual(got, reference.evaluate(request), executeAfter);
    assert.equal(got.decision, executeAfter.endsWith('+07:00') ? 'allow' : 'deny', executeAfter);
  }
});
