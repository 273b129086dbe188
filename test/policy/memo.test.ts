import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { PolicyEngine, type DecisionInput, type DecisionOutcome, type RequestInput, type ValidApproval } from '../../src/policy/engine.js';
import { EvaluatorPool } from '../../src/policy/evaluator-pool.js';
import { type EntityJson, type EntitySource, entitiesVersionOf } from '../../src/policy/entities.js';
import { DecisionMemo, MAX_KEY_CHARS, memoKeyText } from '../../src/policy/memo.js';
import { loadPolicyDir } from '../../src/policy/load.js';
import { uidKey } from '../../src/util/uid.js';
import { tempPolicyDir } from './helpers.js';

// Policies that read every kind of input the memo key must capture: entity attributes and parents,
// `now` against another datetime, a `like` on task_id, arguments, the approver, a scope-less policy
// kept for every action, one that errors, and a @requires_approval forbid.
const POLICIES = `
@id("read") permit (principal is Agent, action == Action::"s/read", resource)
when { principal.trusted && (context.requester in Role::"manager" || context.requester in Role::"hr") };
@id("task-blocked") forbid (principal, action == Action::"s/read", resource) when { context.task_id like "*-X*" };
@id("write") permit (principal is Agent, action == Action::"s/write", resource)
when { principal.trusted && context.arguments has n && context.arguments.n < resource.limit };
@id("not-before") forbid (principal, action == Action::"s/write", resource)
when { context.phase == "execute" && context has execute_after && context.now < context.execute_after };
@id("needs-hr") @requires_approval("Role::\\"hr\\"") forbid (principal, action == Action::"s/write", resource)
unless { context has approver && context.approver in Role::"hr" };
@id("open-propose") permit (principal, action, resource) when { context.phase == "propose" && resource.open };
@id("err") forbid (principal, action == Action::"s/err", resource) when { resource.no_such_attribute };
@id("late") forbid (principal, action == Action::"s/late", resource) when { context.now > datetime("2026-08-24T12:00:00Z") };
`;

const { dir, cleanup } = tempPolicyDir({ 'p.cedar': POLICIES });
const bundle = loadPolicyDir(dir);
cleanup();

const uid = (type: string, id: string) => ({ type, id });

/** A mutable trusted store: every change moves `version`, as the sidecar's EntityCache does. */
class MutableEntities implements EntitySource {
  private byKey = new Map<string, EntityJson>();
  version = '';
  constructor(entities: EntityJson[]) {
    for (const e of entities) this.byKey.set(uidKey(e.uid), e);
    this.version = entitiesVersionOf([...this.byKey.values()]);
  }
  get(key: string): EntityJson | undefined {
    return this.byKey.get(key);
  }
  put(e: EntityJson): void {
    this.byKey.set(uidKey(e.uid), e);
    this.version = entitiesVersionOf([...this.byKey.values()]);
  }
  remove(key: string): void {
    this.byKey.delete(key);
    this.version = entitiesVersionOf([...this.byKey.values()]);
  }
}

function seedEntities(): EntityJson[] {
  return [
    { uid: uid('Role', 'hr'), attrs: {}, parents: [] },
    { uid: uid('Role', 'legal'), attrs: {}, parents: [] },
    { uid: uid('Role', 'manager'), attrs: {}, parents: [] },
    { uid: uid('User', 'alice'), attrs: {}, parents: [uid('Role', 'hr')] },
    { uid: uid('User', 'bob'), attrs: {}, parents: [uid('Role', 'legal')] },
    { uid: uid('User', 'mgr'), attrs: {}, parents: [uid('Role', 'manager')] },
    { uid: uid('User', 'req'), attrs: {}, parents: [] },
    { uid: uid('Agent', 'a1'), attrs: { trusted: true }, parents: [] },
    { uid: uid('Agent', 'a2'), attrs: { trusted: false }, parents: [] },
    { uid: uid('Doc', 'd1'), attrs: { limit: 3, open: false }, parents: [] },
    { uid: uid('Doc', 'd2'), attrs: { limit: 10, open: true }, parents: [] },
  ];
}

const NOWS = ['2026-08-24T08:00:00Z', '2026-08-24T10:00:00.5Z', '2026-08-24T16:00:00Z'];
const approvalArb = fc.record({
  approval_id: fc.constantFrom('ap-1', 'ap-2', 'ap-3'),
  approver: fc.constantFrom(uid('User', 'alice'), uid('User', 'bob'), uid('User', 'ghost')),
  approved_at: fc.constantFrom('2026-08-24T07:00:00Z', '2026-08-24T07:00:00+01:00'),
  expires_at: fc.constantFrom('2026-08-25T00:00:00Z'),
}) as fc.Arbitrary<ValidApproval>;

