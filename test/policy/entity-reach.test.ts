/**
 * Cedar sees only the entity slice writ hands it, and an `in` over an entity outside that slice is
 * simply false — so the slice must hold every stored entity an evaluation can reach, or a forbid can be
 * skipped and a deny become an allow (found by a review: `resource.manager in Role::"suspended"` allowed
 * when the manager was not also the requester). Reachable: principal, action, resource, requester and
 * approvers, the entities the policies name literally, and — transitively — parents and entities that
 * read attributes refer to. Checked against Cedar itself handed the whole store, on fixed cases and on
 * generated stores and policies, narrowed and not, in-process and on an evaluator thread, for decisions
 * and AuthZEN requests.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import type { EvaluatorPool } from '../../src/policy/evaluator-pool.js';
import type { PolicyEngine, DecisionInput } from '../../src/policy/engine.js';
import { StaticEntitySource, type EntityJson } from '../../src/policy/entities.js';
import { input, withEngines } from './helpers.js';
import { prng } from '../helpers/prng.js';

const ref = (type: string, id: string) => ({ __entity: { type, id } });

/** The engines every check runs on: narrowed, not narrowed, without a memo; and one behind an evaluator thread. */
async function withAllEngines(
  policies: Record<string, string>,
  fn: (engines: PolicyEngine[], pool: EvaluatorPool, threaded: PolicyEngine) => Promise<void>,
): Promise<void> {
  await withEngines(policies, async ({ narrowed, reference, memoOff, threaded, pool }) => fn([narrowed, reference, memoOff], pool, threaded));
}

test('a forbid reached through an attribute applies whoever the requester is (the review case)', async () => {
  const policies = {
    'p.cedar':
      '@id("allow-disable")\npermit (principal, action == Action::"idp/disable_sign_in", resource);\n' +
      '@id("manager-suspended")\nforbid (principal, action == Action::"idp/disable_sign_in", resource is Employee) when { resource.manager in Role::"suspended" };\n',
  };
  const store: EntityJson[] = [
    { uid: { type: 'Role', id: 'suspended' }, attrs: {}, parents: [] },
    { uid: { type: 'User', id: 'manager-1842' }, attrs: {}, parents: [] },
    { uid: { type: 'User', id: 'manager-2090' }, attrs: {}, parents: [{ type: 'Role', id: 'suspended' }] },
    { uid: { type: 'Agent', id: 'a1' }, attrs: {}, parents: [] },
    { uid: { type: 'Employee', id: '7721' }, attrs: { manager: ref('User', 'manager-2090') }, parents: [] },
  ];
  await withAllEngines(policies, async (engines, pool, threaded) => {
    for (const requester of ['manager-1842', 'manager-2090']) {
      const call = input({
        server: 'idp',
        tool: 'disable_sign_in',
        subject: { type: 'Employee', id: '7721' },
        envelope: { task_id: 'T', purpose: 'p', requester: { type: 'User', id: requester } },
        entities: new StaticEntitySource(store),
      });
      for (const engine of engines)
        assert.deepEqual([engine.evaluate(call).decision, engine.evaluate(call).reasons], ['deny', ['manager-suspended']], requester);
      const viaThread = await pool.evaluate(threaded, call);
      assert.deepEqual([viaThread.decision, viaThread.reasons], ['deny', ['manager-suspended']], `${requester} on a thread`);
      // AuthZEN names the request directly: the same reach.
      const request = {
        principal: { type: 'Agent', id: 'a1' },
        action: 'idp/disable_sign_in',
        resource: { type: 'Employee', id: '7721' },
        context: {},
        requestEntities: [],
        entities: new StaticEntitySource(store),
      };
      assert.equal(engines[0]!.evaluateRequest(request).decision, 'deny');
      assert.equal((await pool.evaluateRequest(threaded, request)).decision, 'deny');
    }
  });
});

test('entities named in a policy, and the action with its groups, are in the slice', async () => {
  const policies = {
    'p.cedar':
      '@id("hr-literal")\npermit (principal, action, resource) when { User::"hr-5519" in Role::"hr" && User::"hr-5519".name == "Hana" };\n' +
      '@id("group")\npermit (principal, action in Action::"grp", resource);\n' +
      '@id("blocked-group")\nforbid (principal, action in Action::"frozen", resource);\n',
  };
  const store: EntityJson[] = [
    { uid: { type: 'Role', id: 'hr' }, attrs: {}, parents: [] },
    { uid: { type: 'User', id: 'hr-5519' }, attrs: { name: 'Hana' }, parents: [{ type: 'Role', id: 'hr' }] },
    { uid: { type: 'Action', id: 's/t' }, attrs: {}, parents: [{ type: 'Action', id: 'grp' }] },
    { uid: { type: 'Action', id: 's/frozen' }, attrs: {}, parents: [{ type: 'Action', id: 'frozen' }] },
    { uid: { type: 'Agent', id: 'a1' }, attrs: {}, parents: [] },
    { uid: { type: 'Doc', id: 'd1' }, attrs: {}, parents: [] },
    { uid: { type: 'User', id: 'req' }, attrs: {}, parents: [] },
  ];
  await withAllEngines(policies, async (engines) => {
    for (const engine of engines) {
      const allowed = engine.evaluate(input({ entities: new StaticEntitySource(store) }));
      assert.deepEqual([allowed.decision, [...allowed.reasons].sort(), allowed.errors], ['allow', ['group', 'hr-literal'], []]);
      const frozen = engine.evaluate(input({ tool: 'frozen', entities: new StaticEntitySource(store) }));
      assert.deepEqual([frozen.decision, frozen.reasons], ['deny', ['blocked-group']]);
    }
  });
});

