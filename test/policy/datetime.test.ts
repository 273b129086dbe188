import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cedarDatetime, cedarDatetimeText } from '../../src/policy/datetime.js';
import { WritError } from '../../src/errors.js';

test('RFC 3339 offsets become Cedar ±hhmm, Z stays Z', () => {
  assert.equal(cedarDatetimeText('2026-08-24T17:00:00+07:00'), '2026-08-24T17:00:00+0700');
  assert.equal(cedarDatetimeText('2026-08-24T17:00:00-03:30'), '2026-08-24T17:00:00-0330');
  assert.equal(cedarDatetimeText('2026-08-24T10:00:00Z'), '2026-08-24T10:00:00Z');
  assert.equal(cedarDatetimeText('2026-08-24t10:00:00z'), '2026-08-24T10:00:00Z');
});

test('fractions become exactly three digits; a finer fraction is rounded up to the next millisecond (in UTC)', () => {
  assert.equal(cedarDatetimeText('2026-08-24T10:00:00.5Z'), '2026-08-24T10:00:00.500Z');
  assert.equal(cedarDatetimeText('2026-08-24T10:00:00.12+07:00'), '2026-08-24T10:00:00.120+0700');
  assert.equal(cedarDatetimeText('2026-08-24T10:00:00.123Z'), '2026-08-24T10:00:00.123Z');
  assert.equal(cedarDatetimeText('2026-08-24T10:00:00.123000000+07:00'), '2026-08-24T10:00:00.123+0700', 'zeros past the millisecond change nothing');
  // `now` is a whole millisecond: now < t and now >= t answer as for the true instant, never early.
  assert.equal(cedarDatetimeText('2026-08-24T10:00:00.0005Z'), '2026-08-24T10:00:00.001Z');
  assert.equal(cedarDatetimeText('2026-08-24T10:00:00.000999Z'), '2026-08-24T10:00:00.001Z');
  assert.equal(cedarDatetimeText('2026-08-24T10:00:00.999999999-01:00'), '2026-08-24T11:00:01.000Z');
  assert.equal(cedarDatetimeText('2026-12-31T23:59:59.9999+00:00'), '2027-01-01T00:00:00.000Z');
  assert.equal(cedarDatetimeText('2026-08-24T10:00:00.12345678901234567890Z'), '2026-08-24T10:00:00.124Z', 'any number of digits');
});

test('a Date becomes a UTC datetime with milliseconds', () => {
  assert.deepEqual(cedarDatetime(new Date(Date.UTC(2026, 7, 24, 10, 0, 0, 7))), {
    __extn: { fn: 'datetime', arg: '2026-08-24T10:00:00.007Z' },
  });
});

test('a Date takes the same text as its ISO string through the checked path; a year past 9999 is refused', () => {
  for (let i = 0; i < 2000; i++) {
    const d = new Date(Math.floor(Math.random() * 253402300799999)); // 1970 .. 9999-12-31T23:59:59.999Z
    assert.equal(cedarDatetime(d).__extn.arg, cedarDatetimeText(d.toISOString()), d.toISOString());
  }
  assert.throws(
    () => cedarDatetime(new Date(Date.UTC(10000, 0, 1))),
    (e: unknown) => e instanceof WritError && e.code === 'INVALID_REQUEST',
  );
});

test('timestamps without an offset or out of shape are refused', () => {
  for (const bad of ['2026-08-24T10:00:00', '2026-08-24', '2026-08-24T10:00Z', '2026-08-24T10:00:00+0700', '']) {
    assert.throws(
      () => cedarDatetimeText(bad),
      (e: unknown) => e instanceof WritError && e.code === 'INVALID_REQUEST',
      bad,
    );
  }
});