/** A request drawn from small domains, so that sequences repeat inputs and also nearly repeat them. */
const requestArb = fc.record({
  actor: fc.constantFrom('a1', 'a2', 'nobody'),
  action: fc.constantFrom('s/read', 's/write', 's/err', 's/late', 's/other'),
  subject: fc.constantFrom('d1', 'd2'),
  requester: fc.constantFrom('req', 'mgr', 'alice'),
  task_id: fc.constantFrom('T-1', 'T-X', 'T-2', 'A-X9'),
  purpose: fc.constantFrom('p', 'q'),
  phase: fc.constantFrom('propose', 'execute'),
  now: fc.constantFrom(...NOWS),
  execute_after: fc.option(fc.constantFrom('2026-08-24T09:00:00Z', '2026-08-24T17:00:00+07:00'), { nil: undefined }),
  args: fc.constantFrom<unknown>({ n: 1 }, { n: 5 }, {}, { n: 1, extra: 'x' }, { n: '1' }),
  approvals: fc.array(approvalArb, { maxLength: 2 }),
  binding: fc.constantFrom('b1', 'b2'),
});

/** Entity changes between decisions: trust, limits, openness and role membership move. */
const changeArb = fc.oneof(
  fc.record({ kind: fc.constant('trust' as const), id: fc.constantFrom('a1', 'a2'), value: fc.boolean() }),
  fc.record({ kind: fc.constant('limit' as const), id: fc.constantFrom('d1', 'd2'), value: fc.integer({ min: 0, max: 12 }) }),
  fc.record({ kind: fc.constant('open' as const), id: fc.constantFrom('d1', 'd2'), value: fc.boolean() }),
  fc.record({ kind: fc.constant('role' as const), id: fc.constantFrom('alice', 'bob', 'req'), value: fc.constantFrom('hr', 'legal', 'manager') }),
);

type Req = typeof requestArb extends fc.Arbitrary<infer T> ? T : never;
const FIELDS = ['actor', 'action', 'subject', 'requester', 'task_id', 'purpose', 'phase', 'now', 'execute_after', 'args', 'approvals', 'binding'] as const;

/**
 * A decision step asks one of a few base requests again — as is (a repeat) or with one field drawn
 * afresh (a near repeat: the memo must tell it apart exactly when Cedar could) — or the entities change.
 */
const stepArb = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .record({ base: fc.nat(3), tweak: fc.option(fc.tuple(fc.constantFrom(...FIELDS), requestArb), { freq: 2, nil: undefined }) })
      .map((d) => ({ type: 'decide' as const, ...d })),
  },
  { weight: 1, arbitrary: changeArb.map((c) => ({ type: 'change' as const, c })) },
);
type Step = typeof stepArb extends fc.Arbitrary<infer T> ? T : never;

function requestOf(bases: Req[], step: Extract<Step, { type: 'decide' }>): Req {
  const base = bases[step.base % bases.length]!;
  if (step.tweak === undefined) return base;
  const [field, other] = step.tweak;
  return { ...base, [field]: other[field] };
}
type Change = typeof changeArb extends fc.Arbitrary<infer T> ? T : never;

function toInput(r: Req, entities: EntitySource): DecisionInput {
  const [server, tool] = r.action.split('/') as [string, string];
  const envelope: Record<string, unknown> = { task_id: r.task_id, purpose: r.purpose, requester: uid('User', r.requester) };
  if (r.execute_after !== undefined) envelope.execute_after = r.execute_after;
  return {
    actor: uid('Agent', r.actor),
    server,
    tool,
    subject: uid('Doc', r.subject),
    envelope,
    phase: r.phase,
    binding: r.binding,
    cedarArguments: r.args as DecisionInput['cedarArguments'],
    now: new Date(r.now),
    approvals: r.approvals,
    entities,
  };
}

function apply(entities: MutableEntities, c: Change): void {
  const key = c.kind === 'trust' ? uidKey(uid('Agent', c.id)) : c.kind === 'role' ? uidKey(uid('User', c.id)) : uidKey(uid('Doc', c.id));
  const current = entities.get(key)!;
  if (c.kind === 'trust') entities.put({ ...current, attrs: { ...current.attrs, trusted: c.value } });
  else if (c.kind === 'limit') entities.put({ ...current, attrs: { ...current.attrs, limit: c.value } });
  else if (c.kind === 'open') entities.put({ ...current, attrs: { ...current.attrs, open: c.value } });
  else entities.put({ ...current, parents: [uid('Role', c.value)] });
}

