/**
 * Residual programs (src/policy/residual.ts) answer exactly as Cedar does: `like` against Cedar's own
 * matcher, datetime texts and their order against Cedar's, and whole decisions from random policy sets
 * against the engine without memo or residuals —
 * in-process and through the evaluator pool — with the residual path shown to be taken.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { PolicyEngine, type DecisionInput } from '../../src/policy/engine.js';
import { EvaluatorPool } from '../../src/policy/evaluator-pool.js';
import { StaticEntitySource, type EntityJson } from '../../src/policy/entities.js';
import { loadPolicyDir } from '../../src/policy/load.js';
import { Instant, MAX_PROGRAM_CHARS, contextShapeOf, instantOf, likeMatches, residualProgramOf, satisfiedBy } from '../../src/policy/residual.js';
import { tempPolicyDir } from './helpers.js';

const uid = (type: string, id: string) => ({ type, id });

/** Characters that make `like` interesting: the wildcard, escapes, quotes, multi-byte and astral ones. */
const CHARS = ['a', 'b', '-', '*', '\\', '"', 'é', '😀', 'X'];
const textArb = fc.array(fc.constantFrom(...CHARS), { maxLength: 6 }).map((cs) => cs.join(''));
/** A pattern as elements: a wildcard (null) or one literal character. */
const patternArb = fc.array(fc.option(fc.constantFrom(...CHARS), { freq: 3, nil: null }), { maxLength: 6 });

/** The pattern in Cedar's source syntax: `*` a wildcard, `\*` a literal star. */
function patternSource(pattern: Array<string | null>): string {
  let out = '';
  for (const el of pattern) {
    if (el === null) out += '*';
    else if (el === '*') out += '\\*';
    else if (el === '\\') out += '\\\\';
    else if (el === '"') out += '\\"';
    else out += el;
  }
  return out;
}

test('like: the residual matcher agrees with Cedar on every text and pattern (wildcards, escaped stars, astral characters)', () => {
  fc.assert(
    fc.property(textArb, patternArb, (text, pattern) => {
      const answer = cedar.isAuthorized({
        principal: uid('A', 'a'),
        action: uid('Action', 'x'),
        resource: uid('R', 'r'),
        context: { s: text },
        policies: { staticPolicies: { p: `permit (principal, action, resource) when { context.s like "${patternSource(pattern)}" };` } },
        entities: [],
      });
      assert.equal(answer.type, 'success', JSON.stringify(answer));
      const cedarSays = answer.type === 'success' && answer.response.decision === 'allow';
      const elements = pattern.map((el) => (el === null ? 'Wildcard' : { Literal: el }));
      assert.equal(likeMatches(text, elements), cedarSays, `${JSON.stringify(text)} like "${patternSource(pattern)}"`);
    }),
    { seed: 0x11ce, numRuns: 600 },
  );
});

/** Datetime texts in and around Cedar's forms: impossible fields, odd offsets, leap days, early years. */
const oddDatetimeTextArb = fc
  .record({
    year: fc.constantFrom('0000', '0001', '0099', '1900', '1970', '2000', '2024', '2025', '2026', '9999'),
    month: fc.constantFrom('00', '01', '02', '04', '12', '13'),
    day: fc.constantFrom('00', '01', '28', '29', '30', '31', '32'),
    time: fc.option(
      fc.record({
        h: fc.constantFrom('00', '09', '23', '24'),
        m: fc.constantFrom('00', '30', '59', '60'),
        s: fc.constantFrom('00', '59', '60'),
        frac: fc.constantFrom('', '.000', '.5', '.999', '.1234'),
        zone: fc.constantFrom('Z', '+0000', '-0000', '+0700', '-0130', '+1400', '+2359', '-2359', '+2400', '+0060', '+07:00', ''),
      }),
      { nil: undefined },
    ),
  })
  .map(({ year, month, day, time }) => `${year}-${month}-${day}${time ? `T${time.h}:${time.m}:${time.s}${time.frac}${time.zone}` : ''}`);

