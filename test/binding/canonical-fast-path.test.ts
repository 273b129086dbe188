// The one canonicalization writes strings, booleans, and arrays and flat records of strings itself (src/util/canonical.ts
// jcsOrUndefined) and hands everything else to canonicalize@5.1.0. Held equal to the library here —
// same text, or both refuse — on random values that mix those leaves with everything they are not:
// lone surrogates, holes, arrays with a toJSON, numbers, nulls, nested objects.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import canonicalizeImpl from 'canonicalize';
import { jcs, jcsOrUndefined } from '../../src/util/canonical.js';

const library = canonicalizeImpl;

function outcome(f: () => string | undefined): { text: string | undefined } | { threw: true } {
  try {
    return { text: f() };
  } catch {
    return { threw: true };
  }
}

const unit = fc.oneof(
  fc.constantFrom('a', '"', '\\', '/', '\n', '\u0000', '\u001f', '\u007f', '\u2028', 'é', '😀', '\ud800', '\udfff', '\ud83d', '\ude00'),
  fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u)),
);
const text = fc.string({ unit, maxLength: 12 });
const leaf = fc.oneof(text, fc.boolean(), fc.integer(), fc.double(), fc.constant(null), fc.constant(undefined));
const value = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    text,
    leaf,
    fc.array(text, { maxLength: 6 }),
    fc.array(tie('v'), { maxLength: 4 }),
    fc.dictionary(text, tie('v'), { maxKeys: 4 }),
    fc.dictionary(fc.oneof(text, fc.constantFrom('__proto__', 'toJSON', 'constructor')), text, { maxKeys: 5 }),
    fc.sparseArray(text, { maxLength: 5 }),
    fc.array(text, { maxLength: 3 }).map((a) => Object.assign(a, { toJSON: () => 'replaced' })),
  ),
})).v;

test('jcsOrUndefined gives the library’s text, or refuses where it refuses', () => {
  fc.assert(
    fc.property(value, (v) => {
      assert.deepEqual(
        outcome(() => jcsOrUndefined(v)),
        outcome(() => library(v)),
      );
    }),
    { seed: 0x6a65, numRuns: 4000 },
  );
});

test('the written leaves, one by one', () => {
  for (const v of ['', 'plain', 'quote " and \\ and \u0000\u001f', '\u2028\u2029', '😀', [], ['a', 'b'], ['', '😀'], true, false]) {
    assert.equal(jcsOrUndefined(v), library(v));
    assert.equal(jcs(v), library(v));
  }
  for (const v of ['\ud800', ['ok', '\udc00'], 'x\ud83d']) {
    assert.throws(() => jcsOrUndefined(v));
    assert.throws(() => library(v));
  }
  // A hole, a non-string element and an array with its own toJSON go to the library.
  // biome-ignore lint/suspicious/noSparseArray: a hole is the input under test.
  assert.equal(jcsOrUndefined([, 'a']), '[null,"a"]');
  assert.equal(jcsOrUndefined(['a', 1]), '["a",1]');
  assert.equal(jcsOrUndefined(Object.assign(['a'], { toJSON: () => 7 })), '7');
  assert.equal(jcsOrUndefined({ type: 'Agent', id: 'a"b' }), '{"id":"a\\"b","type":"Agent"}');
  assert.equal(jcsOrUndefined({ b: 'x', a: 1 }), '{"a":1,"b":"x"}');
  assert.equal(jcsOrUndefined({ toJSON: () => 'y' }), '"y"');
  assert.throws(() => jcsOrUndefined({ '\udc00': 'x' }));
  assert.equal(jcsOrUndefined(undefined), undefined);
  assert.throws(() => jcs(undefined), TypeError);
});
