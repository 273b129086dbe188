/**
 * Shared helpers of the chaos suite (issue 7): a seeded PRNG, the test HTTP client with a
 * deadline, the "read" decision body the bundled policies allow without approval, and the auditor-side
 * checks every test ends with (export → `writ verify` with keys and a held checkpoint, consistency
 * proofs between held checkpoints).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { hashToBytes } from '../../src/ledger/merkle/hasher.js';
import { verifyConsistency } from '../../src/ledger/merkle/verify.js';
import { call, TEST_TOKENS, WRIT_BIN } from '../helpers/server.js';

export const AGENT_Q = encodeURIComponent('Agent::"offboarding-agent-prod"');

export { prng } from '../helpers/prng.js';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface Reply {
  status: number;
  body: any;
  text: string;
}

/**
 * One HTTP exchange with a bearer token and a deadline. Resolves with the reply, or rejects when no
 * complete reply arrived (connection refused/reset, timeout): the caller must then treat the request
 * as unacknowledged.
 */
export async function req(
  url: string,
  method: string,
  path: string,
  o: { token?: string; body?: unknown; rawBody?: string; timeoutMs?: number; headers?: Record<string, string> } = {},
): Promise<Reply> {
  return call({ url }, method, path, { ...o, timeoutMs: o.timeoutMs ?? 30_000 });
}

/** A decision the bundled policies allow without approval (hris/read_employee for the manager). */
export function readBody(executionId: string, phase: 'propose' | 'execute', over: Record<string, unknown> = {}) {
  return {
    execution_id: executionId,
    phase,
    envelope: {
      task_id: 'CHAOS-1',
      purpose: 'chaos_read',
      requester: { type: 'User', id: 'manager-1842' },
      actor: { type: 'Agent', id: 'offboarding-agent-prod' },
      subject: { type: 'Employee', id: '7721' },
      evidence_refs: ['hris:employee:7721@version-44'],
      supersedes: null,
      ...over,
    },
    action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } },
  };
}

export interface LedgerSnapshot {
  lines: string[];
  records: Array<Record<string, any>>;
  keys: unknown;
  checkpoint: Record<string, any>;
}

/** Export, keys and the latest checkpoint, read as the auditor. */
export async function snapshotLedger(url: string): Promise<LedgerSnapshot> {
  const exp = await req(url, 'GET', '/v1/ledger/export', { token: TEST_TOKENS.auditor, timeoutMs: 60_000 });
  assert.equal(exp.status, 200, `export: ${exp.text.slice(0, 500)}`);
  const lines = exp.text.split('\n');
  assert.equal(lines.pop(), '', 'the export ends with a newline');
  const keys = await req(url, 'GET', '/v1/ledger/keys', { token: TEST_TOKENS.auditor });
  assert.equal(keys.status, 200, keys.text);
  const cp = await req(url, 'GET', '/v1/ledger/checkpoint', { token: TEST_TOKENS.auditor });
  assert.equal(cp.status, 200, cp.text);
  return { lines, records: lines.map((l) => JSON.parse(l)), keys: keys.body, checkpoint: cp.body };
}

/** Runs `writ verify` over an export, with keys and (optionally) a checkpoint held from earlier. */
export function writVerify(lines: string[], keys: unknown, checkpoint?: unknown): { code: number | null; out: any; raw: string } {
  const dir = mkdtempSync(join(tmpdir(), 'writ-chaos-verify-'));
  try {
    const exportFile = join(dir, 'export.jsonl');
    writeFileSync(exportFile, lines.map((l) => `${l}\n`).join(''));
    const keysFile = join(dir, 'keys.json');
    writeFileSync(keysFile, JSON.stringify(keys));
    const args = [WRIT_BIN, 'verify', exportFile, '--keys', keysFile];
    if (checkpoint !== undefined) {
      const cpFile = join(dir, 'cp.json');
      writeFileSync(cpFile, JSON.stringify(checkpoint));
      args.push('--checkpoint', cpFile);
    }
    const r = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 120_000 });
    let out: any;
    try {
      out = JSON.parse(r.stdout.trim().split('\n').pop() ?? '');
    } catch {
      out = undefined;
    }
    return { code: r.status, out, raw: `${r.stdout}\n${r.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Asserts the ledger as served verifies offline (keys + latest checkpoint + any held ones). */
export async function assertLedgerVerifies(url: string, held: Array<Record<string, any>> = []): Promise<LedgerSnapshot> {
  const snap = await snapshotLedger(url);
  snap.lines.forEach((l, i) => {
    assert.equal(JSON.parse(l).seq, i, `export line ${i} has seq ${i}`);
  });
  for (const cp of [snap.checkpoint, ...held]) {
    const v = writVerify(snap.lines, snap.keys, cp);
    assert.equal(v.code, 0, `writ verify (checkpoint size ${cp.size}) failed: ${v.raw}`);
    assert.equal(v.out?.ok, true);
    assert.equal(v.out.records, snap.lines.length);
    assert.equal(v.out.head, snap.records.at(-1)?.hash);
  }
  return snap;
}

function proofBytes(h: string): Buffer {
  return h.startsWith('sha256:') ? hashToBytes(h) : Buffer.from(h, 'hex');
}

/**
 * A checkpoint held from earlier is consistent with a later one: the server's consistency proof
 * between their sizes verifies against the two signed roots.
 */
export async function assertConsistent(url: string, older: Record<string, any>, newer: Record<string, any>): Promise<void> {
  assert.ok(newer.size >= older.size, `checkpoint sizes go forward (${older.size} → ${newer.size})`);
  if (older.size === 0) return;
  const r = await req(url, 'GET', `/v1/ledger/proofs/consistency?from=${older.size}&to=${newer.size}`, { token: TEST_TOKENS.auditor });
  assert.equal(r.status, 200, r.text);
  if (r.body.from_root !== undefined) assert.equal(r.body.from_root, older.root, 'the server agrees with the held root');
  if (r.body.to_root !== undefined) assert.equal(r.body.to_root, newer.root);
  assert.doesNotThrow(
    () => verifyConsistency(older.size, newer.size, hashToBytes(older.root), hashToBytes(newer.root), (r.body.path as string[]).map(proofBytes)),
    `consistency proof ${older.size} → ${newer.size} does not verify`,
  );
}

/** Ledger size as an auditor sees it (via the export, the source of truth). */
export async function ledgerSize(url: string): Promise<number> {
  const exp = await req(url, 'GET', '/v1/ledger/export', { token: TEST_TOKENS.auditor, timeoutMs: 60_000 });
  assert.equal(exp.status, 200, exp.text.slice(0, 300));
  return exp.text === '' ? 0 : exp.text.split('\n').length - 1;
}
