/**
 * docs/protocol.md §9: three `writ serve` processes on one PostgreSQL database are one PDP — at most one
 * reservation per execution whichever replicas the calls reach, approvals and entity changes in force
 * on every replica for the next request, one gap-free chain exported byte-identically by every replica.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, offboardingBody, type TestServer } from '../helpers/server.js';
import { offboardingEmployee } from '../helpers/offboarding.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { lineCount, newDeployment, readBody, startReplicas, verifiedExport, type Deployment } from './helpers.js';

for (const replicas of [2, 3])
  describe(`${replicas} replicas on one PostgreSQL`, () => {
    let pg: TestPostgres;
    let d: Deployment;
    let rs: TestServer[];
    let clockDir: string;
    let clock: string;
    const setClock = (t: string) => writeFileSync(clock, t);

    before(async () => {
      clockDir = mkdtempSync(join(tmpdir(), 'writ-clock-'));
      clock = join(clockDir, 'now');
      setClock('2026-08-24T15:30:00+07:00');
      pg = await startPostgres();
      d = newDeployment(await pg.createDatabase());
      rs = await startReplicas(d, replicas, { clockFile: clock });
    });
    after(async () => {
      for (const s of rs ?? []) assert.equal(await s.stop(), 0, 'SIGTERM exits 0');
      pg?.stop();
      d?.remove();
      rmSync(clockDir, { recursive: true, force: true });
    });

    test('the same execution ids hammered through every replica: one reservation, at most one invoking each', async () => {
      const ids = Array.from({ length: 12 }, (_, i) => `HAMMER-${i}`);
      const calls = ids.flatMap((id) =>
        rs.flatMap((s) => [0, 1, 2].map(() => call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, body: readBody(id) }).then((r) => ({ id, r })))),
      );
      const results = await Promise.all(calls);
      for (const id of ids) {
        const mine = results.filter((x) => x.id === id).map((x) => x.r);
        const allowed = mine.filter((r) => r.status === 200);
        assert.equal(allowed.length, 1, `${id}: ${mine.map((r) => r.text).join('\n')}`);
        assert.equal(allowed[0]!.body.decision, 'allow');
        assert.equal(allowed[0]!.body.state, 'invoking');
        for (const r of mine.filter((r) => r.status !== 200)) {
          assert.equal(r.status, 409, r.text);
          assert.equal(r.body.error.code, 'EXECUTION_IN_FLIGHT');
        }
        const decisions = await call(rs[0]!, 'GET', `/v1/ledger/records?kind=decision&execution_id=${id}`, { token: rs[0]!.tokens.auditor });
        assert.equal(decisions.body.records.length, 1, 'exactly one reservation ledgered');
        assert.equal(decisions.body.records.filter((r: any) => r.state === 'invoking').length, 1);
      }
    });

    test('conflicting bindings for one execution id: one reserves, the others 409 EXECUTION_CONFLICT', async () => {
      const results = await Promise.all(
        rs.flatMap((s, i) =>
          [0, 1].map((j) =>
            call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, body: readBody('CONFLICT-1', { employee_id: '7721', note: `r${i}-${j}` }) }),
          ),
        ),
      );
      const ok = results.filter((r) => r.status === 200);
      assert.equal(ok.length, 1, results.map((r) => r.text).join('\n'));
      const winner = ok[0]!.body.binding;
      for (const r of results.filter((r) => r.status !== 200)) {
        assert.equal(r.status, 409, r.text);
        assert.equal(r.body.error.code, 'EXECUTION_CONFLICT', r.text);
      }
      // Once the winner is committed, every other binding is a conflict on every replica.
      for (const [i, s] of rs.entries()) {
        const late = await call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, body: readBody('CONFLICT-1', { employee_id: '7721', note: `late-${i}` }) });
        assert.equal(late.status, 409);
        assert.equal(late.body.error.code, 'EXECUTION_CONFLICT', late.text);
      }
      assert.match(winner, /^writ-bind\/1:/);
    });

    test('an approval given on one replica is used on another; an outcome on one makes a retry on another terminal', async () => {
      const [a, b, c] = [rs[0]!, rs[1]!, rs[rs.length - 1]!];
      setClock('2026-08-24T15:30:00+07:00');
      const proposed = await call(a, 'POST', '/v1/decisions', { token: a.tokens.pep, body: offboardingBody() });
      assert.equal(proposed.body.decision, 'approval_required', proposed.text);
      const approval = await call(b, 'POST', '/v1/approvals', {
        token: b.tokens.approver,
        body: {
          actor: { type: 'Agent', id: 'offboarding-agent-prod' },
          execution_id: 'OFF-2048:disable-sign-in',
          binding: proposed.body.binding,
          envelope_digest: proposed.body.envelope_digest,
          expires_at: '2026-08-24T20:00:00+07:00',
        },
      });
      assert.equal(approval.status, 201, approval.text);
      setClock('2026-08-24T17:05:00+07:00');
      const allowed = await call(c, 'POST', '/v1/decisions', { token: c.tokens.pep, body: offboardingBody({ phase: 'execute' }) });
      assert.equal(allowed.body.decision, 'allow', allowed.text);
      assert.equal(allowed.body.approval_used, approval.body.approval_id);
      const done = await call(a, 'POST', '/v1/executions/OFF-2048:disable-sign-in/outcome', { token: a.tokens.pep, body: { status: 'committed' } });
      assert.equal(done.status, 200, done.text);
      const retry = await call(b, 'POST', '/v1/decisions', { token: b.tokens.pep, body: offboardingBody({ phase: 'execute' }) });
      assert.equal(retry.status, 409);
      assert.equal(retry.body.error.code, 'EXECUTION_TERMINAL');
      const view = await call(c, 'GET', '/v1/executions/OFF-2048:disable-sign-in', { token: c.tokens.pep });
      assert.equal(view.body.state, 'committed');
    });

    test('an entity change on one replica invalidates approvals on the others at the next request', async () => {
      const [a, b, c] = [rs[0]!, rs[1]!, rs[rs.length - 1]!];
      setClock('2026-08-24T15:30:00+07:00');
      // The termination facts the bundled policies take from the store (§17) come with the record.
      const attrs = (status: string) => ({ attrs: { ...offboardingEmployee({}).attrs, employee_id: '7730', status }, parents: [] });
      const put = await call(a, 'PUT', '/v1/entities/Employee/7730', { token: a.tokens.admin, body: attrs('active') });
      assert.equal(put.status, 200, put.text);
      const body = offboardingBody({
        execution_id: 'OFF-7730',
        envelope: { subject: { type: 'Employee', id: '7730' } },
        action: { arguments: { employee_id: '7730' } },
      });
      const p = await call(b, 'POST', '/v1/decisions', { token: b.tokens.pep, body });
      assert.equal(p.body.decision, 'approval_required', p.text);
      const appr = await call(c, 'POST', '/v1/approvals', {
        token: c.tokens.approver,
        body: {
          actor: body.envelope.actor,
          execution_id: 'OFF-7730',
          binding: p.body.binding,
          envelope_digest: p.body.envelope_digest,
          expires_at: '2026-08-24T23:00:00+07:00',
        },
      });
      assert.equal(appr.status, 201, appr.text);
      const changed = await call(a, 'PUT', '/v1/entities/Employee/7730', { token: a.tokens.admin, body: attrs('terminating') });
      assert.equal(changed.status, 200);
      setClock('2026-08-24T17:30:00+07:00');
      const seen = await call(c, 'GET', '/v1/entities/Employee/7730', { token: c.tokens.admin });
      assert.equal(seen.body.attrs.status, 'terminating', 'the change is visible on another replica');
      const e = await call(b, 'POST', '/v1/decisions', { token: b.tokens.pep, body: { ...body, phase: 'execute' } });
      assert.equal(e.body.decision, 'approval_required', e.text);
      assert.equal(e.body.entities_version, changed.body.entities_version);
      const v = await call(c, 'GET', '/v1/executions/OFF-7730', { token: c.tokens.pep });
      assert.equal(v.body.approvals[0].invalid_reason, 'subject_changed');
    });

    test('the ledger: every replica exports the same bytes, gap-free, and writ verify passes', async () => {
      const first = await verifiedExport(rs[0]!);
      const exports = await Promise.all(rs.map((s) => verifiedExport(s, lineCount(first))));
      for (const e of exports) assert.equal(e, first);
      const cps = await Promise.all(rs.map((s) => call(s, 'GET', '/v1/ledger/checkpoint', { token: s.tokens.auditor })));
      // The same checkpoint record from every replica (unless a timer appended a newer one in between).
      for (const cp of cps) {
        assert.equal(cp.body.kind, 'checkpoint');
        if (cp.body.seq === cps[0]!.body.seq) assert.deepEqual(cp.body, cps[0]!.body);
      }
      const policies = await call(rs[0]!, 'GET', '/v1/ledger/records?kind=policy', { token: rs[0]!.tokens.auditor });
      assert.equal(policies.body.records.length, 1, 'replicas starting together record the policy set once');
    });
  });
