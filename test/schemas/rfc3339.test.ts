import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isRfc3339, rfc3339ToDate } from '../../src/schemas/validate.js';
import { WritError } from '../../src/errors.js';
import fc from 'fast-check';

test('isRfc3339 accepts strict date-times with an offset', () => {
  for (const s of [
    '2026-08-24T17:00:00+07:00',
    '2026-08-24T10:00:00Z',
    '2026-08-24T10:00:00.1Z',
    '2026-08-24T10:00:00.123456789Z',
    '2024-02-29T00:00:00Z',
    '2000-02-29T00:00:00Z',
    '0000-01-01T00:00:00Z',
    '9999-12-31T23:59:59.999-23:59',
    '2026-08-24T10:00:00-00:00',
    '2026-01-31T00:00:00+14:00',
  ]) {
    assert.equal(isRfc3339(s), true, s);
  }
});

test('isRfc3339 refuses impossible dates, missing offsets and lax forms', () => {
  for (const s of [
    '2026-02-30T10:00:00Z',
    '2026-02-29T10:00:00Z',
    '1900-02-29T10:00:00Z',
    '2026-06-31T10:00:00Z',
    '2026-09-31T10:00:00Z',
    '2026-11-31T10:00:00Z',
    '2026-12-32T10:00:00Z',
    '2026-08-24T25:00:00Z',
    '2026-08-24T10:00:61Z',
    '2026-12-31T23:59:60Z',
    '2026-08-24T10:00:00',
    '2026-08-24T10:00:00.5',
    '2026-08-24T10:00:00+07',
    '2026-08-24T10:00:00+0700',
    '2026-08-24T10:00:00 +07:00',
    '2026-08-24T10:00Z',
    '2026-08-24T10:00:00z',
    '2026-08-24t10:00:00Z',
    '2026-08-24_10:00:00Z',
    '26-08-24T10:00:00Z',
    '2026-08-24T10:00:00,5Z',
    'now',
  ]) {
    assert.equal(isRfc3339(s), false, s);
  }
  assert.equal(isRfc3339(42 as unknown as string), false);
  assert.equal(isRfc3339(`2026-08-24T10:00:00.123456789+07:00${' '.repeat(100)}`), false);
  assert.equal(isRfc3339('2026-08-24T10:00:00.Z'), false, 'a point needs a digit');
});

test('isRfc3339 accepts any number of fractional digits, as RFC 3339 does (time-secfrac = "." 1*DIGIT)', () => {
  for (const s of ['2026-08-24T10:00:00.1234567890Z', '2026-08-24T10:00:00.123456789012345678901234567890+07:00']) {
    assert.equal(isRfc3339(s), true, s);
  }
  assert.equal(rfc3339ToDate('2026-08-24T10:00:00.1239999999999Z').toISOString(), '2026-08-24T10:00:00.123Z');
});

test('rfc3339ToDate converts offsets to the same instant', () => {
  assert.equal(rfc3339ToDate('2026-08-24T17:00:00+07:00').toISOString(), '2026-08-24T10:00:00.000Z');
  assert.equal(rfc3339ToDate('2026-08-24T10:00:00Z').toISOString(), '2026-08-24T10:00:00.000Z');
  assert.equal(rfc3339ToDate('2026-08-24T04:30:00-05:30').toISOString(), '2026-08-24T10:00:00.000Z');
  assert.equal(rfc3339ToDate('2026-01-01T00:30:00+01:00').toISOString(), '2025-12-31T23:30:00.000Z');
  assert.equal(rfc3339ToDate('2026-08-24T10:00:00-00:00').toISOString(), '2026-08-24T10:00:00.000Z');
});

test('rfc3339ToDate keeps milliseconds and truncates finer fractions', () => {
  assert.equal(rfc3339ToDate('2026-08-24T10:00:00.5Z').toISOString(), '2026-08-24T10:00:00.500Z');
  assert.equal(rfc3339ToDate('2026-08-24T10:00:00.05Z').toISOString(), '2026-08-24T10:00:00.050Z');
  assert.equal(rfc3339ToDate('2026-08-24T10:00:00.123999999Z').toISOString(), '2026-08-24T10:00:00.123Z');
});

