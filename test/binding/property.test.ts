// Property tests (fast-check, seeded): random argument values printed in random textual variants (key
// order, whitespace, escapes, equivalent number spellings) share one binding, one Cedar view and one
// canonical text; distinct values never share a binding; injected faults get exactly their code, and
// nothing but a contract refusal is ever thrown.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { admitArgumentsText, type CedarValue, type Json } from '../../src/binding/index.js';
import { WritError } from '../../src/errors.js';
import { jcs } from '../../src/util/canonical.js';
import { ADMISSION_CODES, prng } from './helpers.js';

/** A model of an admitted value that remembers how numbers were meant (integer vs decimal). */
type Model =
  | { t: 'null' }
  | { t: 'bool'; v: boolean }
  | { t: 'int'; v: number }
  | { t: 'dec'; units: number; scale: number } // value = units / 10^scale, never integral
  | { t: 'str'; v: string }
  | { t: 'arr'; items: Model[] }
  | { t: 'obj'; entries: Array<[string, Model]> };

const SEED = 0x5eed_b1d;
const RUNS = 1000;

const char = fc.oneof(
  fc.constantFrom('a', 'b', 'Z', '0', ' ', '"', '\\', '/', '\n', '\t', '\u0000', '\u001f', '\u007f', 'é', '\u2028', '😀', '\ufb33', '\ue000', '𐀀'),
  fc
    .integer({ min: 0, max: 0x10ffff })
    .filter((cp) => cp < 0xd800 || cp > 0xdfff)
    .map((cp) => String.fromCodePoint(cp)),
);
const text = fc.string({ unit: char, maxLength: 8 });
const CEDAR_ESCAPES = new Set(['__entity', '__extn', '__expr']);
const key = fc
  .oneof(fc.constantFrom('__proto__', 'constructor', 'toString', 'toJSON', '10', '9', 'a', 'A', '', '\ufb33', '😀'), text)
  .filter((k) => !CEDAR_ESCAPES.has(k));

const decimal = fc
  .record({ units: fc.integer({ min: -10_000_000_000, max: 10_000_000_000 }), scale: fc.integer({ min: 1, max: 4 }) })
  .filter(({ units, scale }) => units % 10 ** scale !== 0);

const { value: modelArb, object: objectArb } = fc.letrec<{ value: Model; object: Model }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant<Model>({ t: 'null' }),
    fc.boolean().map((v): Model => ({ t: 'bool', v })),
    fc.oneof(fc.integer({ min: -1000, max: 1000 }), fc.constantFrom(Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 0)).map((v): Model => ({ t: 'int', v })),
    decimal.map(({ units, scale }): Model => ({ t: 'dec', units, scale })),
    text.map((v): Model => ({ t: 'str', v })),
    fc.array(tie('value'), { maxLength: 4 }).map((items): Model => ({ t: 'arr', items })),
    tie('object'),
  ),
  object: fc.uniqueArray(fc.tuple(key, tie('value')), { maxLength: 5, selector: ([k]) => k }).map((entries): Model => ({ t: 'obj', entries })),
}));

const decimalDigits = (m: { units: number; scale: number }) => {
  const digits = String(Math.abs(m.units)).padStart(m.scale + 1, '0');
  return `${m.units < 0 ? '-' : ''}${digits.slice(0, -m.scale)}.${digits.slice(-m.scale)}`;
};
const decimalValue = (m: { units: number; scale: number }) => Number(decimalDigits(m));

/** The expected admitted value, built from the model without writ's parser. */
function plain(m: Model): Json {
  switch (m.t) {
    case 'null':
      return null;
    case 'bool':
    case 'str':
    case 'int':
      return m.v;
    case 'dec':
      return decimalValue(m);
    case 'arr':
      return m.items.map(plain);
    case 'obj': {
      const o: Record<string, Json> = {};
      for (const [k, v] of m.entries) Object.defineProperty(o, k, { value: plain(v), enumerable: true, writable: true, configurable: true });
      return o;
    }
  }
}

