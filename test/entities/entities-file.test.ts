/**
 * `<policy_dir>/entities.json` edits are applied as what changed in the file, once per store:
 * - an edit of one entity does not undo an admin change to another (it used to re-assert every entity of
 *   the file that differed from the store: an unrelated edit lifted an admin's legal hold);
 * - an edit made while the sidecar was stopped is applied at the next start;
 * - on replicas, the replica that polls last does not apply the edit again over an admin change made in
 *   between (found by a differential review of replicas against one sidecar);
 * - an edit is checked against the set's schema as at load: an entity a restart would refuse (an undeclared
 *   type, a wrong attribute) is refused while running too, ledgered, the entities in force kept (it used to
 *   be taken live and ledgered, and the next start then failed with POLICY_INVALID).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { entitiesFileChanges } from '../../src/entities/entity-cache.js';
import type { EntityJson } from '../../src/policy/entities.js';
import { afterPolls, call, REPO, startTestServer, TEST_TOKENS, type TestServer } from '../helpers/server.js';
import { offboardingEmployee } from '../helpers/offboarding.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { until } from '../helpers/wait.js';
import { newDeployment, startReplicas, type Deployment } from '../replicas/helpers.js';

const t = TEST_TOKENS;
const user = (id: string, name: string): EntityJson => ({ uid: { type: 'User', id }, attrs: { name }, parents: [] });

test('entitiesFileChanges: seeds what is missing; then only what the edit changed, not what an admin changed', () => {
  const a = user('a', 'A'),
    b = user('b', 'B'),
    c = user('c', 'C');
  const held = new Map<string, EntityJson>();
  const holds = (k: string) => held.get(k);
  // Nothing applied yet: seed what the store does not hold.
  held.set('User::"a"', user('a', 'admin'));
  assert.deepEqual(entitiesFileChanges(undefined, [a, b], holds), [{ entity: b }]);
  // Applied [a, b]; the store holds a (admin-changed) and b; the edit changes b and adds c: a stays the admin's.
  held.set('User::"b"', b);
  const b2 = user('b', 'B2');
  assert.deepEqual(entitiesFileChanges([a, b], [a, b2, c], holds), [{ entity: b2 }, { entity: c }]);
  // The edit removes b: deleted; an entity the edit sets to what the store already holds: nothing.
  assert.deepEqual(entitiesFileChanges([a, b], [user('a', 'admin')], holds), [{ entity: b, deleted: true }]);
  // Same file: nothing.
  assert.deepEqual(entitiesFileChanges([a, b], [a, b], holds), []);
});

function policyDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'writ-entfile-'));
  cpSync(join(REPO, 'policies'), dir, { recursive: true });
  return dir;
}

function editFile(dir: string, edit: (entities: EntityJson[]) => void): void {
  const file = join(dir, 'entities.json');
  const entities = JSON.parse(readFileSync(file, 'utf8')) as EntityJson[];
  edit(entities);
  writeFileSync(file, JSON.stringify(entities, null, 1));
}

const employee = async (s: { url: string }) => (await call(s, 'GET', '/v1/entities/Employee/7721', { token: t.admin })).body;

test('one sidecar: an edit of another entity keeps an admin change; an edit made while stopped is applied at start', { timeout: 60_000 }, async () => {
  const dir = policyDir();
  let s: TestServer | undefined = await startTestServer({ policyDir: dir });
  const dataDir = s.dataDir;
  try {
    // The admin puts the subject under legal hold.
    const put = await call(s, 'PUT', '/v1/entities/Employee/7721', { token: t.admin, body: offboardingEmployee({ legal_hold: true }) });
    assert.equal(put.status, 200, put.text);
    // Someone adds a new hire to entities.json: applied, and the legal hold stays.
    const entityRecords = async () =>
      (await call(s!, 'GET', '/v1/ledger/records?kind=entity&limit=1000', { token: t.auditor })).body.records as Array<{ uid: { id: string } }>;
    const seeded = (await entityRecords()).length;
    editFile(dir, (es) => es.push(user('new-hire', 'N')));
    await until(async () => (await call(s!, 'GET', '/v1/entities/User/new-hire', { token: t.admin })).status === 200 || undefined, 'the new hire');
    assert.equal((await employee(s)).attrs.legal_hold, true, "the admin's legal hold survives an unrelated edit");
    assert.deepEqual(
      (await entityRecords()).slice(seeded).map((r) => r.uid.id),
      ['new-hire'],
      'the edit is one record: the new hire',
    );
    assert.equal(await s.stop({ keepData: true }), 0);
    s = undefined;

    // While stopped: the file renames the manager. At the next start the edit is applied; the hold stays.
    editFile(dir, (es) => {
      const m = es.find((e) => e.uid.type === 'User' && e.uid.id === 'manager-1842')!;
      m.attrs = { ...m.attrs, name: 'Dana Okafor-Reyes' };
    });
    s = await startTestServer({ policyDir: dir, dataDir });
    const manager = (await call(s, 'GET', '/v1/entities/User/manager-1842', { token: t.admin })).body;
    assert.equal(manager.attrs.name, 'Dana Okafor-Reyes');
    assert.equal((await employee(s)).attrs.legal_hold, true);
    // A restart with the file unchanged changes nothing.
    const before = (await call(s, 'GET', '/v1/ledger/records?kind=entity&limit=1000', { token: t.auditor })).body.records.length;
    assert.equal(await s.stop({ keepData: true }), 0);
    s = await startTestServer({ policyDir: dir, dataDir });
    assert.equal((await call(s, 'GET', '/v1/ledger/records?kind=entity&limit=1000', { token: t.auditor })).body.records.length, before);
  } finally {
    await s?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an edit the schema refuses is refused while running, once, and ledgered; the entities in force stay', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'writ-entfile-schema-'));
  writeFileSync(join(dir, 'schema.cedarschema'), 'entity Agent;\nentity Doc { secret: Bool };\naction "s/t" appliesTo { principal: Agent, resource: Doc };\n');
  writeFileSync(join(dir, 'p.cedar'), '@id("not-secret") permit (principal, action == Action::"s/t", resource) when { !resource.secret };\n');
  const doc = (id: string, secret: unknown) => ({ uid: { type: 'Doc', id }, attrs: { secret }, parents: [] });
  writeFileSync(join(dir, 'entities.json'), JSON.stringify([doc('d1', false)]));
  let s: TestServer | undefined = await startTestServer({ policyDir: dir });
  const dataDir = s.dataDir;
  const rejections = async () =>
    (
      (await call(s!, 'GET', '/v1/ledger/records?kind=policy&limit=1000', { token: t.auditor })).body.records as Array<{
        result: string;
        error?: { code: string; message: string };
      }>
    ).filter((r) => r.result === 'rejected');
  try {
    for (const [bad, detail] of [
      [[doc('d1', false), { uid: { type: 'Nope', id: 'x' }, attrs: {}, parents: [] }], /Nope/],
      [[doc('d1', 'no')], /secret/],
    ] as const) {
      const before = (await rejections()).length;
      writeFileSync(join(dir, 'entities.json'), JSON.stringify(bad));
      const refused = await until(async () => (await rejections())[before], 'the refused entities.json edit');
      assert.equal(refused.error?.code, 'POLICY_INVALID');
      assert.match(refused.error.message, /entities\.json not applied/);
      assert.match(refused.error.message, detail);
      // Two more polls: the same refused text is not judged (or ledgered) again.
      await afterPolls(s, 2);
      assert.equal((await rejections()).length, before + 1, 'one refusal per edit');
      assert.equal((await call(s, 'GET', '/v1/entities/Nope/x', { token: t.admin })).status, 404, 'the undeclared entity is not taken');
      assert.equal((await call(s, 'GET', '/v1/entities/Doc/d1', { token: t.admin })).body.attrs.secret, false, 'the entities in force stay');
    }
    // A good edit after them is applied, and a restart on it starts.
    writeFileSync(join(dir, 'entities.json'), JSON.stringify([doc('d1', false), doc('d2', true)]));
    await until(async () => (await call(s!, 'GET', '/v1/entities/Doc/d2', { token: t.admin })).status === 200 || undefined, 'the good edit');
    assert.equal(await s.stop({ keepData: true }), 0);
    s = await startTestServer({ policyDir: dir, dataDir });
    assert.equal((await call(s, 'GET', '/v1/entities/Doc/d2', { token: t.admin })).body.attrs.secret, true);
  } finally {
    await s?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

let pg: TestPostgres | undefined;
before(async () => {
  pg = await startPostgres();
});
after(() => pg?.stop());

test('replicas: an edit is applied once; the replica that polls last does not undo an admin change made in between', { timeout: 120_000 }, async () => {
  const dir = policyDir();
  const d: Deployment = newDeployment(await pg!.createDatabase());
  // A long poll on the second replica: the first applies the edit, the admin changes the entity, and only
  // then does the second look at the file.
  const [r1] = await startReplicas(d, 1, { config: { policy_dir: dir, policy_poll_ms: 100 } });
  const [r2] = await startReplicas(d, 1, { config: { policy_dir: dir, policy_poll_ms: 3000 } });
  try {
    editFile(dir, (es) => {
      const e = es.find((x) => x.uid.type === 'Employee' && x.uid.id === '7721')!;
      e.attrs = { ...e.attrs, status: 'file-edit' };
    });
    await until(async () => (await employee(r1!)).attrs.status === 'file-edit' || undefined, 'the first replica applies the edit');
    const put = await call(r1!, 'PUT', '/v1/entities/Employee/7721', {
      token: t.admin,
      body: offboardingEmployee({ status: 'admin-after-edit', legal_hold: true }),
    });
    assert.equal(put.status, 200, put.text);
    // Give the second replica two of its polls (a change is loaded once two polls in a row agree): they must
    // change nothing.
    await afterPolls(r2!, 2);
    for (const r of [r1!, r2!]) {
      const e = await employee(r);
      assert.equal(e.attrs.status, 'admin-after-edit');
      assert.equal(e.attrs.legal_hold, true);
    }
    const records = (await call(r2!, 'GET', '/v1/ledger/records?kind=entity&limit=1000', { token: t.auditor })).body.records;
    assert.equal(
      records.filter((r: { source: string; attrs?: { status?: string } }) => r.source === 'file' && r.attrs?.status === 'file-edit').length,
      1,
      'the edit is ledgered once',
    );
  } finally {
    for (const r of [r1, r2]) await r?.stop();
    d.remove();
    rmSync(dir, { recursive: true, force: true });
  }
});