/** Valid texts of every Cedar form: any instant of years 1–9999, any offset under a day, with or without milliseconds. */
const validDatetimeTextArb = fc
  .record({
    ms: fc.integer({ min: Date.parse('0001-01-01T00:00:00Z'), max: Date.parse('9999-12-30T00:00:00Z') }),
    form: fc.constantFrom('date', 'Z', 'ms Z', 'offset', 'ms offset'),
    offset: fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }),
  })
  .map(({ ms, form, offset }) => {
    const off = form.endsWith('offset') ? offset : 0;
    const local = new Date(ms + off * 60_000).toISOString(); // YYYY-MM-DDThh:mm:ss.SSSZ (years 1–9999)
    if (form === 'date') return local.slice(0, 10);
    const base = local.slice(0, 19) + (form.startsWith('ms') ? local.slice(19, 23) : '');
    if (form.endsWith('Z')) return `${base}Z`;
    const a = Math.abs(off);
    return `${base}${off < 0 ? '-' : '+'}${String(Math.floor(a / 60)).padStart(2, '0')}${String(a % 60).padStart(2, '0')}`;
  });
const datetimeTextArb = fc.oneof({ arbitrary: validDatetimeTextArb, weight: 4 }, { arbitrary: oddDatetimeTextArb, weight: 1 });

test('datetimes: every text the residual evaluator reads, Cedar reads too, and both order any two of them alike', () => {
  let compared = 0;
  fc.assert(
    fc.property(datetimeTextArb, datetimeTextArb, (a, b) => {
      const mine = [instantOf(a), instantOf(b)];
      const answer = cedar.isAuthorized({
        principal: uid('A', 'a'),
        action: uid('Action', 'x'),
        resource: uid('R', 'r'),
        context: {},
        policies: {
          staticPolicies: {
            lt: `permit (principal, action, resource) when { datetime(${JSON.stringify(a)}) < datetime(${JSON.stringify(b)}) };`,
            le: `permit (principal, action, resource) when { datetime(${JSON.stringify(a)}) <= datetime(${JSON.stringify(b)}) };`,
          },
        },
        entities: [],
      });
      if (mine[0] === undefined || mine[1] === undefined) return; // left to Cedar, whatever Cedar makes of it
      compared++;
      assert.equal(answer.type, 'success', `${a} ${b}: ${JSON.stringify(answer)}`);
      if (answer.type !== 'success') return;
      assert.deepEqual(answer.response.diagnostics.errors, [], `Cedar refused a text read here: ${a} / ${b}`);
      const reasons = new Set(answer.response.diagnostics.reason);
      // Two permits: each is a reason exactly when its comparison holds.
      assert.equal(reasons.has('le'), mine[0].ms <= mine[1].ms, `${a} <= ${b}`);
      assert.equal(reasons.has('lt'), mine[0].ms < mine[1].ms, `${a} < ${b}`);
    }),
    { seed: 0xda7e, numRuns: 1500 },
  );
  assert.ok(compared > 200, `compared ${compared}`);
  assert.equal(instantOf('2026-08-24T17:00:00+0700')!.ms, Date.parse('2026-08-24T10:00:00Z'));
  assert.equal(instantOf('0001-01-01')!.ms, Date.parse('0001-01-01T00:00:00Z'));
  assert.ok(instantOf('2026-08-24') instanceof Instant);
});

