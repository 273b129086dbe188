import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isCanonicalLineSlow, scanCanonicalObject } from '../../src/ledger/canonical-scan.js';
import { jcs } from '../../src/util/canonical.js';

// The verifier's fast scan must agree with the reference judgement (JSON.parse, then jcs() === line)
// on canonical lines, on near-misses and on garbage.

// Any code point (well-formed UTF-16: JCS has no form for lone surrogates; the near-miss test adds them).
const anyString = fc.string({ unit: 'binary', maxLength: 12 });
const jsonLeaf = fc.oneof(
  anyString,
  fc.boolean(),
  fc.constant(null),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -0, 1e21, 1e-7, 123456789012345680000, 0.1, 5e-324, 2 ** 53, -(2 ** 53) - 2),
);
const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, jsonLeaf, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(fc.oneof(anyString, fc.constantFrom('10', '9', 'a', 'A', 'é', '\u{1F600}', '')), tie('value'), { maxKeys: 5 }),
})).value;
const jsonObject = fc.dictionary(fc.oneof(anyString, fc.constantFrom('hash', 'seq', 'kind')), jsonValue, { maxKeys: 6 });

test('every JCS text of an object scans as canonical', () => {
  fc.assert(
    fc.property(jsonObject, (obj) => {
      const line = jcs(obj);
      assert.equal(isCanonicalLineSlow(line), true);
      assert.equal(scanCanonicalObject(line) !== undefined, true, line);
    }),
    { numRuns: 3000, seed: 8785 },
  );
});

const NASTY = [
  '"',
  '\\',
  ' ',
  ',',
  ':',
  '{',
  '}',
  '[',
  ']',
  '0',
  '1',
  '.',
  'e',
  'E',
  '-',
  '+',
  'u',
  'n',
  '/',
  '\t',
  '\n',
  '\u0000',
  '\ud800',
  '\udc00',
  'é',
  'a',
  'A',
  'F',
  'f',
];

test('near-misses of canonical lines are judged exactly like the reference', () => {
  fc.assert(
    fc.property(
      jsonObject,
      fc.array(fc.tuple(fc.nat(), fc.constantFrom('insert', 'delete', 'replace'), fc.constantFrom(...NASTY)), { minLength: 1, maxLength: 3 }),
      (obj, edits) => {
        let line = jcs(obj);
        for (const [position, op, ch] of edits) {
          const i = line.length === 0 ? 0 : position % (line.length + (op === 'insert' ? 1 : 0));
          if (op === 'insert') line = line.slice(0, i) + ch + line.slice(i);
          else if (op === 'delete') line = line.slice(0, i) + line.slice(i + 1);
          else line = line.slice(0, i) + ch + line.slice(i + 1);
        }
        assert.equal(scanCanonicalObject(line) !== undefined, isCanonicalLineSlow(line), JSON.stringify(line));
      },
    ),
    { numRuns: 5000, seed: 2026 },
  );
});

test('hand-picked cases: numbers, escapes, surrogates, key order, structure', () => {
  const cases: Array<[string, boolean]> = [
    ['{}', true],
    ['{"a":1}', true],
    ['{"a":1.0}', false],
    ['{"a":1e0}', false],
    ['{"a":-0}', false],
    ['{"a":0}', true],
    ['{"a":01}', false],
    ['{"a":1e+21}', true],
    ['{"a":1e21}', false],
    ['{"a":1E+21}', false],
    ['{"a":1e-7}', true],
    ['{"a":0.0000001}', false],
    ['{"a":123456789012345680000}', true],
    ['{"a":9007199254740993}', false],
    ['{"a":1e999}', false],
    ['{"a":"\\u0000"}', true],
    ['{"a":"\\u001F"}', false],
    ['{"a":"\\u001f"}', true],
    ['{"a":"\\u000a"}', false],
    ['{"a":"\\n"}', true],
    ['{"a":"\\/"}', false],
    ['{"a":"\\u00e9"}', false],
    ['{"a":"é"}', true],
    ['{"a":"\\ud800"}', false],
    ['{"a":"\\udc00"}', false],
    ['{"a":"\\ud83d\\ude00"}', false],
    ['{"a":"\u{1F600}"}', true],
    ['{"a":"\ud800"}', false],
    ['{"a":"\\ud800\udc00"}', false],
    ['{"a":"\ud800\\udc00"}', false],
    ['{"a":"\\ud800\\ud800"}', false],
    ['{"a":"\ud800a"}', false],
    ['{"a":"\udc00\ud800"}', false],
    ['{"a":"\u007f"}', true],
    ['{"a":"\ue000\ufffd\uffff"}', true],
    ['{"a":"\t"}', false],
    ['{"10":1,"9":2}', true],
    ['{"9":1,"10":2}', false],
    ['{"a":1,"a":1}', false],
    ['{"b":1,"a":2}', false],
    ['{"":1,"a":2}', true],
    ['{"\\u0001":1,"a":2}', true],
    ['{"a":2,"\\u0001":1}', false],
    ['{"a":[1,{"b":null,"c":true}],"b":false}', true],
    ['{"a":[1,{"c":null,"b":true}]}', false],
    ['{"a":1} ', false],
    [' {"a":1}', false],
    ['{"a": 1}', false],
    ['{"a":1,}', false],
    ['{"a":[1,]}', false],
    ['{"a":tru}', false],
    ['{"a":nulll}', false],
    ['[1]', false],
    ['"a"', false],
    ['{"a":1}{"b":2}', false],
    ['{"a":"unterminated}', false],
  ];
  for (const [line, canonical] of cases) {
    assert.equal(isCanonicalLineSlow(line), canonical, `reference on ${JSON.stringify(line)}`);
    assert.equal(scanCanonicalObject(line) !== undefined, canonical, `scan on ${JSON.stringify(line)}`);
  }
  // Beyond its depth limit the scan declines (never overflows the stack) and the reference decides.
  const deep = `{"a":${'['.repeat(2000)}${']'.repeat(2000)}}`;
  assert.equal(scanCanonicalObject(deep) !== undefined, false);
  assert.equal(isCanonicalLineSlow(deep), true);
});

test('each scan has its own state: a line scanned earlier still reads its own members', () => {
  const a = scanCanonicalObject('{"arguments":{"n":1.5},"hash":"sha256:aa","kind":"decision","seq":1}');
  const b = scanCanonicalObject('{"kind":"key","note":"a\\nb","seq":22}');
  assert.ok(a && b);
  assert.equal(a.token('seq'), '1');
  assert.equal(a.string('kind'), 'decision');
  assert.equal(a.argumentsNeedAdmission, true);
  assert.equal(a.withoutHash(), '{"arguments":{"n":1.5},"kind":"decision","seq":1}');
  assert.equal(b.token('seq'), '22');
  assert.equal(b.string('note'), 'a\nb');
  assert.equal(b.argumentsNeedAdmission, false);
  assert.equal(b.token('hash'), undefined);
  assert.equal(b.withoutHash(), '{"kind":"key","note":"a\\nb","seq":22}');
});