test('the memoized engine answers exactly as the uncached engine (decision, reasons, errors, obligations, approval_used)', () => {
  let hits = 0;
  let decisions = 0;
  fc.assert(
    fc.property(
      fc.array(requestArb, { minLength: 1, maxLength: 4 }),
      fc.array(stepArb, { minLength: 1, maxLength: 40 }),
      fc.integer({ min: 1, max: 16 }),
      (bases, steps, memoSize) => {
        const uncached = new PolicyEngine(bundle);
        const memoized = new PolicyEngine(bundle, { memoSize });
        const entities = new MutableEntities(seedEntities());
        for (const step of steps) {
          if (step.type === 'change') {
            apply(entities, step.c);
            continue;
          }
          const input = toInput(requestOf(bases, step), entities);
          const before = memoized.memo!.hits;
          const got = memoized.evaluate(input);
          assert.deepStrictEqual(got, uncached.evaluate(input));
          // What the memo served cannot be altered by the caller that received it.
          got.reasons.push('mutated');
          got.errors.push({ message: 'mutated' });
          hits += memoized.memo!.hits - before;
          decisions++;
        }
      },
    ),
    { seed: 0x5eed14, numRuns: 150 },
  );
  // Not vacuous: a good share of the decisions were answered from the memo.
  assert.ok(hits > decisions / 5, `memo hits ${hits} of ${decisions}`);
});

test('decisions answered through the evaluator pool with the memo equal the uncached engine', async () => {
  const uncached = new PolicyEngine(bundle);
  const memoized = new PolicyEngine(bundle, { memoSize: 64 });
  const pool = new EvaluatorPool(1);
  pool.register(memoized, bundle);
  try {
    const bases = fc.sample(requestArb, { seed: 41, numRuns: 4 });
    const samples = fc.sample(stepArb, { seed: 14, numRuns: 400 });
    const entities = new MutableEntities(seedEntities());
    for (const step of samples) {
      if (step.type === 'change') {
        apply(entities, step.c);
        continue;
      }
      const input = toInput(requestOf(bases, step), entities);
      const expected = uncached.evaluate(input);
      // Several in flight at once, as under load: the same question asked twice before either answer.
      const [a, b] = await Promise.all([pool.evaluate(memoized, input), pool.evaluate(memoized, input)]);
      assert.deepStrictEqual(a, expected);
      assert.deepStrictEqual(b, expected);
      assert.deepStrictEqual(await pool.evaluate(memoized, input), expected);
    }
    assert.ok(memoized.memo!.hits > 100, `pool memo hits ${memoized.memo!.hits}`);
    // A reload registers a new engine: the old one's memo is dropped.
    assert.ok(memoized.memo!.size > 0);
    const reloaded = new PolicyEngine(bundle, { memoSize: 64 });
    pool.register(reloaded, bundle);
    assert.equal(memoized.memo!.size, 0);
  } finally {
    await pool.close();
  }
});

/**
 * A Cedar request named directly (AuthZEN): the context in Cedar JSON, and the request's own versions of
 * principal or resource (its properties over the stored entity), which the key must capture as well.
 */
const directArb = fc.record({
  principal: fc.constantFrom('a1', 'a2', 'nobody'),
  action: fc.constantFrom('s/read', 's/write', 's/err', 's/late', 's/other'),
  resource: fc.constantFrom('d1', 'd2'),
  requester: fc.constantFrom('req', 'mgr', 'alice'),
  task_id: fc.constantFrom('T-1', 'T-X'),
  phase: fc.constantFrom('propose', 'execute'),
  now: fc.constantFrom(...NOWS),
  args: fc.constantFrom<unknown>({ n: 1 }, { n: 5 }, {}),
  ownPrincipal: fc.option(fc.record({ trusted: fc.boolean(), role: fc.option(fc.constantFrom('hr', 'manager'), { nil: undefined }) }), { nil: undefined }),
  ownResource: fc.option(fc.record({ limit: fc.integer({ min: 0, max: 12 }), open: fc.boolean() }), { nil: undefined }),
});
type Direct = typeof directArb extends fc.Arbitrary<infer T> ? T : never;
const DIRECT_FIELDS = ['principal', 'action', 'resource', 'requester', 'task_id', 'phase', 'now', 'args', 'ownPrincipal', 'ownResource'] as const;
const directStepArb = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .record({ base: fc.nat(3), tweak: fc.option(fc.tuple(fc.constantFrom(...DIRECT_FIELDS), directArb), { freq: 2, nil: undefined }) })
      .map((d) => ({ type: 'decide' as const, ...d })),
  },
  { weight: 1, arbitrary: changeArb.map((c) => ({ type: 'change' as const, c })) },
);

