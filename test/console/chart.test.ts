/** The chart's counting (src/console/web/chart.ts bucketsOf), in Node: a pure function of the records. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bucketsOf } from '../../src/console/web/chart.js';
import type { LedgerRecord } from '../../src/console/web/api.js';

const decision = (seq: number, ts: string, outcome: string) => ({ seq, kind: 'decision', ts, decision: outcome }) as unknown as LedgerRecord;

test('decisions per minute by outcome; a truncated page leaves out its partly counted oldest minute', () => {
  const records = [
    decision(1, '2026-12-02T10:00:30Z', 'allow'),
    decision(2, '2026-12-02T10:01:05Z', 'allow'),
    decision(3, '2026-12-02T10:01:59Z', 'deny'),
    decision(4, '2026-12-02T10:02:00Z', 'approval_required'),
  ];
  const whole = bucketsOf(records);
  const at = (buckets: ReturnType<typeof bucketsOf>, hhmm: string) =>
    buckets.find((b) => new Date(b.minute * 60_000).toISOString().slice(11, 16) === hhmm)?.counts;
  assert.deepEqual(at(whole, '10:00'), { allow: 1, deny: 0, approval_required: 0 });
  assert.deepEqual(at(whole, '10:01'), { allow: 1, deny: 1, approval_required: 0 });
  assert.deepEqual(at(whole, '10:02'), { allow: 0, deny: 0, approval_required: 1 });
  // The newest N of more: 10:00 may hold decisions that were not fetched, so it is not drawn at all.
  const truncated = bucketsOf(records, true);
  assert.equal(at(truncated, '10:00'), undefined);
  assert.deepEqual(at(truncated, '10:01'), { allow: 1, deny: 1, approval_required: 0 });
  assert.equal(
    truncated.reduce((n, b) => n + b.counts.allow + b.counts.deny + b.counts.approval_required, 0),
    3,
  );
});

test('a truncated page whose decisions all fall in one minute still draws it, marked partial', () => {
  // More decisions a minute than one page holds (the review's 1,500 in a minute): an empty chart would
  // say there were none.
  const records = Array.from({ length: 1000 }, (_, i) => decision(i, `2026-12-02T13:04:${String(i % 60).padStart(2, '0')}Z`, i % 10 === 0 ? 'deny' : 'allow'));
  const buckets = bucketsOf(records, true);
  const last = buckets[buckets.length - 1]!;
  assert.equal(new Date(last.minute * 60_000).toISOString().slice(11, 16), '13:04');
  assert.deepEqual(last.counts, { allow: 900, deny: 100, approval_required: 0 });
  assert.equal(last.partial, true);
  assert.equal(buckets.filter((b) => b.partial).length, 1);
  // Two minutes in the page: the oldest is still left out, and nothing is marked partial.
  const two = bucketsOf([...records, decision(1000, '2026-12-02T13:05:01Z', 'allow')], true);
  assert.equal(
    two.reduce((n, b) => n + b.counts.allow + b.counts.deny, 0),
    1,
  );
  assert.equal(
    two.some((b) => b.partial),
    false,
  );
});
