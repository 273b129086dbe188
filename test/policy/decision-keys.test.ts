import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PolicyEngine, type DecisionInput, type ValidApproval } from '../../src/policy/engine.js';
import type { EntityJson, EntitySource } from '../../src/policy/entities.js';
import { loadPolicyDir } from '../../src/policy/load.js';
import { uidKey } from '../../src/util/uid.js';
import { tempPolicyDir } from './helpers.js';

// The exact text of a decision's memo key and residual-program key for representative inputs. Both keys
// name everything a decision's evaluations read, and a change to how they are built must not move either
// by a byte unless it means to: the texts below were computed on the engine before the two keys shared
// one builder (engine.ts decisionKeyParts).

const POLICIES = `
@id("managers-read") permit (principal is Agent, action == Action::"s/read", resource) when { principal.trusted && context.requester in Role::"manager" };
@id("no-x-tasks") forbid (principal, action == Action::"s/read", resource) when { context.task_id like "*-X*" };
@id("small-writes") permit (principal is Agent, action == Action::"s/write", resource) when { context.arguments has n && context.arguments.n < resource.limit };
@id("wait-for-it") forbid (principal, action == Action::"s/write", resource) when { context has execute_after && context.now < context.execute_after };
@id("hr-signs") @requires_approval("Role::\\"hr\\"") forbid (principal, action == Action::"s/write", resource)
unless { context has approver && context.approver in Role::"hr" };
@id("any-doc") permit (principal, action == Action::"s/list", resource is Doc) when { context.task_id like "T-*" };
`;

const { dir, cleanup } = tempPolicyDir({ 'p.cedar': POLICIES });
const bundle = loadPolicyDir(dir);
cleanup();
const uid = (type: string, id: string) => ({ type, id });

/** A trusted store with a fixed version text, so that the pinned keys do not hang on how versions are hashed. */
class FixedEntities implements EntitySource {
  private readonly byKey = new Map<string, EntityJson>();
  constructor(
    entities: EntityJson[],
    readonly version: string,
  ) {
    for (const e of entities) this.byKey.set(uidKey(e.uid), e);
  }
  get(key: string): EntityJson | undefined {
    return this.byKey.get(key);
  }
}

const entities = new FixedEntities(
  [
    { uid: uid('Role', 'hr'), attrs: {}, parents: [] },
    { uid: uid('Role', 'manager'), attrs: {}, parents: [] },
    { uid: uid('User', 'mgr'), attrs: {}, parents: [uid('Role', 'manager')] },
    { uid: uid('User', 'alice'), attrs: {}, parents: [uid('Role', 'hr')] },
    { uid: uid('Agent', 'a1'), attrs: { trusted: true }, parents: [] },
    { uid: uid('Doc', 'd1'), attrs: { limit: 3 }, parents: [] },
  ],
  'entities-v7',
);

function approval(id: string, approver: string, approvedAt: string): ValidApproval {
  return { approval_id: id, approver: uid('User', approver), approved_at: approvedAt, expires_at: '2026-08-25T00:00:00Z' };
}

function decision(action: string, over: Partial<DecisionInput> = {}, envelope: Record<string, unknown> = {}): DecisionInput {
  const [server, tool] = action.split('/') as [string, string];
  return {
    actor: uid('Agent', 'a1'),
    server,
    tool,
    subject: uid('Doc', 'd1'),
    envelope: { task_id: 'T-1', purpose: 'p', requester: uid('User', 'mgr'), ...envelope },
    phase: 'execute',
    binding: 'b1',
    cedarArguments: { n: 2 },
    now: new Date('2026-08-24T10:00:00.5Z'),
    approvals: [],
    entities,
    ...over,
  };
}

/** The inputs pinned: each kind of plan (a named action's set, the scope-less set), resource keyed by uid or by type, approvals, an unkeyable input. */
const INPUTS: Record<string, DecisionInput> = {
  read: decision('s/read'),
  'read, another requester and task': decision('s/read', {}, { task_id: 'T-X1', requester: uid('User', 'alice') }),
  'write, not before': decision('s/write', { cedarArguments: { n: 2, extra: 'x' } }, { execute_after: '2026-08-24T17:00:00+07:00' }),
  'write, approvals out of time order': decision('s/write', {
    approvals: [approval('ap-2', 'alice', '2026-08-24T07:30:00Z'), approval('ap-1', 'mgr', '2026-08-24T07:00:00+01:00')],
  }),
  'list, a stored doc': decision('s/list'),
  'list, a doc the store does not hold': decision('s/list', { subject: uid('Doc', 'd9') }),
  'an action no policy names': decision('s/other', { prior: { committed: 1, unknown: 0, invoking: 0, proposed_allowed: 2 } }),
  'arguments too big to key': decision('s/write', { cedarArguments: { n: 2, blob: 'x'.repeat(5000) } }),
};