function toRequestInput(r: Direct, entities: EntitySource): RequestInput {
  const requestEntities: EntityJson[] = [];
  if (r.ownPrincipal) {
    requestEntities.push({
      uid: uid('Agent', r.principal),
      attrs: { trusted: r.ownPrincipal.trusted },
      parents: r.ownPrincipal.role ? [uid('Role', r.ownPrincipal.role)] : [],
    });
  }
  if (r.ownResource) requestEntities.push({ uid: uid('Doc', r.resource), attrs: { ...r.ownResource }, parents: [] });
  return {
    principal: uid('Agent', r.principal),
    action: r.action,
    resource: uid('Doc', r.resource),
    context: {
      requester: { __entity: uid('User', r.requester) },
      task_id: r.task_id,
      phase: r.phase,
      arguments: r.args,
      now: { __extn: { fn: 'datetime', arg: r.now } },
    },
    requestEntities,
    entities,
  };
}

test('AuthZEN requests: the memoized engine, in-process and through the evaluator pool, answers exactly as the uncached engine', async () => {
  const uncached = new PolicyEngine(bundle);
  const memoized = new PolicyEngine(bundle, { memoSize: 64 });
  const pooled = new PolicyEngine(bundle, { memoSize: 64 });
  const pool = new EvaluatorPool(1);
  pool.register(pooled, bundle);
  try {
    const bases = fc.sample(directArb, { seed: 15, numRuns: 4 });
    const entities = new MutableEntities(seedEntities());
    let asked = 0;
    for (const step of fc.sample(directStepArb, { seed: 10, numRuns: 600 })) {
      if (step.type === 'change') {
        apply(entities, step.c);
        continue;
      }
      const base = bases[step.base % bases.length]!;
      const r = step.tweak === undefined ? base : { ...base, [step.tweak[0]]: step.tweak[1][step.tweak[0]] };
      const input = toRequestInput(r, entities);
      const expected = uncached.evaluateRequest(input);
      const got = memoized.evaluateRequest(input);
      assert.deepStrictEqual(got, expected);
      got.reasons.push('mutated'); // what the memo served cannot be altered by its receiver
      const [a, b] = await Promise.all([pool.evaluateRequest(pooled, input), pool.evaluateRequest(pooled, input)]);
      assert.deepStrictEqual(a, expected);
      assert.deepStrictEqual(b, expected);
      assert.deepStrictEqual(await pool.evaluateRequest(pooled, input), expected);
      asked++;
    }
    // Not vacuous: both memos answered a good share.
    assert.ok(memoized.memo!.hits > asked / 5, `in-process memo hits ${memoized.memo!.hits} of ${asked}`);
    assert.ok(pooled.memo!.hits > asked / 5, `pool memo hits ${pooled.memo!.hits} of ${asked}`);
  } finally {
    await pool.close();
  }
});

test("AuthZEN request keys: the request's own entities and the store version are part of the key, and no decision key equals one", () => {
  const engine = new PolicyEngine(bundle, { memoSize: 8 });
  const entities = new MutableEntities(seedEntities());
  const base: Direct = {
    principal: 'a1',
    action: 's/write',
    resource: 'd1',
    requester: 'mgr',
    task_id: 'T-1',
    phase: 'execute',
    now: NOWS[0]!,
    args: { n: 1 },
    ownPrincipal: undefined,
    ownResource: undefined,
  };
  const key = (r: Direct) => engine.requestMemoKeyOf(toRequestInput(r, entities));
  const plain = key(base);
  assert.ok(plain !== undefined);
  assert.notEqual(key({ ...base, ownResource: { limit: 3, open: false } }), plain);
  assert.notEqual(key({ ...base, ownResource: { limit: 3, open: false } }), key({ ...base, ownResource: { limit: 4, open: false } }));
  assert.notEqual(key({ ...base, ownPrincipal: { trusted: true, role: undefined } }), key({ ...base, ownPrincipal: { trusted: true, role: 'hr' } }));
  apply(entities, { kind: 'limit', id: 'd2', value: 7 });
  assert.notEqual(key(base), plain);
  assert.ok(
    JSON.parse(plain)[0] === 'request' &&
      JSON.parse(plain).length !==
        JSON.parse(
          engine.memoKeyOf(
            toInput(
              {
                actor: 'a1',
                action: 's/write',
                subject: 'd1',
                requester: 'mgr',
                task_id: 'T-1',
                purpose: 'p',
                phase: 'execute',
                now: NOWS[0]!,
                execute_after: undefined,
                args: { n: 1 },
                approvals: [],
                binding: 'b1',
              },
              entities,
            ),
          )!,
        ).length,
  );
});

