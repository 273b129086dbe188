/**
 * /metrics counts how decisions were evaluated — decision-memo hits and misses, and misses answered by a
 * residual program — whichever thread evaluated them: the sidecar alone (http_threads: 0) or its HTTP
 * fronts, whose engines live in other threads and report their tallies with their asks.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, offboardingBody, REPO, startTestServer, type TestServer } from '../helpers/server.js';

type Counts = { hit: number; miss: number; residual: number };

async function counts(s: TestServer): Promise<Counts> {
  const r = await call(s, 'GET', '/metrics');
  assert.equal(r.status, 200);
  const value = (re: RegExp) => {
    const m = re.exec(r.text);
    assert.ok(m, `${re} in\n${r.text.slice(0, 2000)}`);
    return Number(m[1]);
  };
  return {
    hit: value(/^writ_decision_memo_lookups_total\{result="hit"\} (\d+)$/m),
    miss: value(/^writ_decision_memo_lookups_total\{result="miss"\} (\d+)$/m),
    residual: value(/^writ_decision_residual_answers_total (\d+)$/m),
  };
}

const delta = (a: Counts, b: Counts): Counts => ({ hit: b.hit - a.hit, miss: b.miss - a.miss, residual: b.residual - a.residual });

/** A read of Employee 7721 under a fresh execution id; `task` varies only what the added forbid reads. */
const read = (id: string, task = 'OFF-2048') =>
  offboardingBody({
    execution_id: id,
    phase: 'execute',
    envelope: { task_id: task },
    action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } },
  });

describe('evaluation counts on /metrics', () => {
  let dir: string;
  const servers: Record<string, TestServer> = {};

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'writ-eval-metrics-'));
    cpSync(join(REPO, 'policies'), dir, { recursive: true });
    // A policy that reads a context string (as the bench's does): a decision whose task_id is new each
    // time is then answered from a residual program rather than the memo.
    writeFileSync(
      join(dir, 'blocked-task.cedar'),
      '@id("blocked-task")\nforbid (principal, action == Action::"hris/read_employee", resource)\nwhen { context.task_id like "*-blocked" };\n',
    );
    const [fronts, plain] = await Promise.all([
      startTestServer({ policyDir: dir, config: { http_threads: 1 } }),
      startTestServer({ policyDir: dir, config: { http_threads: 0 } }),
    ]);
    servers.fronts = fronts;
    servers.plain = plain;
  });
  after(async () => {
    const codes = await Promise.all(Object.values(servers).map((s) => s.stop()));
    rmSync(dir, { recursive: true, force: true });
    assert.ok(codes.every((c) => c === 0));
  });

  for (const name of ['fronts', 'plain']) {
    test(`${name}: repeated inputs hit the memo from their third sight; new task ids are misses, answered by a residual program`, async () => {
      const s = servers[name]!;
      const before = await counts(s);
      for (let i = 0; i < 6; i++) {
        const r = await call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, body: read(`${name}-same-${i}`) });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.body.decision, 'allow');
      }
      const repeated = delta(before, await counts(s));
      // The doorkeeper keeps an answer on its second sight: two misses, then hits.
      assert.equal(repeated.miss, 2, JSON.stringify(repeated));
      assert.equal(repeated.hit, 4, JSON.stringify(repeated));

      const mid = await counts(s);
      for (let i = 0; i < 6; i++) {
        const r = await call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, body: read(`${name}-task-${i}`, `OFF-${name}-${i}`) });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.body.decision, 'allow');
      }
      const distinct = delta(mid, await counts(s));
      assert.equal(distinct.miss, 6, JSON.stringify(distinct));
      assert.equal(distinct.hit, 0, JSON.stringify(distinct));
      // The residual program is made on the shape's second sight (once made, it answers every later call).
      assert.ok(distinct.residual >= 1 && distinct.residual <= 6, JSON.stringify(distinct));
    });
  }
});
