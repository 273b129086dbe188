/**
 * A large `entities.json` on a PostgreSQL deployment (docs/protocol.md §5, §9): replicas started at once
 * apply it once, and an edit of many entities while they serve is applied once, as on LMDB. The store
 * fetches the rows a write declares in one round trip; the file's writes declare every subject revision
 * they may move, so a write of N entities is not run again once per entity (which made 1,000 entities
 * take ~40 s and a 10 s write timeout end the start).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterPolls, call, REPO, TEST_TOKENS, type TestServer } from '../helpers/server.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { newDeployment, startReplicas, type Deployment } from './helpers.js';
import { until } from '../helpers/wait.js';

const EMPLOYEES = 3000;

describe('a large entities.json on replicas of one PostgreSQL database', () => {
  let pg: TestPostgres;
  let d: Deployment;
  let rs: TestServer[] = [];
  let policyDir: string;
  let base: unknown[];
  before(async () => {
    pg = await startPostgres();
    d = newDeployment(await pg.createDatabase());
    policyDir = join(mkdtempSync(join(tmpdir(), 'writ-ents-')), 'policies');
    cpSync(join(REPO, 'policies'), policyDir, { recursive: true });
    base = JSON.parse(readFileSync(join(policyDir, 'entities.json'), 'utf8')) as unknown[];
    const employees = Array.from({ length: EMPLOYEES }, (_, i) => ({
      uid: { type: 'Employee', id: `bulk-${i}` },
      attrs: { department: 'ops', rank: i },
      parents: [],
    }));
    writeFileSync(join(policyDir, 'entities.json'), JSON.stringify([...base, ...employees]));
  });
  after(async () => {
    for (const s of rs) await s.stop();
    pg?.stop();
    d?.remove();
    rmSync(join(policyDir, '..'), { recursive: true, force: true });
  });

  test(`two replicas started at once apply ${EMPLOYEES} file entities once; an edit of 300 while serving is applied once`, async () => {
    rs = await startReplicas(d, 2, { config: { policy_dir: policyDir, policy_poll_ms: 200 } });
    const [a, b] = rs as [TestServer, TestServer];
    const entityRecords = async () => {
      const r = await call(a, 'GET', '/v1/ledger/records?kind=entity&limit=1000', { token: TEST_TOKENS.auditor });
      let n = r.body.records.length;
      for (let next = r.body.next; next !== undefined && next !== null; ) {
        const page = await call(a, 'GET', `/v1/ledger/records?kind=entity&limit=1000&from=${next}`, { token: TEST_TOKENS.auditor });
        n += page.body.records.length;
        next = page.body.next;
      }
      return n;
    };
    assert.equal(await entityRecords(), base.length + EMPLOYEES, 'each file entity recorded once');
    const one = await call(b, 'GET', `/v1/entities/Employee/bulk-${EMPLOYEES - 1}`, { token: TEST_TOKENS.auditor });
    assert.equal(one.status, 200, one.text);

    const edited = Array.from({ length: EMPLOYEES }, (_, i) => ({
      uid: { type: 'Employee', id: `bulk-${i}` },
      attrs: { department: i < 300 ? 'finance' : 'ops', rank: i },
      parents: [],
    }));
    writeFileSync(join(policyDir, 'entities.json'), JSON.stringify([...base, ...edited]));
    await until(
      async () =>
        (await call(b, 'GET', '/v1/entities/Employee/bulk-299', { token: TEST_TOKENS.auditor })).body.attrs?.department === 'finance' ? true : undefined,
      'the edit applied',
      600,
    );
    // Applied by one replica: exactly 300 more records, whichever polled first, once the other has polled
    // twice more (read the edit, then found it applied).
    await Promise.all([a, b].map((s) => afterPolls(s, 2)));
    assert.equal(await entityRecords(), base.length + EMPLOYEES + 300, 'the edit recorded once');
    // Both replicas serve on: a decision on each.
    for (const s of [a, b]) assert.equal((await call(s, 'GET', '/readyz')).status, 200);
  });
});