test('the memo key changes with now exactly when a kept policy reads now', () => {
  const engine = new PolicyEngine(bundle, { memoSize: 8 });
  const entities = new MutableEntities(seedEntities());
  const base = {
    actor: 'a1',
    subject: 'd1',
    requester: 'mgr',
    task_id: 'T-1',
    purpose: 'p',
    phase: 'execute',
    execute_after: undefined,
    args: { n: 1 },
    approvals: [],
    binding: 'b1',
  };
  const at = (action: string, now: string) => engine.memoKeyOf(toInput({ ...base, action, now } as Req, entities));
  assert.equal(at('s/read', NOWS[0]!), at('s/read', NOWS[1]!)); // no kept policy reads now
  assert.notEqual(at('s/late', NOWS[0]!), at('s/late', NOWS[1]!));
  assert.notEqual(at('s/write', NOWS[0]!), at('s/write', NOWS[1]!)); // not-before reads now
});

test('memo with admitOnSecondSight: an answer is kept on the second answer for its key, so a stream of distinct keys keeps nothing', () => {
  const outcome: DecisionOutcome = { decision: 'allow', reasons: ['r'], errors: [], obligations: [] };
  const memo = new DecisionMemo(8, { admitOnSecondSight: true });
  assert.equal(memo.get('a', 'v1'), undefined);
  memo.set('a', 'v1', outcome);
  assert.equal(memo.size, 0); // first sight: not kept
  assert.equal(memo.get('a', 'v1'), undefined);
  memo.set('a', 'v1', outcome);
  assert.equal(memo.size, 1); // second: kept
  assert.deepEqual(memo.get('a', 'v1'), outcome); // third: served
  for (let i = 0; i < 10_000; i++) memo.set(`distinct-${i}`, 'v1', outcome);
  assert.equal(memo.size, 1, 'questions asked once are never kept');
  assert.deepEqual(memo.get('a', 'v1'), outcome);
  // The engine's memo admits on second sight.
  assert.equal(new PolicyEngine(bundle, { memoSize: 4 }).memo!.capacity, 4);
});

test('memo: bounded least-recently-used, emptied when the entities version moves, disabled at 0', () => {
  const outcome = (d: DecisionOutcome['decision']): DecisionOutcome => ({ decision: d, reasons: ['r'], errors: [], obligations: [] });
  const memo = new DecisionMemo(2);
  assert.equal(memo.get('a', 'v1'), undefined);
  memo.set('a', 'v1', outcome('allow'));
  memo.set('b', 'v1', outcome('deny'));
  assert.equal(memo.get('a', 'v1')?.decision, 'allow'); // a is now the most recent
  memo.set('c', 'v1', outcome('deny'));
  assert.equal(memo.get('b', 'v1'), undefined); // b was least recently used
  assert.equal(memo.get('a', 'v1')?.decision, 'allow');
  assert.equal(memo.get('a', 'v2'), undefined); // any entity change empties it
  assert.equal(memo.size, 0);
  memo.set('late', 'v1', outcome('allow')); // an answer decided under the old entities is not kept
  assert.equal(memo.size, 0);
  assert.equal(new PolicyEngine(bundle).memo, undefined);
  assert.equal(new PolicyEngine(bundle, { memoSize: 0 }).memo, undefined);
});

test('memo keys: exact JSON values only, bounded length', () => {
  assert.equal(memoKeyText({ a: [1, 'x', true, null] }), '{"a":[1,"x",true,null]}');
  assert.notEqual(memoKeyText({ a: 1 }), memoKeyText({ a: '1' }));
  assert.notEqual(memoKeyText(['a,b']), memoKeyText(['a', 'b']));
  // biome-ignore lint/suspicious/noSparseArray: a hole is the input under test.
  for (const bad of [undefined, NaN, Infinity, -0, new Date(0), 1n, { a: undefined }, [, 1]]) assert.equal(memoKeyText([bad]), undefined);
  assert.equal(memoKeyText('x'.repeat(MAX_KEY_CHARS)), undefined);
  assert.ok(memoKeyText('x'.repeat(MAX_KEY_CHARS - 10)) !== undefined);
});

