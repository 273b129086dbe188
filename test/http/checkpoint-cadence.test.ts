/**
 * `checkpoint.every_records` under concurrent load (§6 "written every every_records"): a group commit
 * takes many decisions at once, and the checkpoint used to follow the whole batch (40 concurrent
 * decisions with every_records 5 gave one checkpoint after 39 records). It now follows the very write
 * that reaches the cadence, in the same batch (LMDB) or transaction (PostgreSQL) — across replicas too.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, offboardingBody, startTestServer, TEST_TOKENS, type TestServer } from '../helpers/server.js';
import { sharedPostgres } from '../helpers/postgres.js';
import { newDeployment, startReplicas } from '../replicas/helpers.js';

const CADENCE = { checkpoint: { every_records: 5, every_ms: 600_000 } };

/** 3 rounds of 40 concurrent decisions, spread over `servers`; then every gap between checkpoints is 5. */
async function assertCadence(servers: TestServer[]): Promise<void> {
  const t = TEST_TOKENS;
  for (let round = 0; round < 3; round++) {
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        call(servers[i % servers.length]!, 'POST', '/v1/decisions', { token: t.pep, body: offboardingBody({ execution_id: `CADENCE-${round}-${i}:x` }) }),
      ),
    );
    for (const a of answers) assert.equal(a.status, 200, a.text);
  }
  const server = servers[0]!;
  {
    const exported = await call(server, 'GET', '/v1/ledger/export', { token: t.auditor });
    const records = exported.text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { seq: number; kind: string; size?: number });
    const checkpoints = records.filter((r) => r.kind === 'checkpoint');
    const firstDecision = records.find((r) => r.kind === 'decision')!.seq;
    // From the first decision on, every write is one record: the checkpoints come every 5 of them.
    const gaps: number[] = [];
    for (let i = 1; i < checkpoints.length; i++) {
      if (checkpoints[i - 1]!.seq >= firstDecision) gaps.push(checkpoints[i]!.seq - checkpoints[i - 1]!.seq - 1);
    }
    assert.ok(gaps.length >= 20, `checkpoints: ${checkpoints.map((c) => c.seq).join(',')}`);
    assert.deepEqual([...new Set(gaps)], [5], `records between checkpoints: ${gaps.join(',')}; ${records.map((r) => `${r.seq}:${r.kind}`).join(' ')}`);
    for (const c of checkpoints) assert.equal(c.size, c.seq, 'a checkpoint covers every record before it');
  }
}

test('every_records 5 with 40 concurrent decisions: a checkpoint after every 5 records', { timeout: 60_000 }, async () => {
  const server = await startTestServer({ config: CADENCE });
  try {
    await assertCadence([server]);
  } finally {
    await server.stop();
  }
});

test('every_records 5 across two PostgreSQL replicas: a checkpoint after every 5 records, written once', { timeout: 120_000 }, async () => {
  const d = newDeployment(await (await sharedPostgres()).createDatabase());
  const replicas = await startReplicas(d, 2, { config: CADENCE });
  try {
    await assertCadence(replicas);
  } finally {
    await Promise.all(replicas.map((r) => r.stop()));
    d.remove();
  }
});
