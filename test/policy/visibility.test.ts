// Tool visibility (docs/protocol.md §15; src/policy/visibility.ts, PolicyEngine.mayBeCalled): a tool is
// hidden only when every call of it is denied. Property test over generated policy sets: whenever
// mayBeCalled says false, no generated call — any arguments, approvals, optional context members —
// is allowed or approval_required by the full engine.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { PolicyEngine } from '../../src/policy/engine.js';
import { loadPolicyDir } from '../../src/policy/load.js';
import { ENTITIES, input, tempPolicyDir } from './helpers.js';
import { StaticEntitySource } from '../../src/policy/entities.js';

const entities = new StaticEntitySource(ENTITIES);
const ask = (engine: PolicyEngine, tool: string, requester = 'req') =>
  engine.mayBeCalled({
    actor: { type: 'Agent', id: 'a1' },
    requester: { type: 'User', id: requester },
    subject: { type: 'Doc', id: 'd1' },
    server: 's',
    tool,
    entities,
  });

function engineOf(policies: string): { engine: PolicyEngine; cleanup: () => void } {
  const d = tempPolicyDir({ 'p.cedar': policies });
  return { engine: new PolicyEngine(loadPolicyDir(d.dir)), cleanup: d.cleanup };
}

test('hidden: no permit, or an unconditional forbid; listed: a permit on arguments, an approval-lifted forbid, an optional member', () => {
  const { engine, cleanup } = engineOf(`
    @id("p-t") permit (principal, action == Action::"s/t", resource);
    @id("p-args") permit (principal, action == Action::"s/args", resource) when { context.arguments.n == 3 };
    @id("f-gone") forbid (principal, action == Action::"s/t", resource) when { context.requester == User::"bob" };
    @id("p-appr") permit (principal, action == Action::"s/appr", resource);
    @id("f-appr") @requires_approval("Role::\\"hr\\"") forbid (principal, action == Action::"s/appr", resource) unless { context has approver && context.approver in Role::"hr" };
    @id("p-late") permit (principal, action == Action::"s/late", resource);
    @id("f-late") forbid (principal, action == Action::"s/late", resource) when { context.execute_after > context.now };
  `);
  try {
    assert.equal(ask(engine, 't'), true);
    assert.equal(ask(engine, 't', 'bob'), false, 'a forbid that applies whatever the call');
    assert.equal(ask(engine, 'nothing'), false, 'no permit names it');
    assert.equal(ask(engine, 'args'), true, 'allowed for some arguments');
    assert.equal(ask(engine, 'appr'), true, 'an approval can lift the forbid');
    assert.equal(ask(engine, 'late'), true, 'allowed once execute_after has passed, or without it');
  } finally {
    cleanup();
  }
});

// Generated policy sets over three tools, conditions on arguments, requester, approver and an optional member.
const conditionArb = fc.constantFrom(
  '',
  'when { context.arguments.n == 1 }',
  'when { context.arguments.n > 5 }',
  'unless { context.arguments has n }',
  'when { context.requester == User::"req" }',
  'when { context.requester == User::"bob" }',
  'when { context has approver && context.approver in Role::"hr" }',
  'unless { context has approver }',
  'when { context has execute_after }',
  'when { principal.trusted }',
  'when { resource.secret }',
  'when { context.purpose == "testing" }',
);
const policyArb = fc.record({
  effect: fc.constantFrom('permit', 'forbid'),
  tool: fc.constantFrom('a', 'b', 'c', '*'),
  approval: fc.boolean(),
  condition: conditionArb,
});
const callArb = fc.record({
  args: fc.constantFrom<Record<string, number>>({}, { n: 1 }, { n: 7 }, { n: 3 }),
  approver: fc.constantFrom(undefined, 'alice', 'bob'),
  executeAfter: fc.boolean(),
  purpose: fc.constantFrom('testing', 'other'),
});

test('property: a tool mayBeCalled hides is never allowed nor approval_required by any generated call', () => {
  let hidden = 0;
  let listed = 0;
  fc.assert(
    fc.property(fc.array(policyArb, { minLength: 1, maxLength: 5 }), fc.array(callArb, { minLength: 6, maxLength: 12 }), (policies, calls) => {
      const text = policies
        .map((p, i) => {
          const scope = p.tool === '*' ? 'action' : `action == Action::"s/${p.tool}"`;
          const ann = p.effect === 'forbid' && p.approval ? '@requires_approval("Role::\\"hr\\"") ' : '';
          return `@id("g${i}") ${ann}${p.effect} (principal, ${scope}, resource) ${p.condition};`;
        })
        .join('\n');
      const { engine, cleanup } = engineOf(text);
      try {
        for (const tool of ['a', 'b', 'c']) {
          if (ask(engine, tool)) {
            listed++;
            continue;
          }
          hidden++;
          for (const c of calls) {
            const approvals = c.approver
              ? [{ approval_id: 'ap-1', approver: { type: 'User', id: c.approver }, approved_at: '2026-08-24T09:00:00Z', expires_at: '2026-08-25T09:00:00Z' }]
              : [];
            const envelope: Record<string, unknown> = { task_id: 'T-1', purpose: c.purpose, requester: { type: 'User', id: 'req' } };
            if (c.executeAfter) envelope.execute_after = '2026-08-24T08:00:00Z';
            const out = engine.evaluate(input({ tool, phase: 'execute', cedarArguments: c.args, approvals, envelope }));
            assert.equal(out.decision, 'deny', `tool ${tool} hidden, but ${JSON.stringify(c)} is ${out.decision} under\n${text}`);
          }
        }
      } finally {
        cleanup();
      }
    }),
    { seed: 4711, numRuns: 120 },
  );
  // Not vacuous: the generated sets hide some tools and list others.
  assert.ok(hidden > 20 && listed > 20, `hidden ${hidden}, listed ${listed}`);
});
