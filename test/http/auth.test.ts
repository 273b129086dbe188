import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { requireRole, TokenTable } from '../../src/http/auth.js';
import { recordCaller } from '../../src/identity/caller.js';

const sha = (t: string) => createHash('sha256').update(t).digest('hex');
const table = new TokenTable([
  { token: 'plain-pep', role: 'pep', actor: { type: 'Agent', id: 'a' } },
  { token_sha256: sha('hashed-approver'), role: 'approver', principal: { type: 'User', id: 'hr' } },
  { token_sha256: sha('hashed-auditor').toUpperCase(), role: 'auditor' },
  { token: 'named-reconciler', role: 'reconciler', name: 'ops-oncall' },
]);
const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as { code: string }).code;
  }
  return 'none';
};

test('plain and SHA-256-configured tokens authenticate to their role and identity', () => {
  assert.deepEqual(table.authenticate('Bearer plain-pep'), { role: 'pep', name: `sha256:${sha('plain-pep').slice(0, 16)}`, actor: { type: 'Agent', id: 'a' } });
  assert.deepEqual(table.authenticate('bearer hashed-approver'), {
    role: 'approver',
    name: `sha256:${sha('hashed-approver').slice(0, 16)}`,
    principal: { type: 'User', id: 'hr' },
  });
  assert.equal(table.authenticate('Bearer hashed-auditor').role, 'auditor');
});

test("records name a caller by its token entry's name, else by the first 16 hex of its token's SHA-256 (§17)", () => {
  assert.deepEqual(recordCaller(table.authenticate('Bearer named-reconciler')), { role: 'reconciler', name: 'ops-oncall' });
  // A token configured by its digest gets the same name as the same token configured in plain.
  assert.deepEqual(recordCaller(table.authenticate('Bearer hashed-auditor')), { role: 'auditor', name: `sha256:${sha('hashed-auditor').slice(0, 16)}` });
});

test('missing, malformed and unknown tokens are UNAUTHENTICATED; the wrong role is FORBIDDEN_ROLE', () => {
  for (const h of [undefined, '', 'Bearer', 'Basic plain-pep', 'Bearer plain-pep extra', 'Bearer plain-pe', `Bearer ${sha('hashed-approver')}`]) {
    assert.equal(
      code(() => table.authenticate(h)),
      'UNAUTHENTICATED',
      String(h),
    );
  }
  assert.equal(
    code(() => requireRole({ role: 'auditor', name: 'a' }, ['pep'])),
    'FORBIDDEN_ROLE',
  );
  assert.equal(
    code(() => requireRole({ role: 'pep', name: 'p' }, ['pep', 'auditor'])),
    'none',
  );
});

test('a delegated static token is a pep that speaks for others: without identity_token its decisions are 401', async () => {
  const { delegatedCaller } = await import('../../src/identity/delegation.js');
  const t = new TokenTable([{ token: 'gw', role: 'pep', actor: { type: 'Agent', id: 'gw' }, delegated: { audiences: ['https://gw'] } }]);
  const caller = t.authenticate('Bearer gw');
  assert.deepEqual(caller.delegated, { audiences: ['https://gw'] });
  await assert.rejects(delegatedCaller(caller, '{"execution_id":"x"}', undefined), (e: { code?: string }) => e.code === 'UNAUTHENTICATED');
  await assert.rejects(delegatedCaller(caller, '{"identity_token":"a.b.c"}', undefined), (e: { code?: string }) => e.code === 'UNAUTHENTICATED');
  // A caller that is not delegated is itself, whatever the body says.
  const plain = table.authenticate('Bearer plain-pep');
  assert.equal(await delegatedCaller(plain, '{"identity_token":"a.b.c"}', undefined), plain);
});

test('requireRole picks the first role a route admits among several; none is FORBIDDEN_ROLE', () => {
  const held = [
    { role: 'pep' as const, name: 'p', actor: { type: 'Agent', id: 'a' } },
    { role: 'auditor' as const, name: 'a' },
  ];
  assert.equal(requireRole(held, ['auditor']).role, 'auditor');
  assert.equal(requireRole(held, ['pep', 'auditor']).role, 'pep');
  assert.equal(
    code(() => requireRole(held, ['admin'])),
    'FORBIDDEN_ROLE',
  );
  assert.equal(
    code(() => requireRole([], ['admin'])),
    'FORBIDDEN_ROLE',
  );
});
