// The waiting replica's answers (src/server/waiting.ts): the sidecar's own app over an unavailable
// backend. The real listener and database are in test/replicas/faults.test.ts; this runs the app alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULTS } from '../../src/config/config.js';
import { fairnessOf } from '../../src/http/fairness.js';
import { waitingApp } from '../../src/server/waiting.js';

const tokens = { pep: 'w-pep', auditor: 'w-auditor', approver: 'w-approver' };
const app = waitingApp(
  {
    listen: '127.0.0.1:0',
    log: () => undefined,
    stopRequested: () => false,
    tokens: [
      { token: tokens.pep, role: 'pep', actor: { type: 'Agent', id: 'a' } },
      { token: tokens.auditor, role: 'auditor' },
      { token: tokens.approver, role: 'approver', principal: { type: 'User', id: 'hr' } },
    ],
    maxBodyBytes: DEFAULTS.max_body_bytes,
    fairness: fairnessOf({ ...DEFAULTS, tokens: [] }),
  },
  () => 'http://127.0.0.1:7777',
);

async function call(method: string, path: string, token?: string, body?: string) {
  const headers: Record<string, string> = { 'x-request-id': 'req-1' };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await app.request(path, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text.startsWith('{') ? JSON.parse(text) : undefined };
}

test('what needs no database answers as on a running replica', async () => {
  assert.equal((await call('GET', '/healthz')).status, 200);
  const ready = await call('GET', '/readyz');
  assert.equal(ready.status, 503);
  assert.deepEqual(ready.body, { ready: false });
  assert.equal((await call('GET', '/metrics')).status, 200);
  assert.equal((await call('GET', '/openapi.json')).body.openapi, '3.1.0');
  assert.equal((await call('GET', '/.well-known/authzen-configuration')).body.policy_decision_point, 'http://127.0.0.1:7777');
  assert.equal((await call('GET', '/console/')).status, 200);
  assert.deepEqual((await call('GET', '/console/session', tokens.auditor)).body, { auditor: true });
  assert.deepEqual((await call('GET', '/console/session', 'wrong')).body, { auditor: false });
});

test('refused before the database as a running replica refuses, 503 STORE_UNAVAILABLE past that', async () => {
  const jwt = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln';
  const cases: Array<[string, string, string | undefined, number, string]> = [
    ['POST', '/v1/decisions', undefined, 401, 'UNAUTHENTICATED'],
    ['POST', '/v1/decisions', 'not-a-token', 401, 'UNAUTHENTICATED'],
    ['POST', '/v1/decisions', tokens.auditor, 403, 'FORBIDDEN_ROLE'],
    ['POST', '/v1/decisions', tokens.pep, 503, 'STORE_UNAVAILABLE'],
    // A JWT is verified only once running (its issuer's keys are fetched then).
    ['POST', '/v1/decisions', jwt, 503, 'STORE_UNAVAILABLE'],
    ['GET', '/v1/ledger/records', tokens.pep, 403, 'FORBIDDEN_ROLE'],
    ['GET', '/v1/ledger/records', tokens.auditor, 503, 'STORE_UNAVAILABLE'],
    // Before its parameters are read (a running replica would answer 400 for the missing actor).
    ['GET', '/v1/executions/WAIT-1', tokens.auditor, 503, 'STORE_UNAVAILABLE'],
    ['GET', '/v1/approvals/pending', tokens.approver, 503, 'STORE_UNAVAILABLE'],
    ['POST', '/access/v1/evaluation', tokens.pep, 503, 'STORE_UNAVAILABLE'],
    ['POST', '/access/v1/search/subject', tokens.pep, 503, 'STORE_UNAVAILABLE'],
    ['GET', '/ledger/checkpoint', undefined, 503, 'STORE_UNAVAILABLE'],
    ['GET', '/v1/no-such-route', tokens.auditor, 404, 'NOT_FOUND'],
    ['GET', '/console/no-such-file.js', undefined, 404, 'NOT_FOUND'],
    ['GET', '/v1/decisions', tokens.pep, 405, 'METHOD_NOT_ALLOWED'],
  ];
  for (const [method, path, token, status, code] of cases) {
    const r = await call(method, path, token, method === 'POST' ? '{}' : undefined);
    assert.equal(r.status, status, `${method} ${path}: ${r.text}`);
    assert.equal(r.body.error.code, code, `${method} ${path}`);
    assert.equal(r.headers.get('x-request-id'), 'req-1', `${method} ${path}: the request id is echoed`);
    if (path.startsWith('/v1/')) assert.equal(r.headers.get('cache-control'), 'no-store', `${method} ${path}`);
    if (status === 503) assert.match(r.body.error.message, /the database is unreachable; this replica is waiting for it/);
  }
});
