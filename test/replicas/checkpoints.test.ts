/**
 * Timed checkpoints on replicas (docs/protocol.md §6, §9): each replica runs its own `every_ms` timer,
 * and the shared store's `checkpoint_at` row keeps them to one checkpoint per interval between them —
 * not one per replica per interval.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, TEST_TOKENS } from '../helpers/server.js';
import { readBody, replicasOnOneDatabase } from './helpers.js';

const EVERY_MS = 400;

describe('timed checkpoints on three replicas of one PostgreSQL database', () => {
  const f = replicasOnOneDatabase(3, { checkpoint: { every_records: 100_000, every_ms: EVERY_MS } });

  test('with new records all the time, at most one timed checkpoint per every_ms between the replicas', async () => {
    const checkpoints = async () =>
      (await call(f.rs[0]!, 'GET', '/v1/ledger/records?kind=checkpoint&limit=1000', { token: TEST_TOKENS.auditor })).body.records as Array<{ seq: number }>;
    const before = (await checkpoints()).length;
    const started = Date.now();
    let i = 0;
    while (Date.now() - started < 3000) {
      const s = f.rs[i % f.rs.length]!;
      const r = await call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, body: readBody(`CP-${i++}`) });
      assert.equal(r.status, 200, r.text);
      // Records at a steady pace over the window: the rate of timed checkpoints per interval is what is measured.
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
    const window = Date.now() - started;
    const timed = (await checkpoints()).length - before;
    // Three timers without the shared row would write about three per interval. Timers that run late
    // only lower the count, so the bound holds on a slow machine too.
    assert.ok(timed >= 1, 'timed checkpoints are still written');
    assert.ok(timed <= Math.floor(window / EVERY_MS) + 2, `${timed} checkpoints in ${window} ms with every_ms ${EVERY_MS}`);
  });
});