test('a residual program is not built from a reduction that errored or left a scope open, and gives up on what it does not evaluate', () => {
  const body = { like: { left: { unknown: [{ Value: 'task_id' }] }, pattern: ['Wildcard', { Literal: '-' }, 'Wildcard'] } };
  const policy = (over: Record<string, unknown> = {}) => ({
    effect: 'forbid',
    principal: { op: 'All' },
    action: { op: 'All' },
    resource: { op: 'All' },
    conditions: [{ kind: 'when', body }],
    ...over,
  });
  assert.ok(residualProgramOf({ errored: [], residuals: { f: policy() } }, ['f']));
  assert.equal(residualProgramOf({ errored: ['f'], residuals: { f: policy() } }, ['f']), undefined);
  assert.equal(residualProgramOf({ errored: [], residuals: { f: policy({ principal: { op: '==', entity: uid('A', 'a') } }) } }, ['f']), undefined);
  assert.equal(residualProgramOf({ errored: [], residuals: {} }, ['f']), undefined);
  const program = residualProgramOf({ errored: [], residuals: { f: policy() } }, ['f'])!;
  assert.deepEqual(satisfiedBy(program, { task_id: 'T-1' }), { permits: [], forbids: ['f'] });
  assert.deepEqual(satisfiedBy(program, { task_id: 'T1' }), { permits: [], forbids: [] });
  // An unknown it was not given, an extension call, a non-boolean condition: Cedar must answer.
  assert.equal(satisfiedBy(program, {}), undefined);
  const ext = residualProgramOf(
    { errored: [], residuals: { f: policy({ conditions: [{ kind: 'when', body: { isLoopback: [{ ip: [{ unknown: [{ Value: 'task_id' }] }] }] } }] }) } },
    ['f'],
  )!;
  assert.equal(satisfiedBy(ext, { task_id: '127.0.0.1' }), undefined);
  const bare = residualProgramOf({ errored: [], residuals: { f: policy({ conditions: [{ kind: 'when', body: { unknown: [{ Value: 'task_id' }] } }] }) } }, [
    'f',
  ])!;
  assert.equal(satisfiedBy(bare, { task_id: 'x' }), undefined);
  // A policy reduced to a condition that fails before any other is left out; one whose failing literal
  // comes after a condition still to evaluate is kept (that condition might error first).
  const pruned = residualProgramOf(
    {
      errored: [],
      residuals: {
        never: policy({ conditions: [{ kind: 'when', body: { Value: false } }] }),
        neverUnless: policy({
          conditions: [
            { kind: 'when', body: { Value: true } },
            { kind: 'unless', body: { Value: true } },
          ],
        }),
        later: policy({
          conditions: [
            { kind: 'when', body },
            { kind: 'when', body: { Value: false } },
          ],
        }),
      },
    },
    ['never', 'neverUnless', 'later'],
  )!;
  assert.deepEqual(
    pruned.policies.map((p) => p.id),
    ['later'],
  );
  // Too big to keep: left to Cedar.
  const big = { '==': { left: { unknown: [{ Value: 'task_id' }] }, right: { Value: 'x'.repeat(MAX_PROGRAM_CHARS) } } };
  assert.equal(residualProgramOf({ errored: [], residuals: { f: policy({ conditions: [{ kind: 'when', body: big }] }) } }, ['f']), undefined);
  // Nested deeper than the stack: Cedar answers, nothing throws.
  let deep: Record<string, unknown> = { Value: true };
  for (let i = 0; i < 200_000; i++) deep = { '!': { arg: deep } };
  assert.equal(satisfiedBy({ policies: [{ id: 'f', effect: 'forbid', conditions: [{ kind: 'when', body: deep }] }] }, { task_id: 'x' }), undefined);
  // Only top-level strings are left out, and only well-formed ones.
  const shape = contextShapeOf({ a: 'x', b: true, c: { d: 'y' }, e: 'lone \ud800' })!;
  assert.deepEqual(Object.keys(shape.values), ['a']);
  assert.deepEqual(
    shape.shape.map((m) => `${m[0]}:${m[1]}`),
    ['a:unknown string', 'b:value', 'c:value', 'e:value'],
  );
  assert.equal(contextShapeOf({ b: true }), undefined);
});

// ---- Whole decisions from random policy sets -------------------------------------------------------

/** The context strings a policy may read (authoritative_event is sometimes absent). */
const STRINGS = ['task_id', 'purpose', 'phase', 'authoritative_event'] as const;
const attrArb = fc.constantFrom(...STRINGS);
const literalArb = fc.constantFrom('T-1', 'a😀b', 'p', 'execute', 'propose', 'é', '');

function cedarString(s: string): string {
  return JSON.stringify(s); // Cedar string escapes agree with JSON's for these characters
}

const datetimeLiteralArb = fc.constantFrom('2026-08-24', '2026-08-24T10:00:00Z', '2026-08-24T17:00:00+0700', '2026-08-24T09:59:59.999Z');
const comparisonArb = fc.constantFrom('<', '<=', '>', '>=');

