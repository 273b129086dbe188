/**
 * Hot reload (issue 4): a changed policy dir is swapped in atomically and ledgered; a broken one is
 * refused (logged, counted, ledgered as rejected) while the old set keeps serving; entities.json edits
 * become `entity` records. Also: a second server on the same data dir exits non-zero with a clear message.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { call, offboardingBody, REPO, startTestServer, WRIT_BIN, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/wait.js';

let s: TestServer;
let dir: string;
const policies = () => join(dir, 'policies');

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'writ-reload-'));
  cpSync(join(REPO, 'policies'), policies(), { recursive: true });
  s = await startTestServer({ policyDir: policies() });
});
after(async () => {
  await s.stop();
  rmSync(dir, { recursive: true, force: true });
});

const readBody = (id: string) => offboardingBody({ execution_id: id, action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } } });

test('policy edits are swapped in and ledgered; a broken edit keeps the old set serving', async () => {
  const t = s.tokens;
  const before = await call(s, 'POST', '/v1/decisions', { token: t.pep, body: readBody('HR-1') });
  assert.equal(before.body.decision, 'allow');
  const v1 = before.body.policy_version;

  // The start's policy record names the entities.json it read: by count, and by the entities_version a
  // store holding exactly those entities has (this one: seeded from the file, nothing else yet).
  const started = (await call(s, 'GET', '/v1/ledger/records?kind=policy&limit=1000', { token: t.auditor })).body.records[0];
  const fileEntities = JSON.parse(readFileSync(join(policies(), 'entities.json'), 'utf8'));
  assert.deepEqual(started.entities_file, { path: 'entities.json', entities: fileEntities.length, entities_version: before.body.entities_version });

  // Forbid reads: the next decision sees the new version.
  writeFileSync(join(policies(), 'extra.cedar'), '@id("no-reads")\nforbid (principal, action == Action::"hris/read_employee", resource);\n');
  const denied = await until(async () => {
    const r = await call(s, 'POST', '/v1/decisions', { token: t.pep, body: readBody(`HR-${Math.random().toString(36).slice(2)}`) });
    return r.body.policy_version !== v1 ? r.body : undefined;
  }, 'the new policy version');
  assert.equal(denied.decision, 'deny');
  assert.deepEqual(denied.reasons, ['no-reads']);
  const v2 = denied.policy_version;

  // A broken file: refused, the previous set keeps serving, the rejection is ledgered and counted.
  writeFileSync(join(policies(), 'broken.cedar'), 'permit (principal, action, resource) when { ;\n');
  const rejected = await until(async () => {
    const r = await call(s, 'GET', '/v1/ledger/records?kind=policy&limit=1000', { token: t.auditor });
    return r.body.records.find((x: { result: string }) => x.result === 'rejected');
  }, 'a rejected policy record');
  assert.equal(rejected.error.code, 'POLICY_INVALID');
  const still = await call(s, 'POST', '/v1/decisions', { token: t.pep, body: readBody('HR-after-broken') });
  assert.equal(still.body.policy_version, v2);
  assert.equal(still.body.decision, 'deny');
  const metrics = await call(s, 'GET', '/metrics');
  assert.match(metrics.text, /writ_policy_reloads_total\{result="failed"\} [1-9]/);
  assert.equal((await call(s, 'GET', '/readyz')).status, 200);
  const loaded = (await call(s, 'GET', '/v1/ledger/records?kind=policy&limit=1000', { token: t.auditor })).body.records.filter(
    (x: { result: string }) => x.result === 'loaded',
  );
  assert.deepEqual(
    loaded.map((x: { policy_version: string }) => x.policy_version),
    [v1, v2],
  );
  rmSync(join(policies(), 'broken.cedar'));
  rmSync(join(policies(), 'extra.cedar'));
});

test('entities.json edits become entity records and move entities_version', async () => {
  const t = s.tokens;
  const v1 = (await call(s, 'POST', '/v1/decisions', { token: t.pep, body: readBody('ENT-1') })).body.entities_version;
  const file = join(policies(), 'entities.json');
  const entities = JSON.parse(readFileSync(file, 'utf8'));
  entities.push({ uid: { type: 'User', id: 'new-hire' }, attrs: { name: 'N' }, parents: [{ type: 'Role', id: 'hr' }] });
  writeFileSync(file, JSON.stringify(entities));
  const entity = await until(async () => {
    const r = await call(s, 'GET', '/v1/entities/User/new-hire', { token: t.auditor });
    return r.status === 200 ? r.body : undefined;
  }, 'the new entity');
  assert.deepEqual(entity.parents, [{ type: 'Role', id: 'hr' }]);
  const records = await call(s, 'GET', '/v1/ledger/records?kind=entity&limit=1000', { token: t.auditor });
  const rec = records.body.records.find((r: { uid: { id: string } }) => r.uid.id === 'new-hire');
  assert.equal(rec.source, 'file');
  assert.notEqual(rec.entities_version, v1);

  // A broken edit is not applied, and the ledger says so (a `policy` record, rejected), as for a broken policy.
  writeFileSync(file, '[{"uid": ');
  const rejected = await until(async () => {
    const r = await call(s, 'GET', '/v1/ledger/records?kind=policy&limit=1000', { token: t.auditor });
    return r.body.records.find(
      (x: { result: string; error?: { message: string } }) => x.result === 'rejected' && /entities\.json not applied/.test(x.error?.message ?? ''),
    );
  }, 'the rejected entities.json record');
  assert.equal(rejected.error.code, 'POLICY_INVALID');
  assert.equal((await call(s, 'GET', '/v1/entities/User/new-hire', { token: t.auditor })).status, 200, 'the entities in force are unchanged');
  writeFileSync(file, JSON.stringify(entities));
});

test('a second server on the same data dir exits non-zero with a clear message', () => {
  const r = spawnSync(process.execPath, [WRIT_BIN, 'serve', '--config', s.configPath], { encoding: 'utf8', timeout: 20_000 });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /in use by pid \d+/);
});
