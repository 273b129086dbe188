import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PolicyEngine, type DecisionInput, type ValidApproval } from '../../src/policy/engine.js';
import { EvaluatorPool } from '../../src/policy/evaluator-pool.js';
import { StaticEntitySource } from '../../src/policy/entities.js';
import { loadPolicyDir } from '../../src/policy/load.js';
import { BUNDLED_DIR, input, tempPolicyDir } from './helpers.js';

const bundle = loadPolicyDir(BUNDLED_DIR);
const entities = new StaticEntitySource(bundle.seedEntities);
const hr: ValidApproval = {
  approval_id: 'ap-1',
  approver: { type: 'User', id: 'hr-5519' },
  approved_at: '2026-08-24T15:40:00+07:00',
  expires_at: '2026-08-25T15:40:00+07:00',
};

/** Story requests covering allow, deny and approval_required, plus a malformed requester. */
function storyRequests(): DecisionInput[] {
  const out: DecisionInput[] = [];
  for (const tool of ['idp/disable_sign_in', 'hris/read_employee']) {
    for (const phase of ['propose', 'execute'] as const) {
      for (const approvals of [[], [hr]]) {
        for (const now of ['2026-08-24T08:30:00Z', '2026-08-24T10:05:00Z']) {
          const [server, name] = tool.split('/') as [string, string];
          out.push(
            input({
              actor: { type: 'Agent', id: 'offboarding-agent-prod' },
              server,
              tool: name,
              subject: { type: 'Employee', id: '7721' },
              envelope: { task_id: 'OFF-2048', purpose: 'p', requester: { type: 'User', id: 'manager-1842' }, execute_after: '2026-08-24T17:00:00+07:00' },
              phase,
              cedarArguments: { employee_id: '7721' },
              approvals,
              now: new Date(now),
              entities,
            }),
          );
        }
      }
    }
  }
  out.push(input({ envelope: { task_id: 'T', purpose: 'p', requester: 'not-a-uid' }, entities }));
  return out;
}

test('evaluator threads answer exactly what the in-process engine answers', async () => {
  const engine = new PolicyEngine(bundle);
  const pool = new EvaluatorPool(2);
  pool.register(engine, bundle);
  try {
    const requests = storyRequests();
    const answers = await Promise.all(requests.map((r) => pool.evaluate(engine, r)));
    const kinds = new Set<string>();
    requests.forEach((r, i) => {
      assert.deepEqual(answers[i], engine.evaluate(r));
      kinds.add(answers[i].decision);
    });
    assert.deepEqual([...kinds].sort(), ['allow', 'approval_required', 'deny']);
  } finally {
    await pool.close();
  }
});

test('zero threads is a pass-through to the engine', () => {
  const engine = new PolicyEngine(bundle);
  const pool = new EvaluatorPool(0);
  pool.register(engine, bundle);
  assert.equal(pool.size, 0);
  const request = storyRequests()[0]!;
  assert.deepEqual(pool.evaluate(engine, request), engine.evaluate(request));
});

test('a thread that dies mid-flight loses no decision: its work is redone in-process and it is replaced', async () => {
  const engine = new PolicyEngine(bundle);
  const pool = new EvaluatorPool(1);
  pool.register(engine, bundle);
  try {
    const requests = storyRequests();
    const inFlight = requests.map((r) => pool.evaluate(engine, r));
    // Kill the thread while it holds the requests (terminate() is what a crash looks like to the pool).
    await (pool as unknown as { threads: Array<{ worker: { terminate(): Promise<number> } }> }).threads[0]!.worker.terminate();
    const answers = await Promise.all(inFlight);
    requests.forEach((r, i) => {
      assert.deepEqual(answers[i], engine.evaluate(r));
    });
    assert.equal(pool.size, 1, 'a replacement thread was started');
    const again = await pool.evaluate(engine, requests[3]!);
    assert.deepEqual(again, engine.evaluate(requests[3]!));
  } finally {
    await pool.close();
  }
});

test('after a reload, decisions on the new engine and ones still naming the old engine are both right', async () => {
  const { dir, cleanup } = tempPolicyDir({ 'deny-reads.cedar': '@id("only") permit(principal, action == Action::"s/t", resource);' });
  try {
    const oldEngine = new PolicyEngine(bundle);
    const newBundle = loadPolicyDir(dir);
    const newEngine = new PolicyEngine(newBundle);
    const pool = new EvaluatorPool(1);
    try {
      pool.register(oldEngine, bundle);
      const request = storyRequests()[7]!; // disable_sign_in, execute, HR approval, after 17:00 → allow
      const before = pool.evaluate(oldEngine, request);
      pool.register(newEngine, newBundle);
      const after = pool.evaluate(newEngine, request);
      const stillOld = pool.evaluate(oldEngine, request);
      assert.equal((await before).decision, 'allow');
      assert.deepEqual(await after, newEngine.evaluate(request));
      assert.equal((await after).decision, 'deny');
      assert.equal((await stillOld).decision, 'allow');
    } finally {
      await pool.close();
    }
  } finally {
    cleanup();
  }
});

test('close() answers what is still in flight', async () => {
  const engine = new PolicyEngine(bundle);
  const pool = new EvaluatorPool(1);
  pool.register(engine, bundle);
  const requests = storyRequests();
  const inFlight = requests.map((r) => pool.evaluate(engine, r));
  await pool.close();
  const answers = await Promise.all(inFlight);
  requests.forEach((r, i) => {
    assert.deepEqual(answers[i], engine.evaluate(r));
  });
  // A closed pool evaluates in-process.
  assert.deepEqual(pool.evaluate(engine, requests[0]!), engine.evaluate(requests[0]!));
});

test('threads hold every engine the pool may still send them, whatever order they first saw them in', async () => {
  const pool = new EvaluatorPool(1);
  try {
    const request = storyRequests()[7]!; // allow
    const [a, b, c, d, e] = Array.from({ length: 5 }, () => new PolicyEngine(bundle));
    for (const engine of [a, b, c, d]) pool.register(engine!, bundle);
    // The thread first sees them in the order b, c, d, a …
    for (const engine of [b, c, d, a]) assert.equal((await pool.evaluate(engine!, request)).decision, 'allow');
    // … then a fifth engine pushes the oldest registered (a) out: b must still be there.
    pool.register(e!, bundle);
    for (const engine of [e, b, c, d, a]) assert.deepEqual(await pool.evaluate(engine!, request), engine!.evaluate(request));
  } finally {
    await pool.close();
  }
});

test('a decision not answered by its deadline is refused with EVALUATION_TIMEOUT, never decided in-process', async () => {
  const engine = new PolicyEngine(bundle);
  const pool = new EvaluatorPool(1, { deadlineMs: 1 });
  pool.register(engine, bundle);
  try {
    const request = storyRequests()[0]!;
    const answer = Promise.resolve(pool.evaluate(engine, request));
    // The batch goes to the thread only at the end of this turn: holding the turn past the deadline and
    // the watchdog's period makes the watchdog run first, whatever the thread's speed.
    const heldUntil = Date.now() + 60;
    while (Date.now() < heldUntil) {
      /* hold the event loop */
    }
    await assert.rejects(answer, { code: 'EVALUATION_TIMEOUT' });
    assert.equal(pool.size, 1, 'the thread is kept: it is not wedged, only late');
  } finally {
    await pool.close();
  }
});
