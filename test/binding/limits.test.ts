// Admission limits (src/binding/limits.ts), enforced by the lossless parser: each limit refuses the
// first member past it, in document order, with LIMIT_EXCEEDED and its JSON pointer, and parses no
// further; a body within every limit parses as without limits.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { admissionLimitsOf, DEFAULT_ADMISSION_LIMITS, type AdmissionLimits } from '../../src/binding/limits.js';
import { parseLossless } from '../../src/binding/index.js';
import { isWritError } from '../../src/errors.js';

const small: AdmissionLimits = { object_members: 3, array_elements: 2, total_members: 6, string_length: 5 };

function refusal(text: string, limits = small): { code: string; path: string | undefined } | undefined {
  try {
    assert.deepEqual(parseLossless(text, undefined, limits), parseLossless(text));
    return undefined;
  } catch (e) {
    assert.ok(isWritError(e));
    return { code: e.code, path: e.path };
  }
}

test('a body within every limit passes', () => {
  assert.equal(refusal('{"a":1,"b":[1,2],"c":"12345"}'), undefined);
  assert.equal(refusal('"12345"'), undefined);
  assert.equal(refusal('[]'), undefined);
});

test('members per object: the first member past the limit', () => {
  assert.deepEqual(refusal('{"x":{"a":1,"b":2,"c":3,"d":4}}'), { code: 'LIMIT_EXCEEDED', path: '/x/d' });
});

test('elements per array: the first element past the limit', () => {
  assert.deepEqual(refusal('{"x":[1,2,3]}'), { code: 'LIMIT_EXCEEDED', path: '/x/2' });
});

test('string length: values and member names', () => {
  assert.deepEqual(refusal('{"x":["ok","123456"]}'), { code: 'LIMIT_EXCEEDED', path: '/x/1' });
  assert.deepEqual(refusal('{"123456":1}'), { code: 'LIMIT_EXCEEDED', path: '/123456' });
  assert.deepEqual(refusal('"123456"'), { code: 'LIMIT_EXCEEDED', path: '' });
});

test('total members count every member and element of the body, and point at the first past it', () => {
  // 7 in all: a, b, b/0, b/1, c, c/p, c/q → the 7th (c/q) is refused.
  assert.deepEqual(refusal('{"a":1,"b":[1,2],"c":{"p":1,"q":2}}'), { code: 'LIMIT_EXCEEDED', path: '/c/q' });
});

test('document order decides which excess is first; "~" and "/" are escaped; an earlier duplicate key is reported instead', () => {
  assert.deepEqual(refusal('{"a":"toolong","b":[1,2,3]}'), { code: 'LIMIT_EXCEEDED', path: '/a' });
  assert.deepEqual(refusal('{"2":[1,2,3],"1":"toolong"}'), { code: 'LIMIT_EXCEEDED', path: '/2/2' });
  assert.deepEqual(refusal('{"a/b":[1,2,3]}'), { code: 'LIMIT_EXCEEDED', path: '/a~1b/2' });
  assert.deepEqual(refusal('{"a":1,"a":2,"b":[1,2,3]}'), { code: 'BINDING_DUPLICATE_KEY', path: '/a' });
});

test('the parse stops at the first excess: text after it is never read', () => {
  assert.deepEqual(refusal('{"x":[1,2,3, this is not JSON'), { code: 'LIMIT_EXCEEDED', path: '/x/2' });
});

test('the defaults admit a real tool call and refuse the wide one of issue 49', () => {
  assert.equal(refusal(JSON.stringify({ employee_id: '7721', groups: ['a', 'b'], note: 'x'.repeat(1000) }), DEFAULT_ADMISSION_LIMITS), undefined);
  const wide: Record<string, number> = {};
  for (let i = 0; i < 96_000; i++) wide[`k${i}`] = i;
  assert.deepEqual(refusal(JSON.stringify({ wide }), DEFAULT_ADMISSION_LIMITS), { code: 'LIMIT_EXCEEDED', path: '/wide/k1024' });
});

test('config: partial limits take the defaults for the rest; unknown or non-positive ones are refused', () => {
  assert.deepEqual(admissionLimitsOf(undefined), DEFAULT_ADMISSION_LIMITS);
  assert.deepEqual(admissionLimitsOf({ string_length: 10 }), { ...DEFAULT_ADMISSION_LIMITS, string_length: 10 });
  assert.equal(typeof admissionLimitsOf({ members: 1 }), 'string');
  assert.equal(typeof admissionLimitsOf({ total_members: 0 }), 'string');
  assert.equal(typeof admissionLimitsOf([]), 'string');
});
