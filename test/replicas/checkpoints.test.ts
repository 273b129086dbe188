/**
 * Timed checkpoints on replicas (docs/protocol.md §6, §9): each replica runs its own `every_ms` timer,
 * and the shared store's `checkpoint_at` row keeps them to one checkpoint per interval between them —
 * not one per replica per interval.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, offboardingBody, TEST_TOKENS, type TestServer } from '../helpers/server.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { newDeployment, startReplicas, type Deployment } from './helpers.js';

const EVERY_MS = 400;
const readBody = (id: string) =>
  offboardingBody({ execution_id: id, phase: 'execute', action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } } });

describe('timed checkpoints on three replicas of one PostgreSQL database', () => {
  let pg: TestPostgres;
  let d: Deployment;
  let rs: TestServer[] = [];
  before(async () => {
    pg = await startPostgres();
    d = newDeployment(await pg.createDatabase());
    rs = await startReplicas(d, 3, { config: { checkpoint: { every_records: 100_000, every_ms: EVERY_MS } } });
  });
  after(async () => {
    for (const s of rs) assert.equal(await s.stop(), 0, `SIGTERM exits 0: ${s.output()}`);
    pg?.stop();
    d?.remove();
  });

  test('with new records all the time, at most one timed checkpoint per every_ms between the replicas', async () => {
    const checkpoints = async () => (await call(rs[0]!, 'GET', '/v1/ledger/records?kind=checkpoint&limit=1000', { token: TEST_TOKENS.auditor })).body.records as Array<{ seq: number }>;
    const before = (await checkpoints()).length;
    const started = Date.now();
    let i = 0;
    while (Date.now() - started < 3000) {
      const s = rs[i % rs.length]!;
      const r = await call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, body: readBody(`CP-${i++}`) });
      assert.equal(r.status, 200, r.text);
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