/** The expected Cedar view, from the model. */
function cedarOf(m: Model): CedarValue | undefined {
  switch (m.t) {
    case 'null':
      return undefined;
    case 'bool':
    case 'str':
    case 'int':
      return m.v;
    case 'dec':
      return { __extn: { fn: 'decimal', arg: String(decimalValue(m)) } };
    case 'arr':
      return m.items.map(cedarOf).filter((x): x is CedarValue => x !== undefined);
    case 'obj': {
      const o: Record<string, CedarValue> = {};
      for (const [k, v] of m.entries) {
        const c = cedarOf(v);
        if (c !== undefined) Object.defineProperty(o, k, { value: c, enumerable: true, writable: true, configurable: true });
      }
      return o;
    }
  }
}

/** A structural identity that keeps the integer/decimal distinction and ignores member order. */
function identity(m: Model): string {
  switch (m.t) {
    case 'null':
      return 'n';
    case 'bool':
      return m.v ? 't' : 'f';
    case 'int':
      return `i${m.v === 0 ? 0 : m.v}`;
    case 'dec':
      return `d${String(decimalValue(m))}`;
    case 'str':
      return `s${JSON.stringify(m.v)}`;
    case 'arr':
      return `[${m.items.map(identity).join(',')}]`;
    case 'obj':
      return `{${m.entries
        .map(([k, v]) => `${JSON.stringify(k)}:${identity(v)}`)
        .sort()
        .join(',')}}`;
  }
}

// ---- random textual variants --------------------------------------------------------------------
const SHORT: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t', '/': '\\/' };
const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
const WS = ['', '', ' ', '\n', '\t', '\r\n  '];

function printString(s: string, r: () => number): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    const unit = s.charCodeAt(i);
    const mustEscape = ch === '"' || ch === '\\' || unit < 0x20;
    const roll = r();
    if (mustEscape || roll < 0.3) {
      if (SHORT[ch] !== undefined && roll < 0.5) out += SHORT[ch];
      else {
        const hex = unit.toString(16).padStart(4, '0');
        out += `\\u${r() < 0.5 ? hex : hex.toUpperCase()}`;
      }
    } else {
      out += ch;
    }
  }
  return `${out}"`;
}

function printNumber(m: Extract<Model, { t: 'int' | 'dec' }>, r: () => number): string {
  if (m.t === 'int') return m.v === 0 && r() < 0.3 ? '-0' : String(m.v);
  // Same exact decimal value, spelled with extra trailing zeros and a shifted exponent.
  const zeros = Math.floor(r() * 3);
  const digits = String(Math.abs(m.units)) + '0'.repeat(zeros);
  const scale = m.scale + zeros;
  const exp = Math.floor(r() * 7) - 3;
  const point = digits.length - (scale + exp); // digits before the decimal point in the mantissa
  let mantissa: string;
  if (point <= 0) mantissa = `0.${'0'.repeat(-point)}${digits}`;
  else if (point >= digits.length) mantissa = digits + '0'.repeat(point - digits.length);
  else mantissa = `${digits.slice(0, point)}.${digits.slice(point)}`;
  const sign = m.units < 0 ? '-' : '';
  if (exp === 0) return sign + mantissa;
  return sign + mantissa + pick(r, ['e', 'E']) + (exp > 0 ? pick(r, ['', '+']) : '') + String(exp);
}

function print(m: Model, r: () => number): string {
  const ws = () => pick(r, WS);
  switch (m.t) {
    case 'null':
      return 'null';
    case 'bool':
      return String(m.v);
    case 'int':
    case 'dec':
      return printNumber(m, r);
    case 'str':
      return printString(m.v, r);
    case 'arr':
      return `[${ws()}${m.items.map((x) => print(x, r)).join(`${ws()},${ws()}`)}${ws()}]`;
    case 'obj': {
      const entries = [...m.entries];
      for (let i = entries.length - 1; i > 0; i--) {
        const j = Math.floor(r() * (i + 1));
        [entries[i], entries[j]] = [entries[j]!, entries[i]!];
      }
      return `{${ws()}${entries.map(([k, v]) => `${printString(k, r)}${ws()}:${ws()}${print(v, r)}`).join(`${ws()},${ws()}`)}${ws()}}`;
    }
  }
}

