// Decision admission keeps what it derives from the exact text of a body's `action` and `envelope`
// (src/pdp/admission.ts MemberTextMemo). Held here: an admitted decision is the same
// whether its views came from the memo or were computed afresh (bindings, canonical texts, Cedar views,
// digests), across texts that differ only in spelling (`1` / `1.0`, key order, escapes, whitespace),
// refusals are never kept, and the shared views cannot be changed by a caller.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { admitDecision as admitWithLimits } from '../../src/pdp/admission.js';
import { DEFAULT_ADMISSION_LIMITS } from '../../src/binding/limits.js';
import { bindCall, admitValue, parseLossless, memberOf, toPlain, envelopeDigest } from '../../src/binding/index.js';
import { jcs } from '../../src/util/canonical.js';
import { isWritError } from '../../src/errors.js';
import type { Caller } from '../../src/identity/caller.js';

const admitDecision = (c: Caller, text: string) => admitWithLimits(c, text, DEFAULT_ADMISSION_LIMITS);
const caller = { role: 'pep', name: 'test-pep', actor: { type: 'Agent', id: 'offboarding-agent-prod' } } as Caller;

/** What admission derives, computed from scratch with no memo. */
function fresh(text: string) {
  const raw = parseLossless(text);
  const body = toPlain(raw) as Record<string, any>;
  const bound = bindCall(body.action.server, body.action.tool, admitValue(memberOf(memberOf(raw, 'action'), 'arguments')!, '/action/arguments'));
  return { bound, envelopeJcs: jcs(body.envelope), envDigest: envelopeDigest(body.envelope as never) };
}

const envelopes = [
  '{"task_id":"T-1","purpose":"p","requester":{"type":"User","id":"u-1"},"actor":{"type":"Agent","id":"offboarding-agent-prod"},"subject":{"type":"Employee","id":"7721"}}',
  '{"purpose":"p","task_id":"T-1","requester":{"id":"u-1","type":"User"},"actor":{"type":"Agent","id":"offboarding-agent-prod"},"subject":{"type":"Employee","id":"7721"}}',
  '{ "task_id" : "T-\\u0031", "purpose":"p","requester":{"type":"User","id":"u-1"},"actor":{"type":"Agent","id":"offboarding-agent-prod"},"subject":{"type":"Employee","id":"7721"}}',
  '{"task_id":"T-2","purpose":"p","requester":{"type":"User","id":"u-1"},"actor":{"type":"Agent","id":"offboarding-agent-prod"},"subject":{"type":"Employee","id":"7722"}}',
];
const actions = [
  '{"server":"hris","tool":"read_employee","arguments":{"employee_id":"7721","limit":1}}',
  '{"server":"hris","tool":"read_employee","arguments":{"employee_id":"\\u0037721","limit":1}}',
  '{"tool":"read_employee","server":"hris","arguments":{"limit":1,"employee_id":"7721"}}',
  '{"server":"hris","tool":"read_employee","arguments":{"employee_id":"7721","limit":1.5,"tags":["a","b"],"nested":{"x":null}}}',
  '{"server":"idp","tool":"read_employee","arguments":{"employee_id":"7721","limit":1}}',
];

test('admission from the memo equals admission from scratch, text by text', () => {
  let n = 0;
  for (let round = 0; round < 3; round++) {
    for (const envelope of envelopes) {
      for (const action of actions) {
        const text = `{"execution_id":"e-${n++}","phase":"execute","envelope":${envelope},"action":${action}}`;
        const admitted = admitDecision(caller, text);
        const expected = fresh(text);
        assert.deepEqual(admitted.bound, expected.bound);
        assert.equal(admitted.envelopeJcs, expected.envelopeJcs);
        assert.equal(admitted.envDigest, expected.envDigest);
        assert.equal(admitted.executionId, `e-${n - 1}`);
      }
    }
  }
  // Two spellings of one value share a binding; another value does not.
  const a = admitDecision(caller, `{"execution_id":"x1","phase":"execute","envelope":${envelopes[0]},"action":${actions[0]}}`);
  const b = admitDecision(caller, `{"execution_id":"x2","phase":"execute","envelope":${envelopes[0]},"action":${actions[1]}}`);
  const c = admitDecision(caller, `{"execution_id":"x3","phase":"execute","envelope":${envelopes[0]},"action":${actions[3]}}`);
  assert.equal(a.bound.binding, b.bound.binding);
  assert.notEqual(a.bound.binding, c.bound.binding);
  assert.deepEqual(c.bound.cedar, { employee_id: '7721', limit: { __extn: { fn: 'decimal', arg: '1.5' } }, tags: ['a', 'b'], nested: {} });
});

test('a refused body is refused every time: nothing of it is kept', () => {
  const tooDeep = `{"server":"hris","tool":"t","arguments":{"a":${'['.repeat(70)}${']'.repeat(70)}}}`;
  const unrepresentable = '{"server":"hris","tool":"t","arguments":{"n":1e400}}';
  const lossy = '{"server":"hris","tool":"t","arguments":{"x":1.0}}'; // `{"x":1}` vs `{"x":1.0}`: the classic
  for (const action of [tooDeep, unrepresentable, lossy]) {
    const codes = new Set<string>();
    for (let i = 0; i < 3; i++) {
      try {
        admitDecision(caller, `{"execution_id":"r-${i}","phase":"execute","envelope":${envelopes[0]},"action":${action}}`);
        codes.add('admitted');
      } catch (e) {
        assert.ok(isWritError(e));
        codes.add(e.code);
      }
    }
    assert.equal(codes.size, 1);
    assert.ok(!codes.has('admitted'));
  }
  // A duplicate key inside an otherwise remembered action is still refused.
  admitDecision(caller, `{"execution_id":"d-0","phase":"execute","envelope":${envelopes[0]},"action":${actions[0]}}`);
  const duplicated = actions[0]!.replace('"limit":1', '"limit":1,"limit":1');
  assert.throws(() => admitDecision(caller, `{"execution_id":"d-1","phase":"execute","envelope":${envelopes[0]},"action":${duplicated}}`), {
    code: 'BINDING_DUPLICATE_KEY',
  });
  // So is an envelope the schema refuses, or another actor's.
  assert.throws(
    () =>
      admitDecision(
        caller,
        `{"execution_id":"d-2","phase":"execute","envelope":${envelopes[0]!.replace('offboarding-agent-prod', 'someone-else')},"action":${actions[0]}}`,
      ),
    { code: 'ACTOR_MISMATCH' },
  );
});

test('views shared between requests cannot be changed by one of them', () => {
  const text = (i: number) => `{"execution_id":"s-${i}","phase":"execute","envelope":${envelopes[0]},"action":${actions[3]}}`;
  admitDecision(caller, text(0));
  const shared = admitDecision(caller, text(1));
  assert.throws(() => {
    (shared.bound.arguments as Record<string, unknown>).employee_id = 'other';
  }, TypeError);
  assert.throws(() => {
    ((shared.bound.cedar as Record<string, unknown>).tags as unknown[]).push('c');
  }, TypeError);
  assert.equal(admitDecision(caller, text(2)).bound.binding, fresh(text(2)).bound.binding);
});
