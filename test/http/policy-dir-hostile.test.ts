/**
 * Nothing placed in the policy dir can freeze or exhaust the server (issue 49, docs/protocol.md §8.1):
 * entities.json replaced by a FIFO, by a link to /dev/zero, by a file over the size limit and by one
 * growing past it — each is a rejected reload (ledgered, counted) while the server keeps answering with
 * the entities in force.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, offboardingBody, REPO, startTestServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/wait.js';

let s: TestServer;
let dir: string;
let original: string;
const policies = () => join(dir, 'policies');
const entitiesFile = () => join(policies(), 'entities.json');

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'writ-hostile-dir-'));
  cpSync(join(REPO, 'policies'), policies(), { recursive: true });
  original = readFileSync(entitiesFile(), 'utf8');
  s = await startTestServer({ policyDir: policies(), config: { policy_file_max_bytes: original.length + 1024 } });
});
after(async () => {
  await s.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Replaces entities.json in one step (a rename), as a deployment tool would. */
function replaceEntities(make: (path: string) => void): void {
  const next = join(policies(), '.entities.next');
  rmSync(next, { force: true });
  make(next);
  renameSync(next, entitiesFile());
}

async function rejection(matching: RegExp): Promise<{ error: { code: string; message: string } }> {
  return until(async () => {
    const r = await call(s, 'GET', '/v1/ledger/records?kind=policy&limit=1000', { token: s.tokens.auditor });
    return r.body.records.find((x: { result: string; error?: { message: string } }) => x.result === 'rejected' && matching.test(x.error?.message ?? ''));
  }, `a rejected reload matching ${matching}`);
}

async function stillServing(id: string, entitiesVersion: string): Promise<void> {
  assert.equal((await call(s, 'GET', '/healthz')).status, 200);
  const r = await call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, body: offboardingBody({ execution_id: id }) });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.entities_version, entitiesVersion);
}

test('a FIFO, a link to /dev/zero, an oversized and a growing entities.json are each a rejected reload; the server keeps serving', async () => {
  const start = await call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, body: offboardingBody({ execution_id: 'dir-0' }) });
  const version = start.body.entities_version;

  replaceEntities((p) => execFileSync('mkfifo', [p]));
  assert.equal((await rejection(/FIFO/)).error.code, 'POLICY_INVALID');
  await stillServing('dir-1', version);

  replaceEntities((p) => symlinkSync('/dev/zero', p));
  await rejection(/character device/);
  await stillServing('dir-2', version);

  replaceEntities((p) => writeFileSync(p, original + ' '.repeat(4096)));
  await rejection(/over the \d+-byte limit/);
  await stillServing('dir-3', version);

  // Growing: a valid file that keeps being appended to, past the limit.
  replaceEntities((p) => writeFileSync(p, original));
  for (let i = 0; i < 8; i++) appendFileSync(entitiesFile(), ' '.repeat(256));
  await rejection(new RegExp(`is ${original.length + 2048} bytes, over`));
  await stillServing('dir-4', version);
  const metrics = (await call(s, 'GET', '/metrics')).text;
  assert.match(metrics, /writ_policy_reloads_total\{result="failed"\} ([4-9]|\d\d)/);
});