test('rfc3339ToDate handles years below 100 literally', () => {
  assert.equal(rfc3339ToDate('0099-03-01T00:00:00Z').getUTCFullYear(), 99);
  assert.equal(rfc3339ToDate('0000-01-01T00:00:00Z').toISOString(), '0000-01-01T00:00:00.000Z');
});

test('rfc3339ToDate agrees with Date.parse on every valid form Date.parse reads', () => {
  for (const s of ['2026-08-24T17:00:00+07:00', '2024-02-29T23:59:59.999-12:00', '1999-12-31T23:59:59Z']) {
    assert.equal(rfc3339ToDate(s).getTime(), Date.parse(s), s);
  }
});

test('rfc3339ToDate throws WritError INVALID_REQUEST on invalid input', () => {
  for (const s of ['2026-02-30T10:00:00Z', '2026-08-24T10:00:00', '']) {
    assert.throws(
      () => rfc3339ToDate(s),
      (e: unknown) => e instanceof WritError && e.code === 'INVALID_REQUEST',
    );
  }
});

// A slow, obviously-correct reference: the RFC 3339 grammar as a regex plus calendar checks.
const REFERENCE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:Z|[+-](\d{2}):(\d{2}))$/;
function reference(s: string): boolean {
  const m = REFERENCE.exec(s);
  if (!m) return false;
  const [y, mo, d, h, mi, se] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  const dim = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  if (mo < 1 || mo > 12 || d < 1 || d > dim[mo - 1]! || h > 23 || mi > 59 || se > 59) return false;
  if (m[8] !== undefined && (Number(m[8]) > 23 || Number(m[9]) > 59)) return false;
  return true;
}

test('isRfc3339 agrees with a reference grammar on generated date-times', () => {
  const two = fc.integer({ min: 0, max: 99 }).map((n) => String(n).padStart(2, '0'));
  const sep = (ok: string) =>
    fc.oneof({ weight: 8, arbitrary: fc.constant(ok) }, { weight: 1, arbitrary: fc.constantFrom('', ' ', 't', 'z', '_', '/', ok + ok) });
  const arb = fc
    .record({
      y: fc.integer({ min: 0, max: 9999 }).map((n) => String(n).padStart(4, '0')),
      mo: two,
      d: two,
      h: two,
      mi: two,
      s: two,
      frac: fc.option(fc.stringMatching(/^[0-9]{0,11}$/), { nil: undefined }),
      tz: fc.oneof(
        fc.constant('Z'),
        fc.constant('z'),
        fc.constant(''),
        fc.tuple(fc.constantFrom('+', '-'), two, sep(':'), two).map((p) => p.join('')),
      ),
      d1: sep('-'),
      t: sep('T'),
      c1: sep(':'),
    })
    .map((p) => `${p.y}${p.d1}${p.mo}-${p.d}${p.t}${p.h}${p.c1}${p.mi}:${p.s}${p.frac === undefined ? '' : `.${p.frac}`}${p.tz}`);
  fc.assert(
    fc.property(arb, (s) => {
      assert.equal(isRfc3339(s), reference(s), s);
    }),
    { numRuns: 20000 },
  );
  fc.assert(
    fc.property(fc.string({ maxLength: 40 }), (s) => isRfc3339(s) === reference(s)),
    { numRuns: 5000 },
  );
});

test('rfc3339ToDate agrees with Date.parse on generated valid date-times (ms precision)', () => {
  const arb = fc
    .record({
      t: fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('9999-12-30T00:00:00Z'), noInvalidDate: true }),
      off: fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }),
    })
    .map(({ t, off }) => {
      const local = new Date(t.getTime() + off * 60_000).toISOString().slice(0, 23);
      const a = Math.abs(off);
      return `${local}${off < 0 ? '-' : '+'}${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
    })
    .filter((s) => /^\d{4}-/.test(s));
  fc.assert(
    fc.property(arb, (s) => {
      assert.equal(isRfc3339(s), true, s);
      assert.equal(rfc3339ToDate(s).getTime(), Date.parse(s), s);
    }),
    { numRuns: 5000 },
  );
});
