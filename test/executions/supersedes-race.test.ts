// A retry (`supersedes`) is decided on the retried execution's state as it is when the decision is
// written, not as it was when the policy was evaluated (docs/protocol.md §4). In-process against the real
// sidecar and LMDB store: the retry's write is held at the store's door while the retried execution's
// outcome commits; released, the retry must be evaluated again and see `committed`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULTS, type WritConfig } from '../../src/config/config.js';
import { LmdbStore } from '../../src/store/lmdb/lmdb-store.js';
import { pdpServices } from '../../src/pdp/services.js';
import { loadPolicyDir } from '../../src/policy/load.js';
import type { Caller } from '../../src/identity/caller.js';
import { offboardingBody } from '../helpers/server.js';

const CALLER: Caller = { role: 'pep', name: 'test-pep', actor: { type: 'Agent', id: 'offboarding-agent-prod' } };
const POLICIES = `
@id("run") permit (principal, action == Action::"t/op", resource);
@id("no-retry-after-commit") forbid (principal, action == Action::"t/op", resource)
  when { context has supersedes && context.supersedes.state == "committed" };
`;

const body = (id: string, supersedes: string | null) =>
  JSON.stringify(offboardingBody({ execution_id: id, phase: 'execute', envelope: { supersedes }, action: { server: 't', tool: 'op', arguments: {} } }));

test('a retry whose retried execution commits while the retry is being written is evaluated again (denied, not allowed on the stale state)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'writ-supersedes-race-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const policyDir = join(dir, 'policies');
  mkdirSync(policyDir);
  writeFileSync(join(policyDir, 'retry.cedar'), POLICIES);
  const config: WritConfig = { ...DEFAULTS, tokens: [], policy_dir: policyDir, data_dir: join(dir, 'data'), evaluator_threads: 0, http_threads: 0 };

  // The gate: the first 'reserve' write after arming waits at the store's door until released.
  let armed = false;
  let reached!: () => void;
  const atGate = new Promise<void>((r) => (reached = r));
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const store = await LmdbStore.open({
    dataDir: config.data_dir,
    faults: {
      async beforeCommit(label) {
        if (!armed || label !== 'reserve') return;
        armed = false;
        reached();
        await gate;
      },
    },
  });
  const sidecar = pdpServices(config, store, loadPolicyDir(policyDir));
  t.after(async () => {
    await sidecar.core.close();
    await store.close();
  });
  await sidecar.policy.recordStartup();

  const first = await sidecar.decisions.decide(CALLER, body('T-1', null));
  assert.equal(first.decision, 'allow');
  assert.equal(first.state, 'invoking');

  armed = true;
  const retry = sidecar.decisions.decide(CALLER, body('T-2', 'T-1'));
  await atGate; // evaluated on T-1 `invoking` (allowed), its write not yet applied
  const outcome = await sidecar.executions.outcome(CALLER, 'T-1', JSON.stringify({ status: 'committed' }));
  assert.equal(outcome.state, 'committed');
  release();

  const answer = await retry;
  assert.equal(answer.decision, 'deny', 'the retry saw T-1 committed');
  assert.deepEqual(answer.reasons, ['no-retry-after-commit']);
  assert.equal(answer.state, 'proposed');
  const record = (await store.getRecord(answer.record.seq))!;
  assert.ok(answer.record.seq > (outcome.record as { seq: number }).seq, 'recorded after the outcome it saw');
  assert.equal(record.decision, 'deny');
  const retried = await sidecar.executions.getExecution(CALLER.actor!, 'T-1');
  assert.equal(retried.superseded_by, 'T-2', 'the slot is still taken by the retry');
});