// ── resources keyed by type alone ────────────────────────────────────────────────────────────────
// A kept set that observes only the resource's type (scope `resource` or `resource is T`, no condition
// naming `resource`) answers every resource of a type the store does not hold alike, so the memo and
// residual keys name the type alone for those (engine.ts resourceKeyOf). Every other way a policy can
// see the resource is here too — `==`, `in`, `is … in` scopes, `resource` in a condition, its
// attributes, an error from a missing one — and so are stored and unstored resources, a resource that
// is also the principal, and entity changes that add or remove the resource from the store.
const RESOURCE_POLICIES = `
@id("any") permit (principal is Agent, action == Action::"t/any", resource) when { principal.trusted && context.task_id like "T-*" };
@id("is-doc") permit (principal, action == Action::"t/is", resource is Doc) when { principal.trusted };
@id("blocked") forbid (principal, action in [Action::"t/any", Action::"t/is"], resource) when { context.task_id like "*-X" };
@id("eq") permit (principal, action == Action::"t/eq", resource == Doc::"d1");
@id("in") permit (principal, action == Action::"t/in", resource in Folder::"f1");
@id("is-in") permit (principal, action == Action::"t/isin", resource is Doc in Folder::"f1");
@id("cond") permit (principal, action == Action::"t/cond", resource) when { resource == Doc::"d3" || principal in resource };
@id("attr") permit (principal, action == Action::"t/attr", resource) when { resource has open && resource.open };
@id("attr-err") forbid (principal, action == Action::"t/attr", resource) when { principal.trusted && resource.trusted };
`;
const resourceBundle = (() => {
  const d = tempPolicyDir({ 'r.cedar': RESOURCE_POLICIES });
  try {
    return loadPolicyDir(d.dir);
  } finally {
    d.cleanup();
  }
})();

function resourceSeed(): EntityJson[] {
  return [
    { uid: uid('Folder', 'f1'), attrs: {}, parents: [] },
    { uid: uid('Doc', 'd1'), attrs: { open: true, trusted: true }, parents: [uid('Folder', 'f1')] },
    { uid: uid('Doc', 'd2'), attrs: { open: false }, parents: [] },
    { uid: uid('Agent', 'a1'), attrs: { trusted: true }, parents: [] },
    { uid: uid('Agent', 'a2'), attrs: { trusted: false }, parents: [uid('Doc', 'd3')] },
    { uid: uid('User', 'req'), attrs: {}, parents: [] },
  ];
}

const resourceRequestArb = fc.record({
  actor: fc.constantFrom('a1', 'a2'),
  action: fc.constantFrom('t/any', 't/is', 't/eq', 't/in', 't/isin', 't/cond', 't/attr'),
  subject: fc.constantFrom(
    uid('Doc', 'd1'),
    uid('Doc', 'd2'),
    uid('Doc', 'd3'),
    uid('Doc', 'd4'),
    uid('Doc', 'd5'),
    uid('Folder', 'f1'),
    uid('Folder', 'f9'),
    uid('Agent', 'a1'),
    uid('Agent', 'a2'),
  ),
  task_id: fc.constantFrom('T-1', 'T-2', 'T-X', 'A-1'),
});
const subjectArb = resourceRequestArb.map((r) => r.subject);
/** A step asks one of a few base requests again, often about another subject (the near repeat under test). */
const resourceStepArb = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({ base: fc.nat(2), subject: fc.option(subjectArb, { freq: 3, nil: undefined }) }).map((d) => ({ type: 'decide' as const, ...d })),
  },
  // The store gains or loses an entity for an unstored resource, or a stored one changes.
  {
    weight: 1,
    arbitrary: fc.record({ id: fc.constantFrom('d3', 'd4', 'd1'), present: fc.boolean(), open: fc.boolean() }).map((c) => ({ type: 'change' as const, c })),
  },
);

function resourceInput(r: { actor: string; action: string; subject: { type: string; id: string }; task_id: string }, entities: EntitySource): DecisionInput {
  const [server, tool] = r.action.split('/') as [string, string];
  return {
    actor: uid('Agent', r.actor),
    server,
    tool,
    subject: r.subject,
    envelope: { task_id: r.task_id, purpose: 'p', requester: uid('User', 'req') },
    phase: 'execute',
    binding: 'b',
    cedarArguments: {},
    now: new Date('2026-08-24T08:00:00Z'),
    approvals: [],
    entities,
  };
}

type ResourceRequest = { actor: string; action: string; subject: { type: string; id: string }; task_id: string };
type ResourceChange = { type: 'change'; c: { id: string; present: boolean; open: boolean } };

/**
 * Runs near repeats of a few base questions against a memoized and an uncached engine, with entity
 * changes between them: `ask` asks one question of both (asserting they agree) and returns how many
 * answers the memo or a residual program gave. Counts those answers, and those for a subject this run
 * had not asked about (only a key naming its type can give one).
 */
