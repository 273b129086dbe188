/**
 * A server's ledger as an auditor exports it, and `writ verify` run over an export offline: the two
 * steps of every test that checks what a server wrote end to end.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, TEST_TOKENS, WRIT_BIN } from './server.js';

/** GET /v1/ledger/export (asserted 200): its text and its records, parsed, in seq order. */
export async function exportLedger(s: { url: string }, token = TEST_TOKENS.auditor): Promise<{ text: string; records: any[] }> {
  const r = await call(s, 'GET', '/v1/ledger/export', { token });
  assert.equal(r.status, 200, r.text);
  return {
    text: r.text,
    records: r.text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l)),
  };
}

/** Runs `writ verify` over an export with the server's keys and a checkpoint; its exit status and parsed report. */
export function verifyExport(text: string, keys: unknown, checkpoint: unknown): { status: number | null; out: any; raw: string } {
  const dir = mkdtempSync(join(tmpdir(), 'writ-export-'));
  try {
    writeFileSync(join(dir, 'export.jsonl'), text);
    writeFileSync(join(dir, 'keys.json'), JSON.stringify(keys));
    writeFileSync(join(dir, 'cp.json'), JSON.stringify(checkpoint));
    const r = spawnSync(
      process.execPath,
      [WRIT_BIN, 'verify', join(dir, 'export.jsonl'), '--keys', join(dir, 'keys.json'), '--checkpoint', join(dir, 'cp.json')],
      { encoding: 'utf8' },
    );
    let out: any;
    try {
      out = JSON.parse(r.stdout);
    } catch {
      out = undefined;
    }
    return { status: r.status, out, raw: r.stdout + r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