/** Boolean-ish Cedar expressions over the context strings and datetimes, entity attributes, and things that error. */
const exprArb: fc.Arbitrary<string> = fc.letrec<{ e: string }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.tuple(attrArb, patternArb).map(([a, p]) => `context.${a} like "${patternSource(p)}"`),
    fc.tuple(attrArb, literalArb).map(([a, l]) => `context.${a} == ${cedarString(l)}`),
    fc.tuple(attrArb, literalArb).map(([a, l]) => `context.${a} != ${cedarString(l)}`),
    fc.tuple(attrArb, attrArb).map(([a, b]) => `context.${a} == context.${b}`),
    fc.constant('context has authoritative_event'),
    fc.constant('principal.trusted'),
    fc.constant('resource.open'),
    fc.constant('context.arguments.n < 3'),
    attrArb.map((a) => `context.${a} == true`), // different types: simply unequal
    attrArb.map((a) => `(context.${a} && true)`), // a type error
    attrArb.map((a) => `ip(context.${a}).isLoopback()`), // an extension call: errors on most strings
    attrArb.map((a) => `context.${a}.length == 1`), // an attribute of a string: an error
    fc.constant('resource.no_such_attribute'),
    fc.tuple(comparisonArb, datetimeLiteralArb).map(([op, l]) => `context.now ${op} datetime("${l}")`),
    comparisonArb.map((op) => `(context has execute_after && context.now ${op} context.execute_after)`),
    fc.constantFrom(
      'context.now <= context.execute_after', // an error when the envelope has no execute_after
      'context.now == datetime("2026-08-24T10:00:00Z")', // datetime equality: left to Cedar
      'context.now.toTime() < duration("12h")', // a datetime method: left to Cedar
      'context.now like "*"', // a type error
    ),
    fc.constantFrom(
      '["T-1", "p"].contains(context.task_id)', // sets, longs, records and entities around the strings
      '[context.purpose, "x"].containsAny(["p", "é"])',
      '[context.purpose, "p"].containsAll([context.task_id])',
      '[context.purpose] == ["p", context.purpose]',
      '{a: context.task_id} == {a: "T-1"}',
      '{a: context.purpose, b: 2}.b < 3',
      '(if context.task_id == "T-1" then 1 else 5) <= 3',
      'context.task_id == 3',
      '[context.task_id, 1].contains(1)',
      '(if context.purpose == "p" then User::"a" else User::"b") == User::"a"',
      '(if context.purpose == "p" then principal else resource) in Role::"hr"', // an ancestor: left to Cedar
      'context.task_id in [Role::"hr"]', // a type error
      '[context.task_id].contains(context.now)', // datetime equality: left to Cedar
      '{a: context.purpose}.b == "x"', // a missing attribute: an error
    ),
    tie('e').map((e) => `!(${e})`),
    fc.tuple(tie('e'), tie('e')).map(([a, b]) => `(${a} && ${b})`),
    fc.tuple(tie('e'), tie('e')).map(([a, b]) => `(${a} || ${b})`),
    fc.tuple(tie('e'), tie('e'), tie('e')).map(([c, a, b]) => `(if ${c} then ${a} else ${b})`),
  ),
})).e;

const policyArb = fc.record({
  effect: fc.constantFrom('permit', 'forbid'),
  action: fc.constantFrom('action == Action::"s/read"', 'action'),
  needsHr: fc.boolean(),
  conditions: fc.array(fc.tuple(fc.constantFrom('when', 'unless'), exprArb), { maxLength: 2 }),
});
const policySetArb = fc.array(policyArb, { minLength: 1, maxLength: 5 });

function policyText(set: Array<typeof policyArb extends fc.Arbitrary<infer T> ? T : never>): string {
  return set
    .map((p, i) => {
      const note = p.effect === 'forbid' && p.needsHr ? '@requires_approval("Role::\\"hr\\"") ' : '';
      const conds = p.conditions.map(([kind, e]) => ` ${kind} { ${e} }`).join('');
      return `@id("p${i}") ${note}${p.effect} (principal, ${p.action}, resource)${conds};`;
    })
    .join('\n');
}

const ENTITIES: EntityJson[] = [
  { uid: uid('Role', 'hr'), attrs: {}, parents: [] },
  { uid: uid('User', 'req'), attrs: {}, parents: [uid('Role', 'hr')] },
  { uid: uid('Agent', 'a1'), attrs: { trusted: true }, parents: [] },
  { uid: uid('Agent', 'a2'), attrs: { trusted: false }, parents: [] },
  { uid: uid('Doc', 'd1'), attrs: { open: true }, parents: [] },
];

