/** Replicas of one deployment for tests: `writ serve` processes on one PostgreSQL database and one key file. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyFile } from '../../src/checkpoints/keys.js';
import { after, before } from 'node:test';
import { call, offboardingBody, startTestServer, WRIT_BIN, TEST_TOKENS, type TestServer } from '../helpers/server.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';

export interface Deployment {
  databaseUrl: string;
  keyFile: string;
  dir: string;
  remove(): void;
}

export function newDeployment(databaseUrl: string): Deployment {
  const dir = mkdtempSync(join(tmpdir(), 'writ-deploy-'));
  const keyFile = join(dir, 'signing-key.json');
  generateKeyFile(keyFile);
  return { databaseUrl, keyFile, dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Starts `n` replicas at once (concurrent start: migration and key record must be idempotent). */
export async function startReplicas(d: Deployment, n: number, o: { clockFile?: string; config?: Record<string, unknown> } = {}): Promise<TestServer[]> {
  return Promise.all(
    Array.from({ length: n }, () =>
      startTestServer({
        ...(o.clockFile ? { clockFile: o.clockFile } : {}),
        config: { database_url: d.databaseUrl, signing_key_file: d.keyFile, ...o.config },
      }),
    ),
  );
}

/** An execute of the bundled policies' `hris/read_employee` (allowed) under execution id `id`. */
export const readBody = (id: string, args: Record<string, unknown> = { employee_id: '7721' }) =>
  offboardingBody({ execution_id: id, phase: 'execute', action: { server: 'hris', tool: 'read_employee', arguments: args } });

/**
 * Hooks for the calling `describe`: before, PostgreSQL, a fresh database and `n` replicas on it; after,
 * every replica still in `rs` must exit 0 on SIGTERM, and the rest is removed. The fields are set by then.
 */
export function replicasOnOneDatabase(n: number, config: Record<string, unknown>): { pg: TestPostgres; d: Deployment; rs: TestServer[] } {
  const f = { rs: [] } as unknown as { pg: TestPostgres; d: Deployment; rs: TestServer[] };
  before(async () => {
    f.pg = await startPostgres();
    f.d = newDeployment(await f.pg.createDatabase());
    f.rs = await startReplicas(f.d, n, { config });
  });
  after(async () => {
    for (const s of f.rs) assert.equal(await s.stop(), 0, `SIGTERM exits 0: ${s.output()}`);
    f.pg?.stop();
    f.d?.remove();
  });
  return f;
}

/** The number of lines of an export. */
export const lineCount = (text: string): number => text.trim().split('\n').length;

/**
 * The export of a replica (its first `to` records when given: a replica's checkpoint timer may append
 * between two exports), checked gap-free and verified by `writ verify` against the served keys.
 */
export async function verifiedExport(s: { url: string }, to?: number): Promise<string> {
  const exported = await call(s, 'GET', `/v1/ledger/export${to === undefined ? '' : `?to=${to}`}`, { token: TEST_TOKENS.auditor });
  assert.equal(exported.status, 200, exported.text);
  const lines = exported.text.trim().split('\n');
  lines.forEach((l, i) => {
    assert.equal(JSON.parse(l).seq, i, 'gap-free seqs');
  });
  const keys = await call(s, 'GET', '/v1/ledger/keys', { token: TEST_TOKENS.auditor });
  assert.equal(keys.body.keys.length, 1, 'one deployment key, announced once');
  const dir = mkdtempSync(join(tmpdir(), 'writ-export-'));
  try {
    writeFileSync(join(dir, 'export.jsonl'), exported.text);
    writeFileSync(join(dir, 'keys.json'), JSON.stringify(keys.body));
    const r = spawnSync(process.execPath, [WRIT_BIN, 'verify', join(dir, 'export.jsonl'), '--keys', join(dir, 'keys.json')], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.equal(JSON.parse(r.stdout).ok, true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return exported.text;
}
