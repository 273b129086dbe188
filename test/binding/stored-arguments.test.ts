// storedArgumentsProblem (what `writ verify` asks of a decision's stored arguments) must agree with
// admission itself: what admission refuses is a problem, what it takes back unchanged is not.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_ARGUMENT_DEPTH, storedArgumentsProblem } from '../../src/binding/index.js';
import { jcs } from '../../src/util/canonical.js';
import { loadVectors } from './helpers.js';

test('the canonical text of every admitted vector is a stored call with no problem', () => {
  let checked = 0;
  for (const v of loadVectors()) {
    if ('error' in v.expect) continue;
    assert.equal(storedArgumentsProblem(v.expect.canonical), undefined, v.name);
    checked++;
  }
  assert.ok(checked >= 40, `only ${checked} admitted vectors`);
});

test('JCS texts that admission refuses are problems, fast path or not', () => {
  const nested = (depth: number): unknown => (depth === 1 ? {} : { a: nested(depth - 1) });
  const refused: Array<[string, string]> = [
    ['7 fractional digits', jcs({ ratio: 1e-7 })],
    ['a double that is no Cedar decimal', jcs({ ratio: 0.1 + 0.2 })],
    ['an unsafe integer', jcs({ count: 2 ** 53 })],
    ['an integral exponent form', jcs({ big: 1e21 })],
    ['a lone surrogate', '{"s":"\\ud800"}'],
    ['a lone surrogate, upper-case escape', '{"s":"\\uD800"}'],
    ['an array', '[1,2]'],
    ['a string', '"x"'],
    [`depth ${MAX_ARGUMENT_DEPTH + 1}`, jcs(nested(MAX_ARGUMENT_DEPTH + 1))],
    ['a Cedar escape as a member name', jcs({ who: { __entity: { type: 'User', id: 'x' } } })],
    ['an exponent beside admissible numbers', jcs({ a: 1, b: [0.5, -2], c: 1e-7 })],
  ];
  for (const [what, text] of refused) assert.notEqual(storedArgumentsProblem(text), undefined, what);
});

test('texts admission takes back unchanged are not problems (numbers, escapes, depth at the limit)', () => {
  const nested = (depth: number): unknown => (depth === 1 ? {} : { a: nested(depth - 1) });
  const admitted = [
    jcs({ employee_id: '7721', note: 'digits 1-2 and a minus - in a string' }),
    jcs({ count: -1, ratio: 0.5, zero: 0, max: 2 ** 53 - 1 }),
    jcs({ quote: 'say "hi" \\ok\n', nul: null, yes: true, list: ['a', ['b']] }),
    jcs({ text: 'é ✓ 😀' }),
    jcs(nested(MAX_ARGUMENT_DEPTH)),
    '{}',
  ];
  for (const text of admitted) assert.equal(storedArgumentsProblem(text), undefined, text.slice(0, 60));
});