function runResourceKeying<S extends { type: 'decide'; base: number; subject: ResourceRequest['subject'] | undefined }>(
  basesArb: fc.Arbitrary<ResourceRequest[]>,
  stepsArb: fc.Arbitrary<Array<S | ResourceChange>>,
  seed: number,
  ask: (memoSize: number) => (request: ResourceRequest, step: S, entities: EntitySource) => number,
): { hits: number; firstSightHits: number; decisions: number } {
  const tally = { hits: 0, firstSightHits: 0, decisions: 0 };
  fc.assert(
    fc.property(basesArb, stepsArb, fc.integer({ min: 1, max: 16 }), (bases, steps, memoSize) => {
      const askBoth = ask(memoSize);
      const entities = new MutableEntities(resourceSeed());
      const asked = new Set<string>();
      for (const step of steps) {
        if (step.type === 'change') {
          const key = uidKey(uid('Doc', step.c.id));
          if (step.c.present) entities.put({ uid: uid('Doc', step.c.id), attrs: { open: step.c.open }, parents: [] });
          else entities.remove(key);
          continue;
        }
        const base = bases[step.base % bases.length]!;
        const request = step.subject === undefined ? base : { ...base, subject: step.subject };
        const answered = askBoth(request, step, entities);
        tally.hits += answered;
        const subjectKey = `${request.action} ${uidKey(request.subject)}`;
        if (answered > 0 && !asked.has(subjectKey)) tally.firstSightHits++;
        asked.add(subjectKey);
        tally.decisions++;
      }
    }),
    { seed, numRuns: 200 },
  );
  return tally;
}

test('a resource keyed by its type alone: the memoized engine still answers exactly as the uncached engine', () => {
  const { hits, firstSightHits, decisions } = runResourceKeying(
    fc.array(resourceRequestArb, { minLength: 1, maxLength: 3 }),
    fc.array(resourceStepArb, { minLength: 1, maxLength: 60 }),
    0x7e50,
    (memoSize) => {
      const uncached = new PolicyEngine(resourceBundle);
      const memoized = new PolicyEngine(resourceBundle, { memoSize, partialEvaluationShare: 1 });
      return (request, _step, entities) => {
        const input = resourceInput(request, entities);
        const before = memoized.memo!.hits + memoized.residualAnswers;
        assert.deepStrictEqual(memoized.evaluate(input), uncached.evaluate(input), JSON.stringify(request));
        return memoized.memo!.hits + memoized.residualAnswers - before;
      };
    },
  );
  // Not vacuous: many answers came from the memo or a residual program, some for a subject seen the first time.
  assert.ok(hits > decisions / 5, `memo and residual answers ${hits} of ${decisions}`);
  assert.ok(firstSightHits > 5, `answers for a subject seen the first time: ${firstSightHits}`);
});

test('which kept sets key a resource by its type: only those that read nothing else of it, and only for resources the store does not hold', () => {
  const engine = new PolicyEngine(resourceBundle, { memoSize: 64 });
  const entities = new MutableEntities(resourceSeed());
  const key = (action: string, subject: { type: string; id: string }) =>
    engine.memoKeyOf(resourceInput({ actor: 'a1', action, subject, task_id: 'T-1' }, entities));
  // t/any and t/is read only the type: two unstored Docs share a key, a stored one has its own, another type too.
  for (const action of ['t/any', 't/is']) {
    assert.equal(key(action, uid('Doc', 'd4')), key(action, uid('Doc', 'd5')), action);
    assert.notEqual(key(action, uid('Doc', 'd1')), key(action, uid('Doc', 'd4')), action);
    assert.notEqual(key(action, uid('Doc', 'd2')), key(action, uid('Doc', 'd1')), action);
    assert.notEqual(key(action, uid('Folder', 'f9')), key(action, uid('Doc', 'd4')), action);
  }
  // Every other way of reading the resource keeps its uid in the key, stored or not.
  for (const action of ['t/eq', 't/in', 't/isin', 't/cond', 't/attr']) {
    assert.notEqual(key(action, uid('Doc', 'd4')), key(action, uid('Doc', 'd5')), action);
  }
  // A resource the store comes to hold is keyed by its uid from then on.
  entities.put({ uid: uid('Doc', 'd4'), attrs: {}, parents: [] });
  assert.notEqual(key('t/is', uid('Doc', 'd4')), key('t/is', uid('Doc', 'd5')));
  // Without narrowing (the reference behaviour; also what a schema implies) every resource is keyed by its uid.
  const plain = new PolicyEngine(resourceBundle, { memoSize: 64, narrowRequests: false });
  const plainKey = (subject: { type: string; id: string }) =>
    plain.memoKeyOf(resourceInput({ actor: 'a1', action: 't/is', subject, task_id: 'T-1' }, entities));
  assert.notEqual(plainKey(uid('Doc', 'd5')), plainKey(uid('Doc', 'd6')));
});

/**
 * The same near repeats asked as AuthZEN requests: principal and resource named directly, and the
 * request's own `properties` for either (an entity of the resource's uid the request brings, even as the
 * principal's, keeps the uid in the key).
 */
