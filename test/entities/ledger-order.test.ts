/**
 * Decisions racing entity changes on one sidecar (the embedded LMDB store, with its HTTP fronts and
 * group commit): every decision record — MCP and AuthZEN — names the entities_version in force at its
 * place in the ledger, i.e. the version of the last `entity` record before it. Group commit used to let
 * a decision evaluated before a change be recorded just after it, in the same batch or the next (found
 * by a differential review of one sidecar against replicas on PostgreSQL, which were right).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, offboardingBody, TEST_TOKENS } from '../helpers/server.js';
import { AUTHZEN_QUESTION, staleDecisions, startRaceServer } from './race-server.js';
import { offboardingEmployee } from '../helpers/offboarding.js';

const EVALUATOR = 'ledger-order-evaluator';

test('a decision racing an entity change is recorded after it only if it saw it (MCP and AuthZEN)', { timeout: 120_000 }, async () => {
  const t = TEST_TOKENS;
  const server = await startRaceServer(EVALUATOR);
  try {
    const authzen = AUTHZEN_QUESTION;
    const rounds = 40;
    for (let i = 0; i < rounds; i++) {
      const answers = await Promise.all([
        call(server, 'PUT', '/v1/entities/Employee/7721', { token: t.admin, body: offboardingEmployee({ legal_hold: i % 2 === 0 }) }),
        call(server, 'POST', '/access/v1/evaluation', { token: EVALUATOR, body: authzen }),
        call(server, 'POST', '/v1/decisions', { token: t.pep, body: offboardingBody({ execution_id: `ORDER-${i}:a` }) }),
        call(server, 'POST', '/access/v1/evaluation', { token: EVALUATOR, body: authzen }),
        call(server, 'POST', '/v1/decisions', { token: t.pep, body: offboardingBody({ execution_id: `ORDER-${i}:b` }) }),
      ]);
      for (const a of answers) assert.equal(a.status, 200, a.text);
    }
    const exported = await call(server, 'GET', '/v1/ledger/export', { token: t.auditor });
    assert.equal(exported.status, 200);
    const { decisions, stale } = staleDecisions(exported.text);
    assert.equal(decisions, rounds * 4);
    assert.deepEqual(stale, []);
  } finally {
    await server.stop();
  }
});