/** Cedar's own answer with the whole store and the whole context: the ground truth. */
function cedarWithWholeStore(policies: string, call: DecisionInput, store: EntityJson[]): { decision: string; reasons: string[] } {
  const answer = cedar.isAuthorized({
    principal: call.actor,
    action: { type: 'Action', id: `${call.server}/${call.tool}` },
    resource: call.subject,
    context: { requester: { __entity: call.envelope.requester as { type: string; id: string } } },
    policies: { staticPolicies: policies },
    entities: store as never,
  });
  assert.equal(answer.type, 'success', JSON.stringify(answer));
  const response = (answer as { response: { decision: string; diagnostics: { reason: string[]; errors: unknown[] } } }).response;
  return { decision: response.diagnostics.errors.length > 0 ? 'deny' : response.decision, reasons: response.diagnostics.reason };
}

test('on generated stores and policies, writ decides as Cedar handed the whole store (seeded)', async () => {
  const rand = prng(20261202);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const users = ['u0', 'u1', 'u2', 'u3', 'u4', 'u5'];
  const roles = ['r0', 'r1', 'r2'];
  // Policy templates over attributes (one and two steps), literals and parents; ids by index.
  const templates = [
    () => `permit (principal, action, resource) when { resource.owner in Role::"${pick(roles)}" };`,
    () => `forbid (principal, action, resource) when { resource.owner.boss in Role::"${pick(roles)}" };`,
    () => `forbid (principal, action, resource) when { context.requester.boss == User::"${pick(users)}" };`,
    () => `permit (principal, action, resource) when { User::"${pick(users)}" in Role::"${pick(roles)}" };`,
    () => `forbid (principal, action, resource) when { resource.team.contains(User::"${pick(users)}") && User::"${pick(users)}" in resource.owner };`,
    () => `permit (principal, action, resource) when { resource has owner && resource.owner has boss && resource.owner.boss in principal };`,
  ];
  for (let round = 0; round < 12; round++) {
    const policies = Array.from({ length: 3 + Math.floor(rand() * 3) }, () => pick(templates)()).join('\n');
    const store: EntityJson[] = [
      ...roles.map((id, i) => ({ uid: { type: 'Role', id }, attrs: {}, parents: i > 0 && rand() < 0.5 ? [{ type: 'Role', id: roles[i - 1]! }] : [] })),
      ...users.map((id) => ({
        uid: { type: 'User', id },
        attrs: rand() < 0.7 ? { boss: ref('User', pick(users)) } : {},
        parents: rand() < 0.6 ? [{ type: 'Role', id: pick(roles) }] : [],
      })),
      { uid: { type: 'Agent', id: 'a1' }, attrs: {}, parents: rand() < 0.5 ? [{ type: 'User', id: pick(users) }] : [] },
      { uid: { type: 'Doc', id: 'd1' }, attrs: { owner: ref('User', pick(users)), team: [ref('User', pick(users)), ref('User', pick(users))] }, parents: [] },
    ];
    await withAllEngines({ 'g.cedar': policies }, async (engines, pool, threaded) => {
      for (const requester of users) {
        const call = input({ envelope: { task_id: 'T', purpose: 'p', requester: { type: 'User', id: requester } }, entities: new StaticEntitySource(store) });
        const truth = cedarWithWholeStore(policies, call, store);
        const expectReasons = truth.reasons.map((r) => `g.cedar#${r.replace(/^policy/, '')}`).sort();
        for (const engine of [...engines, 'thread' as const]) {
          const got = engine === 'thread' ? await pool.evaluate(threaded, call) : engine.evaluate(call);
          const what = `round ${round}, requester ${requester}:\n${policies}`;
          assert.equal(got.decision === 'approval_required' ? 'deny' : got.decision, truth.decision, what);
          if (got.errors.length === 0 && truth.decision === 'allow') assert.deepEqual([...got.reasons].sort(), expectReasons, what);
        }
      }
    });
  }
});
