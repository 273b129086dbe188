/**
 * The hostile-server suite (issue 6, "Done when"): for every misbehaviour of the fixture
 * (test/pep/fixtures/hostile.mjs) behind `writ proxy`, driven by the SDK client:
 *   - at most one effect per execution id under naive retries (same id, re-sent) — retries are
 *     refused by the PDP (EXECUTION_TERMINAL) and never reach the server;
 *   - the right terminal state (GET /v1/executions/{id});
 *   - for the modes that end `unknown`: after reconciliation as absent, exactly one more effect
 *     through a new execution that supersedes the old one; for `reject` (the tool had no effect) the
 *     superseding execution runs too; for the committed modes reconciliation is refused (409) and the
 *     policy refuses a superseding execution (a committed effect is never redone).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Backend } from './backends.js';
import { connectProxy, decisionOf, envelope, HOSTILE, meta, readEffects, tempDir, waitFor, type ProxySession } from './helpers.js';

type Mode = 'clean' | 'commit-then-hang' | 'commit-then-error' | 'commit-then-exit' | 'slow' | 'duplicate' | 'reject';

export const MODES: Array<{ mode: Mode; state: string; effect: 0 | 1; first: 'ok' | 'tool-error' | 'unknown' }> = [
  { mode: 'clean', state: 'committed', effect: 1, first: 'ok' },
  { mode: 'commit-then-hang', state: 'unknown', effect: 1, first: 'unknown' },
  { mode: 'commit-then-error', state: 'unknown', effect: 1, first: 'unknown' },
  { mode: 'commit-then-exit', state: 'unknown', effect: 1, first: 'unknown' },
  { mode: 'slow', state: 'unknown', effect: 1, first: 'unknown' },
  { mode: 'duplicate', state: 'committed', effect: 1, first: 'ok' },
  { mode: 'reject', state: 'rejected', effect: 0, first: 'tool-error' },
];

const CALL_TIMEOUT_MS = 1500;
const SLOW_MS = 3000;

async function callApply(s: ProxySession, key: string, mode: string, id: string, env = envelope()) {
  return s.client.callTool({ name: 'apply', arguments: { key, mode }, _meta: meta(id, env) });
}

export async function runHostileMode(b: Backend, spec: (typeof MODES)[number], tag: string): Promise<void> {
  const t = tempDir();
  const effects = join(t.dir, 'effects.jsonl');
  const sessions: ProxySession[] = [];
  const open = async () => {
    const s = await connectProxy({
      pdpUrl: b.url,
      token: b.tokens.pep,
      server: 'hostile',
      command: [process.execPath, HOSTILE],
      dir: t.dir,
      callTimeoutMs: CALL_TIMEOUT_MS,
      env: { HOSTILE_EFFECTS: effects, HOSTILE_SLOW_MS: String(SLOW_MS) },
    });
    sessions.push(s);
    return s;
  };
  try {
    const { mode } = spec;
    const id1 = `hostile-${tag}-${mode}-1`;
    const key = `k-${mode}`;
    let s = await open();
    const first = await callApply(s, key, mode, id1);
    if (spec.first === 'ok') {
      assert.equal(first.isError, undefined, `${mode}: ${JSON.stringify(first)}`);
      assert.deepEqual(first.content, [{ type: 'text', text: `applied ${key}` }], `${mode}: the first answer counts`);
      assert.equal(decisionOf(first), undefined);
    } else if (spec.first === 'tool-error') {
      assert.equal(first.isError, true);
      assert.deepEqual(first.content, [{ type: 'text', text: `refused ${key}` }], 'the tool error passes through');
    } else {
      assert.equal(first.isError, true);
      const d = decisionOf(first)!;
      assert.equal(d.code, 'OUTCOME_UNKNOWN', `${mode}: ${JSON.stringify(first)}`);
      assert.equal(d.decision, 'allow');
      assert.equal(d.execution_id, id1);
      assert.match(String(d.binding), /^writ-bind\/1:sha256:[0-9a-f]{64}$/);
      assert.match(String(d.envelope_digest), /^sha256:[0-9a-f]{64}$/);
    }

    // Naive retries with the same execution id: refused by the PDP, never reach the server.
    if (mode === 'commit-then-exit') s = await open(); // the proxy exited with its child
    for (let i = 0; i < 3; i++) {
      const r = await callApply(s, key, mode, id1);
      assert.equal(r.isError, true);
      assert.equal(decisionOf(r)?.code, 'EXECUTION_TERMINAL', `${mode} retry: ${JSON.stringify(r)}`);
      assert.equal(decisionOf(r)?.execution_id, id1);
    }
    const mine = () => readEffects(effects).filter((e) => e.execution_id === id1);
    assert.equal(mine().length, spec.effect, `${mode}: effects of ${id1}`);

    const ex = await b.execution(id1);
    assert.equal(ex.status, 200);
    assert.equal(ex.body.state, spec.state, `${mode}: terminal state`);

    if (mode === 'slow') {
      // The late answer is recorded with the PDP (a refused second outcome), never delivered.
      assert.ok(await waitFor(() => b.lateOutcomeRecorded(id1), 10_000), 'late answer recorded');
      const late = new RegExp(`late answer for execution ${id1}`);
      assert.ok(await waitFor(() => late.test(s.stderr()), 10_000), `late answer logged: ${s.stderr()}`);
      assert.equal((await b.execution(id1)).body.state, 'unknown');
    }
    if (mode === 'duplicate') assert.match(s.stderr(), /dropped a duplicate/);

    // Reconciliation, then a new execution that supersedes the old one.
    const before = readEffects(effects).length;
    const rec = await b.reconcile(id1, 'absent');
    const id2 = `hostile-${tag}-${mode}-2`;
    const env2 = envelope({ supersedes: id1 });
    if (spec.state === 'unknown') {
      assert.equal(rec.status, 200, JSON.stringify(rec.body));
      assert.equal((await b.execution(id1)).body.state, 'reconciled');
    } else {
      assert.equal(rec.status, 409, JSON.stringify(rec.body));
    }
    const r2 = await callApply(s, key, 'clean', id2, env2);
    for (let i = 0; i < 2; i++) {
      const again = await callApply(s, key, 'clean', id2, env2);
      // denied leaves the new execution `proposed` (denied again); a committed one is terminal.
      assert.equal(decisionOf(again)?.code, spec.state === 'committed' ? 'DENIED' : 'EXECUTION_TERMINAL');
    }
    const added = readEffects(effects).length - before;
    if (spec.state === 'committed') {
      assert.equal(decisionOf(r2)?.code, 'DENIED', `${mode}: a committed effect is not redone: ${JSON.stringify(r2)}`);
      assert.equal(added, 0);
    } else {
      assert.deepEqual(r2.content, [{ type: 'text', text: `applied ${key}` }], `${mode}: ${JSON.stringify(r2)}`);
      assert.equal(added, 1, `${mode}: exactly one more effect`);
      assert.equal(readEffects(effects).filter((e) => e.execution_id === id2).length, 1);
      const ex2 = await b.execution(id2);
      assert.equal(ex2.body.state, 'committed');
      assert.equal(ex2.body.supersedes, id1);
      assert.equal((await b.execution(id1)).body.superseded_by, id2);
    }
    for (const e of readEffects(effects)) assert.ok(e.execution_id === id1 || e.execution_id === id2);
  } finally {
    for (const s of sessions) await s.close().catch(() => undefined);
    t.cleanup();
  }
}