const bindText = (t: string) => admitArgumentsText(t, 'srv', 'tool');

test('property: every textual variant of one value has one binding, one canonical text, one Cedar view', () => {
  fc.assert(
    fc.property(objectArb, fc.integer(), fc.integer(), (model, s1, s2) => {
      const a = bindText(print(model, prng(s1)));
      const b = bindText(print(model, prng(s2)));
      assert.equal(a.binding, b.binding);
      assert.equal(a.canonical, b.canonical);
      assert.deepStrictEqual(a.cedar, b.cedar);
      const expected = plain(model);
      assert.equal(a.canonical, jcs(expected));
      assert.deepStrictEqual(a.arguments, expected);
      assert.deepStrictEqual(a.cedar, cedarOf(model));
    }),
    { seed: SEED, numRuns: RUNS },
  );
});

test('property: distinct admitted values never share a binding (and equal ones always do)', () => {
  fc.assert(
    fc.property(objectArb, objectArb, fc.integer(), (m1, m2, s) => {
      const a = bindText(print(m1, prng(s)));
      const b = bindText(print(m2, prng(s + 1)));
      assert.equal(a.binding === b.binding, identity(m1) === identity(m2));
    }),
    { seed: SEED + 1, numRuns: RUNS },
  );
});

type Fault = { text: string; code: string };
const FAULTS: ReadonlyArray<(r: () => number) => Fault> = [
  (r) => ({ text: pick(r, ['1.0', '1e0', '2.50e1', '-0.0', '1E16', '100.00']), code: 'BINDING_LOSSY_NUMBER' }),
  (r) => ({ text: pick(r, ['9007199254740992', '-9007199254740993', '123456789012345678901']), code: 'BINDING_UNSAFE_INTEGER' }),
  (r) => ({ text: pick(r, ['0.12345', '1e-7', '0.30000000000000004', '922337203685477.6']), code: 'BINDING_UNREPRESENTABLE' }),
  (r) => ({ text: pick(r, ['"\\ud800"', '"x\\udc00"', '"\\ude00\\ud83d"']), code: 'BINDING_LONE_SURROGATE' }),
  () => ({ text: '['.repeat(64) + ']'.repeat(64), code: 'BINDING_TOO_DEEP' }),
  () => ({ text: '{"k":1,"k":1}', code: 'BINDING_DUPLICATE_KEY' }),
];

test('property: one injected fault is refused with exactly its code; nothing else throws', () => {
  fc.assert(
    fc.property(modelArb, fc.integer({ min: 0, max: FAULTS.length - 1 }), fc.integer(), (model, which, s) => {
      const r = prng(s);
      const fault = FAULTS[which]!(r);
      const members = [`"v":${print(model, r)}`, `"f":${fault.text}`];
      if (r() < 0.5) members.reverse();
      try {
        bindText(`{${members.join(',')}}`);
        assert.fail('a fault was admitted');
      } catch (err) {
        assert.ok(err instanceof WritError, String(err));
        assert.equal(err.code, fault.code);
        assert.ok(err.path === '/f' || err.path!.startsWith('/f/'), err.path);
      }
    }),
    { seed: SEED + 2, numRuns: RUNS },
  );
});

test('property: arbitrary JSON-like text is admitted or refused with a contract code, never anything else', () => {
  const token = fc.constantFrom('{', '}', '[', ']', ',', ':', '"a"', '"a"', '"\\ud800"', '1', '-0', '1.0', '0.5', '1e400', 'true', 'null', ' ', '"', '\\', 'x');
  fc.assert(
    fc.property(fc.array(token, { maxLength: 30 }), (tokens) => {
      try {
        const bound = bindText(tokens.join(''));
        assert.equal(bindText(bound.canonical).binding, bound.binding, 'the canonical text re-admits to itself');
      } catch (err) {
        assert.ok(err instanceof WritError, String(err));
        assert.ok(ADMISSION_CODES.has(err.code), err.code);
      }
    }),
    { seed: SEED + 3, numRuns: RUNS },
  );
});
