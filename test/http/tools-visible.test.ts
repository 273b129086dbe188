// POST /v1/tools/visible (docs/protocol.md §15) over HTTP against the real server and the bundled
// offboarding example: one policy hides and blocks. Nothing is ledgered; the answer follows entity
// changes (a legal hold hides disable_sign_in) and the caller's identity.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { call, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(async () => {
  await s.stop();
});

const envelope = (over: Record<string, unknown> = {}) => ({
  task_id: 'OFF-2048',
  purpose: 'scheduled_employee_offboarding',
  requester: { type: 'User', id: 'manager-1842' },
  actor: { type: 'Agent', id: 'offboarding-agent-prod' },
  subject: { type: 'Employee', id: '7721' },
  ...over,
});
const visible = (body: unknown, token = s.tokens.pep) => call(s, 'POST', '/v1/tools/visible', { token, body });
const ledgerSize = async () => (await call(s, 'GET', '/readyz')).body.ledger_size as number;

test("the manager's agent sees what it may call (or may after approval); another requester, a legal hold or an unknown tool hide it", async () => {
  const before = await ledgerSize();
  const idp = await visible({ envelope: envelope(), server: 'idp', tools: ['disable_sign_in', 'delete_account'] });
  assert.equal(idp.status, 200, idp.text);
  assert.deepEqual(idp.body.visible, ['disable_sign_in'], 'approval_required keeps a tool listed; no permit hides it');
  assert.match(idp.body.policy_version, /^sha256:/);
  const hris = await visible({ envelope: envelope(), server: 'hris', tools: ['read_employee', 'read_employee'] });
  assert.deepEqual(hris.body.visible, ['read_employee']);
  // An IT requester is no manager: the permit can never hold.
  const it = await visible({ envelope: envelope({ requester: { type: 'User', id: 'it-3001' } }), server: 'idp', tools: ['disable_sign_in'] });
  assert.deepEqual(it.body.visible, []);
  // Employee 8830 is under legal hold in the example's entities: a forbid whatever the call.
  const held = await visible({ envelope: envelope({ subject: { type: 'Employee', id: '8830' } }), server: 'idp', tools: ['disable_sign_in'] });
  assert.deepEqual(held.body.visible, []);
  assert.equal(await ledgerSize(), before, 'nothing is ledgered');
});

test('an entity change moves the answer at once (the cache follows the entities version)', async () => {
  const ask = async () =>
    (await visible({ envelope: envelope({ subject: { type: 'Employee', id: '7721' } }), server: 'idp', tools: ['disable_sign_in'] })).body.visible;
  assert.deepEqual(await ask(), ['disable_sign_in']);
  const current = await call(s, 'GET', '/v1/entities/Employee/7721', { token: s.tokens.admin });
  const put = await call(s, 'PUT', '/v1/entities/Employee/7721', {
    token: s.tokens.admin,
    body: { attrs: { ...current.body.attrs, legal_hold: true }, parents: current.body.parents },
  });
  assert.equal(put.status, 200, put.text);
  assert.deepEqual(await ask(), []);
  await call(s, 'PUT', '/v1/entities/Employee/7721', { token: s.tokens.admin, body: { attrs: current.body.attrs, parents: current.body.parents } });
  assert.deepEqual(await ask(), ['disable_sign_in']);
});

test('refusals: another actor 403 ACTOR_MISMATCH, a bad envelope 400 ENVELOPE_INVALID, unknown members 400, non-pep roles 403', async () => {
  const other = await visible({ envelope: envelope({ actor: { type: 'Agent', id: 'sandbox-agent' } }), server: 'idp', tools: ['disable_sign_in'] });
  assert.equal(other.status, 403);
  assert.equal(other.body.error.code, 'ACTOR_MISMATCH');
  const bad = await visible({ envelope: envelope({ subject: { type: 'employee lower', id: 'x' } }), server: 'idp', tools: [] });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.code, 'ENVELOPE_INVALID');
  const extra = await visible({ envelope: envelope(), server: 'idp', tools: [], arguments: {} });
  assert.equal(extra.status, 400);
  assert.equal(extra.body.error.code, 'INVALID_REQUEST');
  const auditor = await visible({ envelope: envelope(), server: 'idp', tools: [] }, s.tokens.auditor);
  assert.equal(auditor.status, 403);
  assert.equal(auditor.body.error.code, 'FORBIDDEN_ROLE');
});
