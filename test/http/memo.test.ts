/**
 * The decision memo over HTTP: repeated questions are answered as before, every one of them is
 * ledgered, and an entity change is seen by the very next decision (the memo never serves an answer
 * decided under other entities).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, offboardingBody, startTestServer, type TestServer } from '../helpers/server.js';

describe('decision memo over HTTP', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer({ config: { decision_memo_size: 16 } });
  });
  after(async () => {
    assert.equal(await s.stop(), 0);
  });

  const readBody = (n: number) =>
    offboardingBody({ execution_id: `MEMO-${n}`, phase: 'execute', action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } } });
  const agent = (trusted: boolean) => ({ attrs: { trusted }, parents: [] });

  test('repeats are answered and ledgered one by one; an entity change applies to the next decision', async () => {
    const t = s.tokens;
    let n = 0;
    const decide = async () => {
      const r = await call(s, 'POST', '/v1/decisions', { token: t.pep, body: readBody(n++) });
      assert.equal(r.status, 200, r.text);
      return r.body;
    };
    const first = await decide();
    const second = await decide();
    assert.equal(first.decision, 'allow');
    assert.deepEqual({ ...second, decision_id: 0, execution_id: 0, record: 0 }, { ...first, decision_id: 0, execution_id: 0, record: 0 });
    assert.equal(second.record.seq, first.record.seq + 1, 'every decision has its own record');

    const untrusted = await call(s, 'PUT', '/v1/entities/Agent/offboarding-agent-prod', { token: t.admin, body: agent(false) });
    assert.equal(untrusted.status, 200, untrusted.text);
    const denied = await decide();
    assert.equal(denied.decision, 'deny', JSON.stringify(denied));
    assert.equal(denied.entities_version, untrusted.body.entities_version);

    const trusted = await call(s, 'PUT', '/v1/entities/Agent/offboarding-agent-prod', { token: t.admin, body: agent(true) });
    assert.equal(trusted.status, 200, trusted.text);
    const allowed = await decide();
    assert.equal(allowed.decision, 'allow');
    assert.equal(allowed.entities_version, trusted.body.entities_version);

    const records = await call(s, 'GET', '/v1/ledger/records?kind=decision', { token: t.auditor });
    assert.equal(records.status, 200, records.text);
    const ours = records.body.records.filter((r: { execution_id: string }) => r.execution_id.startsWith('MEMO-'));
    assert.deepEqual(
      ours.map((r: { decision: string }) => r.decision),
      ['allow', 'allow', 'deny', 'allow'],
    );
  });
});