/** Few shapes (agent, tool, phase, event present or not), many strings: residual programs get reused. */
const requestArb = fc.record({
  actor: fc.constantFrom('a1', 'a2'),
  tool: fc.constantFrom('read', 'write'),
  task_id: textArb,
  purpose: fc.oneof(literalArb, textArb),
  phase: fc.constantFrom('propose', 'execute'),
  event: fc.option(fc.oneof(literalArb, textArb), { nil: undefined }),
  n: fc.constantFrom(1, 5),
  now: fc.constantFrom('2026-08-24T10:00:00Z', '2026-08-24T09:59:59.999Z', '2026-08-24T00:00:00Z', '2026-08-23T23:59:59Z', '2026-08-25T00:00:00.001Z'),
  executeAfter: fc.option(fc.constantFrom('2026-08-24T17:00:00+07:00', '2026-08-24T10:00:00Z', '2026-08-24T09:59:59.999-00:00'), { nil: undefined }),
});

type Req = Omit<typeof requestArb extends fc.Arbitrary<infer T> ? T : never, 'now' | 'executeAfter'> & { now: string; executeAfter: string | undefined };
function toInput(r: Req, entities: StaticEntitySource): DecisionInput {
  const envelope: Record<string, unknown> = { task_id: r.task_id, purpose: r.purpose, requester: uid('User', 'req') };
  if (r.event !== undefined) envelope.authoritative_event = r.event;
  if (r.executeAfter !== undefined) envelope.execute_after = r.executeAfter;
  return {
    actor: uid('Agent', r.actor),
    server: 's',
    tool: r.tool,
    subject: uid('Doc', 'd1'),
    envelope,
    phase: r.phase,
    binding: 'b',
    cedarArguments: { n: r.n },
    now: new Date(r.now),
    approvals: [],
    entities,
  };
}

test('decisions from residual programs equal the uncached engine on random policy sets over strings and datetimes (decision, reasons, errors, obligations)', () => {
  const entities = new StaticEntitySource(ENTITIES);
  let residual = 0;
  let decisions = 0;
  fc.assert(
    fc.property(policySetArb, fc.array(requestArb, { minLength: 20, maxLength: 60 }), (set, requests) => {
      const { dir, cleanup } = tempPolicyDir({ 'p.cedar': policyText(set) });
      let bundle;
      try {
        bundle = loadPolicyDir(dir);
      } finally {
        cleanup();
      }
      const uncached = new PolicyEngine(bundle);
      const reduced = new PolicyEngine(bundle, { memoSize: 16, partialEvaluationShare: 1 });
      for (const r of requests) {
        const input = toInput(r, entities);
        assert.deepStrictEqual(reduced.evaluate(input), uncached.evaluate(input), `${policyText(set)}\n${JSON.stringify(r)}`);
        decisions++;
      }
      residual += reduced.residualAnswers;
    }),
    { seed: 0x2e51d, numRuns: 120 },
  );
  // Not vacuous: a good share of the decisions came from residual programs.
  assert.ok(residual > decisions / 8, `residual answers ${residual} of ${decisions}`);
});

test('through the evaluator pool, distinct task ids are answered by the residual program, exactly as the uncached engine answers', async () => {
  const { dir, cleanup } = tempPolicyDir({
    'p.cedar': `
@id("read") permit (principal is Agent, action == Action::"s/read", resource) when { principal.trusted && context.requester in Role::"hr" };
@id("blocked") forbid (principal, action == Action::"s/read", resource) when { context.task_id like "*-blocked" };
@id("hold") @requires_approval("Role::\\"hr\\"") forbid (principal, action == Action::"s/read", resource) when { context.task_id like "HOLD-*" };
@id("ip") forbid (principal, action == Action::"s/read", resource) when { context.task_id like "ip:*" && ip(context.purpose).isLoopback() };
`,
  });
  const bundle = loadPolicyDir(dir);
  cleanup();
  const entities = new StaticEntitySource(ENTITIES);
  const uncached = new PolicyEngine(bundle);
  const reduced = new PolicyEngine(bundle, { memoSize: 64, partialEvaluationShare: 1 });
  const pool = new EvaluatorPool(1);
  pool.register(reduced, bundle);
  try {
    const seen = new Set<string>();
    for (let i = 0; i < 300; i++) {
      const task = ['T-', 'X-blocked-', 'HOLD-', 'ip:'][i % 4] + String(i) + (i % 8 === 1 ? '-blocked' : '');
      const input = toInput(
        {
          actor: 'a1',
          tool: 'read',
          task_id: task,
          purpose: i % 3 === 0 ? '127.0.0.1' : 'offboarding',
          phase: 'execute',
          event: undefined,
          n: 1,
          now: '2026-08-24T10:00:00Z',
          executeAfter: undefined,
        },
        entities,
      );
      const expected = uncached.evaluate(input);
      assert.deepStrictEqual(await pool.evaluate(reduced, input), expected, task);
      seen.add(expected.decision);
    }
    // Every kind of answer was given, errors included (an ip() on "offboarding" is Cedar's to report) …
    assert.deepEqual([...seen].sort(), ['allow', 'approval_required', 'deny']);
    // … and most of them without Cedar.
    assert.ok(reduced.residualAnswers > 150, `residual answers ${reduced.residualAnswers}`);
  } finally {
    await pool.close();
  }
});

