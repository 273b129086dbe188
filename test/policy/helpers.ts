/** Temp policy directories for the policy tests; each test removes its own. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PolicyEngine, type DecisionInput } from '../../src/policy/engine.js';
import { EvaluatorPool } from '../../src/policy/evaluator-pool.js';
import { loadPolicyDir } from '../../src/policy/load.js';
import { StaticEntitySource, type EntityJson } from '../../src/policy/entities.js';

export const BUNDLED_DIR = fileURLToPath(new URL('../../../policies', import.meta.url));
export const WRIT_BIN = fileURLToPath(new URL('../../../bin/writ', import.meta.url));

/** `writ policy <args>` as a user runs it: exit status, output, and stdout's lines. */
export function writPolicy(...args: string[]): { status: number | null; stdout: string; stderr: string; lines: string[] } {
  const r = spawnSync(process.execPath, [WRIT_BIN, 'policy', ...args], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, lines: r.stdout.trimEnd().split('\n') };
}

/** Writes `files` (relative path → text) into a fresh temp dir and returns it with its cleanup. */
export function tempPolicyDir(files: Record<string, string>): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'writ-policy-test-'));
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export const ENTITIES: EntityJson[] = [
  { uid: { type: 'Role', id: 'hr' }, attrs: {}, parents: [] },
  { uid: { type: 'Role', id: 'legal' }, attrs: {}, parents: [] },
  { uid: { type: 'User', id: 'alice' }, attrs: {}, parents: [{ type: 'Role', id: 'hr' }] },
  { uid: { type: 'User', id: 'bob' }, attrs: {}, parents: [{ type: 'Role', id: 'legal' }] },
  { uid: { type: 'User', id: 'req' }, attrs: {}, parents: [] },
  { uid: { type: 'Agent', id: 'a1' }, attrs: { trusted: true }, parents: [] },
  { uid: { type: 'Doc', id: 'd1' }, attrs: { secret: false }, parents: [] },
];

/** A decision input on Agent::"a1" / tool s/t / Doc::"d1" requested by User::"req". */
export function input(overrides: Partial<DecisionInput> = {}): DecisionInput {
  return {
    actor: { type: 'Agent', id: 'a1' },
    server: 's',
    tool: 't',
    subject: { type: 'Doc', id: 'd1' },
    envelope: { task_id: 'T-1', purpose: 'testing', requester: { type: 'User', id: 'req' } },
    phase: 'propose',
    binding: `writ-bind/1:sha256:${'0'.repeat(64)}`,
    cedarArguments: { n: 1 },
    now: new Date('2026-08-24T10:00:00Z'),
    approvals: [],
    entities: new StaticEntitySource(ENTITIES),
    ...overrides,
  };
}

/**
 * Runs `fn` with four engines over `policies`: narrowed (the default), the reference that hands Cedar
 * the whole set, context and slice, one without a memo, and one behind an evaluator thread — with a one-entry memo, so a
 * thread is handed the narrowed Cedar call itself (CedarCall) and nearly every request still goes to it.
 */
export async function withEngines(
  policies: Record<string, string>,
  fn: (e: { narrowed: PolicyEngine; reference: PolicyEngine; memoOff: PolicyEngine; threaded: PolicyEngine; pool: EvaluatorPool }) => Promise<void>,
): Promise<void> {
  const { dir, cleanup } = tempPolicyDir(policies);
  const pool = new EvaluatorPool(1);
  try {
    const bundle = loadPolicyDir(dir);
    const threaded = new PolicyEngine(bundle, { memoSize: 1 });
    pool.register(threaded, bundle);
    await fn({
      narrowed: new PolicyEngine(bundle),
      reference: new PolicyEngine(bundle, { narrowRequests: false }),
      memoOff: new PolicyEngine(bundle, { memoSize: 0 }),
      threaded,
      pool,
    });
  } finally {
    await pool.close();
    cleanup();
  }
}