const ownAttrsArb = fc.oneof(
  { weight: 4, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.record({ open: fc.boolean(), trusted: fc.boolean() }) },
);
/** Half the questions are about resources the store does not hold, under the sets that read only their type. */
const directRequestArb = fc.oneof(
  resourceRequestArb,
  resourceRequestArb.chain((r) =>
    fc
      .record({ action: fc.constantFrom('t/any', 't/is'), subject: fc.constantFrom(...['d4', 'd5', 'd6', 'd7'].map((id) => uid('Doc', id))) })
      .map((o) => ({ ...r, ...o })),
  ),
);
const directSubjectArb = directRequestArb.map((r) => r.subject);
const resourceDirectStepArb = fc.oneof(
  {
    weight: 8,
    arbitrary: fc
      .record({ base: fc.nat(2), subject: fc.option(directSubjectArb, { freq: 3, nil: undefined }), ownResource: ownAttrsArb, ownPrincipal: ownAttrsArb })
      .map((d) => ({ type: 'decide' as const, ...d })),
  },
  {
    weight: 1,
    arbitrary: fc.record({ id: fc.constantFrom('d3', 'd4', 'd1'), present: fc.boolean(), open: fc.boolean() }).map((c) => ({ type: 'change' as const, c })),
  },
);

function resourceRequestInput(
  r: { actor: string; action: string; subject: { type: string; id: string }; task_id: string },
  own: { ownResource?: Record<string, boolean> | undefined; ownPrincipal?: Record<string, boolean> | undefined },
  entities: EntitySource,
): RequestInput {
  const principal = uid('Agent', r.actor);
  const requestEntities: EntityJson[] = [];
  if (own.ownPrincipal) requestEntities.push({ uid: principal, attrs: { ...own.ownPrincipal }, parents: [] });
  if (own.ownResource && uidKey(r.subject) !== uidKey(principal)) requestEntities.push({ uid: r.subject, attrs: { ...own.ownResource }, parents: [] });
  return { principal, action: r.action, resource: r.subject, context: { task_id: r.task_id }, requestEntities, entities };
}

test('AuthZEN: a resource keyed by its type alone: the memoized engine still answers exactly as the uncached engine', () => {
  type DirectStep = Exclude<typeof resourceDirectStepArb extends fc.Arbitrary<infer T> ? T : never, ResourceChange>;
  const { hits, firstSightHits, decisions } = runResourceKeying<DirectStep>(
    fc.array(directRequestArb, { minLength: 1, maxLength: 3 }),
    fc.array(resourceDirectStepArb, { minLength: 10, maxLength: 60 }),
    0x7e51,
    (memoSize) => {
      const uncached = new PolicyEngine(resourceBundle);
      const memoized = new PolicyEngine(resourceBundle, { memoSize });
      return (request, step, entities) => {
        const input = resourceRequestInput(request, step, entities);
        const before = memoized.memo!.hits;
        assert.deepStrictEqual(memoized.evaluateRequest(input), uncached.evaluateRequest(input), JSON.stringify({ request, step }));
        return memoized.memo!.hits - before;
      };
    },
  );
  // Not vacuous (AuthZEN requests have no residual programs: only the memo answers).
  assert.ok(hits > decisions / 50, `memo answers ${hits} of ${decisions}`);
  assert.ok(firstSightHits > 5, `answers for a resource seen the first time: ${firstSightHits}`);
});

test('AuthZEN request keys: an unstored resource is keyed by its type only when the request brings no entity of its uid', () => {
  const engine = new PolicyEngine(resourceBundle, { memoSize: 64 });
  const entities = new MutableEntities(resourceSeed());
  const key = (
    action: string,
    subject: { type: string; id: string },
    own: { ownResource?: Record<string, boolean>; ownPrincipal?: Record<string, boolean> } = {},
    actor = 'a1',
  ) => engine.requestMemoKeyOf(resourceRequestInput({ actor, action, subject, task_id: 'T-1' }, own, entities));
  assert.equal(key('t/is', uid('Doc', 'd4')), key('t/is', uid('Doc', 'd5')));
  assert.notEqual(key('t/is', uid('Doc', 'd1')), key('t/is', uid('Doc', 'd4'))); // stored
  assert.notEqual(key('t/is', uid('Doc', 'd4'), { ownResource: { open: true } }), key('t/is', uid('Doc', 'd5'), { ownResource: { open: true } }));
  // The principal's properties under the resource's uid: an entity of that uid the request brings.
  assert.notEqual(
    key('t/is', uid('Agent', 'a7'), { ownPrincipal: { trusted: true } }, 'a7'),
    key('t/is', uid('Agent', 'a8'), { ownPrincipal: { trusted: true } }, 'a7'),
  );
  for (const action of ['t/eq', 't/in', 't/isin', 't/cond', 't/attr']) assert.notEqual(key(action, uid('Doc', 'd4')), key(action, uid('Doc', 'd5')), action);
});