test('a clock that moves on every call: policies reading now and execute_after are answered by one residual program, as Cedar answers them', () => {
  const { dir, cleanup } = tempPolicyDir({
    'p.cedar': `
@id("read") permit (principal is Agent, action == Action::"s/read", resource) when { principal.trusted };
@id("not-before") forbid (principal, action == Action::"s/read", resource)
when { context.phase == "execute" && context has execute_after && context.now < context.execute_after };
@id("window") @requires_approval("Role::\\"hr\\"") forbid (principal, action == Action::"s/read", resource)
when { context.now >= datetime("2026-08-24T18:00:00+0200") && context.task_id like "late-*" };
`,
  });
  const bundle = loadPolicyDir(dir);
  cleanup();
  const entities = new StaticEntitySource(ENTITIES);
  const uncached = new PolicyEngine(bundle);
  const reduced = new PolicyEngine(bundle, { memoSize: 64, partialEvaluationShare: 1 });
  const start = Date.parse('2026-08-24T09:59:00Z');
  const seen = new Set<string>();
  for (let i = 0; i < 400; i++) {
    // A clock one 997 ms step further each call, across execute_after (10:00Z) and the window (16:00Z).
    const now = new Date(start + i * 997 * 67).toISOString();
    const input = toInput(
      {
        actor: 'a1',
        tool: 'read',
        task_id: i % 2 ? `late-${i}` : `T-${i}`,
        purpose: 'p',
        phase: 'execute',
        event: undefined,
        n: 1,
        now,
        executeAfter: '2026-08-24T17:00:00+07:00',
      },
      entities,
    );
    const expected = uncached.evaluate(input);
    assert.deepStrictEqual(reduced.evaluate(input), expected, now);
    seen.add(`${expected.decision} ${expected.reasons.join(',')}`);
  }
  assert.deepEqual([...seen].sort(), ['allow read', 'approval_required window', 'deny not-before']);
  assert.ok(reduced.residualAnswers > 390, `residual answers ${reduced.residualAnswers}`);
});

test('residual programs follow the entities: a change of trust is seen by the next decision', () => {
  const { dir, cleanup } = tempPolicyDir({
    'p.cedar': '@id("read") permit (principal, action, resource) when { principal.trusted && context.task_id like "T-*" };',
  });
  const bundle = loadPolicyDir(dir);
  cleanup();
  const reduced = new PolicyEngine(bundle, { memoSize: 64, partialEvaluationShare: 1 });
  const trusted = new StaticEntitySource(ENTITIES);
  for (let i = 0; i < 5; i++)
    assert.equal(
      reduced.evaluate(
        toInput(
          {
            actor: 'a1',
            tool: 'read',
            task_id: `T-${i}`,
            purpose: 'p',
            phase: 'execute',
            event: undefined,
            n: 1,
            now: '2026-08-24T10:00:00Z',
            executeAfter: undefined,
          },
          trusted,
        ),
      ).decision,
      'allow',
    );
  assert.ok(reduced.residualAnswers >= 3);
  const distrusted = new StaticEntitySource(ENTITIES.map((e) => (e.uid.id === 'a1' ? { ...e, attrs: { trusted: false } } : e)));
  assert.notEqual(distrusted.version, trusted.version);
  assert.equal(
    reduced.evaluate(
      toInput(
        {
          actor: 'a1',
          tool: 'read',
          task_id: 'T-9',
          purpose: 'p',
          phase: 'execute',
          event: undefined,
          n: 1,
          now: '2026-08-24T10:00:00Z',
          executeAfter: undefined,
        },
        distrusted,
      ),
    ).decision,
    'deny',
  );
});