/** The residual-program keys `engine` looks up, in order (residualOutcome's lookups in its program memo). */
function residualKeysLookedUp(engine: PolicyEngine): string[] {
  const residuals = (engine as unknown as { residuals: { get(key: string, version: string): unknown } }).residuals;
  const keys: string[] = [];
  const get = residuals.get.bind(residuals);
  residuals.get = (key, version) => {
    keys.push(key);
    return get(key, version);
  };
  return keys;
}

type Keys = { memo: string | null; planned?: string | null; residual?: string | null };

/** Each input's keys (null: none), with the engine's own id (a per-process counter and the policy version) written ENGINE. */
function keysOf(engine: PolicyEngine): Record<string, Keys> {
  const looked = residualKeysLookedUp(engine);
  const unengined = (key: string | undefined) => (key === undefined ? null : key.replaceAll(engine.engineId, 'ENGINE'));
  const out: Record<string, Keys> = {};
  for (const [name, input] of Object.entries(INPUTS)) {
    const memo = unengined(engine.memoKeyOf(input));
    if (input.approvals.length > 0) {
      out[name] = { memo };
      continue;
    }
    const plan = engine.planCall(input);
    looked.length = 0;
    plan.residual();
    assert.ok(looked.length <= 1, name);
    out[name] = { memo, planned: unengined(plan.memoKey), residual: unengined(looked[0]) };
  }
  return out;
}

