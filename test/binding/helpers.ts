// Shared by the binding tests: repo paths, vector loading, and running the real `bin/writ`.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const REPO = new URL('../../../', import.meta.url);
export const WRIT_BIN = fileURLToPath(new URL('bin/writ', REPO));
export const VECTOR_DIR = new URL('vectors/binding/', REPO);
export const GOLDEN_URL = new URL('vectors/golden/binding.json', REPO);

export type VectorExpect = { binding: string; canonical: string } | { error: string };
export interface Vector {
  name: string;
  server: string;
  tool: string;
  input: string;
  expect: VectorExpect;
  file?: string;
}

export function loadVectors(): Vector[] {
  const out: Vector[] = [];
  for (const file of readdirSync(VECTOR_DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()) {
    for (const v of JSON.parse(readFileSync(new URL(file, VECTOR_DIR), 'utf8')) as Vector[]) out.push({ ...v, file });
  }
  return out;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `bin/writ ...args` with `stdin` bytes. */
export function runWrit(args: string[], stdin: Uint8Array | string = ''): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WRIT_BIN, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }));
    child.stdin.on('error', () => {
      /* the child may exit before reading everything */
    });
    child.stdin.end(stdin);
  });
}

/** Maps `fn` over `items` with at most `limit` in flight. */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  async function worker(): Promise<void> {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!, i);
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** The codes a refusal of argument text may carry (docs/protocol.md §3, §8). */
export const ADMISSION_CODES = new Set([
  'INVALID_JSON',
  'INVALID_REQUEST',
  'BINDING_DUPLICATE_KEY',
  'BINDING_LONE_SURROGATE',
  'BINDING_UNSAFE_INTEGER',
  'BINDING_LOSSY_NUMBER',
  'BINDING_UNREPRESENTABLE',
  'BINDING_TOO_DEEP',
]);

export { prng } from '../helpers/prng.js';
