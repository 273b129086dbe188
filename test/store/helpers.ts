/** Shared by the store tests: temp data dirs, a child-process runner, the chain check. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawn, type ChildProcess } from 'node:child_process';
import { recordHash, ZERO_HASH, type LedgerRecord } from '../../src/ledger/record.js';

/** dist/src of this build (tests run from dist/test/store). */
export const DIST_SRC = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../src');
export const BIN_WRIT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../../bin/writ');

export function tempDir(t: { after(fn: () => void): void }, prefix = 'writ-store-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs an ES module snippet in a fresh node process; `ready` resolves on its first stdout line. */
export function spawnSnippet(code: string): {
  child: ChildProcess;
  firstLine: Promise<string>;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
} {
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let resolveLine: (l: string) => void;
  const firstLine = new Promise<string>((r) => (resolveLine = r));
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    const nl = stdout.indexOf('\n');
    if (nl >= 0) resolveLine(stdout.slice(0, nl));
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((r) =>
    child.on('close', (code, signal) => {
      resolveLine(stdout);
      r({ code, signal, stdout, stderr });
    }),
  );
  return { child, firstLine, exit };
}

/** Runs `bin/writ` with arguments; resolves with its exit code and output. */
export function runWrit(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN_WRIT, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((r) => child.on('close', (code) => r({ code, stdout, stderr })));
}

/** Asserts a ledger from seq 0: each record at its seq, linked to the one before, hashed; returns the head. */
export function assertChain(records: readonly LedgerRecord[]): string {
  let prev = ZERO_HASH;
  for (const [i, r] of records.entries()) {
    assert.equal(r.seq, i);
    assert.equal(r.prev, prev);
    assert.equal(recordHash(r), r.hash);
    prev = r.hash;
  }
  return prev;
}
