/**
 * docs/protocol.md §17 on replicas: two new execution ids for one consequence, executed at the same
 * moment through two replicas of one PostgreSQL database — one runs, the other is refused by the
 * bundled `duplicate-consequence` (the prior counts are checked again under the store's write, so the
 * loser is evaluated again on counts that include the winner).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, offboardingBody } from '../helpers/server.js';
import { replicasOnOneDatabase } from './helpers.js';

const clockDir = mkdtempSync(join(tmpdir(), 'writ-prior-clock-'));
writeFileSync(join(clockDir, 'now'), '2026-08-24T17:05:00+07:00');
const f = replicasOnOneDatabase(2, { clock_file: join(clockDir, 'now') });
after(() => rmSync(clockDir, { recursive: true, force: true }));

test('one consequence under two fresh ids at once on two replicas: one runs, one is refused', async () => {
  const rs = f.rs;
  for (let round = 0; round < 4; round++) {
    // Each round its own consequence (another ticket in the arguments: another binding).
    const bodies = rs.map((_, i) =>
      offboardingBody({ execution_id: `DUP-${round}-${i}`, action: { arguments: { employee_id: '7721', ticket: `T-${round}` } } }),
    );
    for (const [i, body] of bodies.entries()) {
      const s = rs[i]!;
      const proposed = await call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, body });
      assert.equal(proposed.body.decision, 'approval_required', proposed.text);
      const approval = await call(s, 'POST', '/v1/approvals', {
        token: s.tokens.approver,
        body: {
          actor: body.envelope.actor,
          execution_id: body.execution_id,
          binding: proposed.body.binding,
          envelope_digest: proposed.body.envelope_digest,
          expires_at: '2026-08-24T23:00:00+07:00',
        },
      });
      assert.equal(approval.status, 201, approval.text);
    }
    const answers = await Promise.all(
      bodies.map((body, i) => call(rs[i]!, 'POST', '/v1/decisions', { token: rs[i]!.tokens.pep, body: { ...body, phase: 'execute' } })),
    );
    for (const a of answers) assert.equal(a.status, 200, a.text);
    const allowed = answers.filter((a) => a.body.decision === 'allow');
    const refused = answers.filter((a) => a.body.decision !== 'allow');
    assert.equal(allowed.length, 1, answers.map((a) => a.text).join('\n'));
    assert.equal(allowed[0]!.body.state, 'invoking');
    assert.equal(refused.length, 1);
    assert.equal(refused[0]!.body.decision, 'deny');
    assert.ok(refused[0]!.body.reasons.includes('duplicate-consequence'), refused[0]!.text);
    const record = await call(rs[0]!, 'GET', `/v1/ledger/records/${refused[0]!.body.record.seq}`, { token: rs[0]!.tokens.auditor });
    assert.equal(record.body.prior.invoking, 1, record.text);
  }
});