const PINNED: Record<string, Keys> = {
  read: {
    memo: '["ENGINE:only:05aa8eb50cb68753f16d3377469558de2cd73aa246e407176e8a8373a9adcdf6",{"type":"Agent","id":"a1"},"s","read",{"type":"Doc","id":"d1"},{"type":"User","id":"mgr"},{"requester":{"__entity":{"type":"User","id":"mgr"}},"task_id":"T-1"},[],"entities-v7"]',
    planned:
      '["ENGINE:only:05aa8eb50cb68753f16d3377469558de2cd73aa246e407176e8a8373a9adcdf6",{"type":"Agent","id":"a1"},"s","read",{"type":"Doc","id":"d1"},{"type":"User","id":"mgr"},{"requester":{"__entity":{"type":"User","id":"mgr"}},"task_id":"T-1"},[],"entities-v7"]',
    residual:
      '["residual","ENGINE:only:05aa8eb50cb68753f16d3377469558de2cd73aa246e407176e8a8373a9adcdf6",{"type":"Agent","id":"a1"},"s","read",{"type":"Doc","id":"d1"},{"type":"User","id":"mgr"},[["requester","value",{"__entity":{"type":"User","id":"mgr"}}],["task_id","unknown string"]],"entities-v7"]',
  },
  'read, another requester and task': {
    memo: '["ENGINE:only:05aa8eb50cb68753f16d3377469558de2cd73aa246e407176e8a8373a9adcdf6",{"type":"Agent","id":"a1"},"s","read",{"type":"Doc","id":"d1"},{"type":"User","id":"alice"},{"requester":{"__entity":{"type":"User","id":"alice"}},"task_id":"T-X1"},[],"entities-v7"]',
    planned:
      '["ENGINE:only:05aa8eb50cb68753f16d3377469558de2cd73aa246e407176e8a8373a9adcdf6",{"type":"Agent","id":"a1"},"s","read",{"type":"Doc","id":"d1"},{"type":"User","id":"alice"},{"requester":{"__entity":{"type":"User","id":"alice"}},"task_id":"T-X1"},[],"entities-v7"]',
    residual:
      '["residual","ENGINE:only:05aa8eb50cb68753f16d3377469558de2cd73aa246e407176e8a8373a9adcdf6",{"type":"Agent","id":"a1"},"s","read",{"type":"Doc","id":"d1"},{"type":"User","id":"alice"},[["requester","value",{"__entity":{"type":"User","id":"alice"}}],["task_id","unknown string"]],"entities-v7"]',
  },
  'write, not before': {
    memo: '["ENGINE:only:54a0d9bf42db97577fdac7ce3d6ab412ae461ced3d64c890c2269ec3f5cc8dcf",{"type":"Agent","id":"a1"},"s","write",{"type":"Doc","id":"d1"},{"type":"User","id":"mgr"},{"arguments":{"n":2,"extra":"x"},"execute_after":{"__extn":{"fn":"datetime","arg":"2026-08-24T17:00:00+0700"}},"now":{"__extn":{"fn":"datetime","arg":"2026-08-24T10:00:00.500Z"}}},[],"entities-v7"]',
    planned:
      '["ENGINE:only:54a0d9bf42db97577fdac7ce3d6ab412ae461ced3d64c890c2269ec3f5cc8dcf",{"type":"Agent","id":"a1"},"s","write",{"type":"Doc","id":"d1"},{"type":"User","id":"mgr"},{"arguments":{"n":2,"extra":"x"},"execute_after":{"__extn":{"fn":"datetime","arg":"2026-08-24T17:00:00+0700"}},"now":{"__extn":{"fn":"datetime","arg":"2026-08-24T10:00:00.500Z"}}},[],"entities-v7"]',
    residual:
      '["residual","ENGINE:only:54a0d9bf42db97577fdac7ce3d6ab412ae461ced3d64c890c2269ec3f5cc8dcf",{"type":"Agent","id":"a1"},"s","write",{"type":"Doc","id":"d1"},{"type":"User","id":"mgr"},[["arguments","value",{"n":2,"extra":"x"}],["execute_after","unknown datetime"],["now","unknown datetime"]],"entities-v7"]',
  },
  'write, approvals out of time order': {
    memo: '["ENGINE:only:54a0d9bf42db97577fdac7ce3d6ab412ae461ced3d64c890c2269ec3f5cc8dcf",{"type":"Agent","id":"a1"},"s","write",{"type":"Doc","id":"d1"},{"type":"User","id":"mgr"},{"arguments":{"n":2},"now":{"__extn":{"fn":"datetime","arg":"2026-08-24T10:00:00.500Z"}}},[["ap-1",{"type":"User","id":"mgr"}],["ap-2",{"type":"User","id":"alice"}]],"entities-v7"]',
  },
  'list, a stored doc': {
    memo: '["ENGINE:only:8499264b2a29d5497531f27402adcf367ef6d8cc4f9e465591522060e50e5dfb",{"type":"Agent","id":"a1"},"s","list",{"type":"Doc","id":"d1"},{"type":"User","id":"mgr"},{"task_id":"T-1"},[],"entities-v7"]',
    planned:
      '["ENGINE:only:8499264b2a29d5497531f27402adcf367ef6d8cc4f9e465591522060e50e5dfb",{"type":"Agent","id":"a1"},"s","list",{"type":"Doc","id":"d1"},{"type":"User","id":"mgr"},{"task_id":"T-1"},[],"entities-v7"]',
    residual:
      '["residual","ENGINE:only:8499264b2a29d5497531f27402adcf367ef6d8cc4f9e465591522060e50e5dfb",{"type":"Agent","id":"a1"},"s","list",{"type":"Doc","id":"d1"},{"type":"User","id":"mgr"},[["task_id","unknown string"]],"entities-v7"]',
  },
  'list, a doc the store does not hold': {
    memo: '["ENGINE:only:8499264b2a29d5497531f27402adcf367ef6d8cc4f9e465591522060e50e5dfb",{"type":"Agent","id":"a1"},"s","list",["any resource of type","Doc"],{"type":"User","id":"mgr"},{"task_id":"T-1"},[],"entities-v7"]',
    planned:
      '["ENGINE:only:8499264b2a29d5497531f27402adcf367ef6d8cc4f9e465591522060e50e5dfb",{"type":"Agent","id":"a1"},"s","list",["any resource of type","Doc"],{"type":"User","id":"mgr"},{"task_id":"T-1"},[],"entities-v7"]',
    residual:
      '["residual","ENGINE:only:8499264b2a29d5497531f27402adcf367ef6d8cc4f9e465591522060e50e5dfb",{"type":"Agent","id":"a1"},"s","list",["any resource of type","Doc"],{"type":"User","id":"mgr"},[["task_id","unknown string"]],"entities-v7"]',
  },
  'an action no policy names': {
    memo: '["ENGINE:only:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",{"type":"Agent","id":"a1"},"s","other",{"type":"Doc","id":"d1"},{"type":"User","id":"mgr"},{},[],"entities-v7"]',
    planned:
      '["ENGINE:only:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",{"type":"Agent","id":"a1"},"s","other",{"type":"Doc","id":"d1"},{"type":"User","id":"mgr"},{},[],"entities-v7"]',
    residual: null,
  },
  'arguments too big to key': {
    memo: null,
    planned: null,
    residual: null,
  },
};

test('memo and residual keys are the pinned texts', () => {
  const engine = new PolicyEngine(bundle, { memoSize: 64 });
  const keys = keysOf(engine);
  assert.deepEqual(keys, PINNED);
});

test('an engine with the memo off keys nothing', () => {
  const engine = new PolicyEngine(bundle);
  for (const input of Object.values(INPUTS)) {
    assert.equal(engine.memoKeyOf(input), undefined);
    if (input.approvals.length === 0) assert.equal(engine.planCall(input).memoKey, undefined);
  }
});
