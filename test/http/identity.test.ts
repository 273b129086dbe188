/**
 * Verified identity over HTTP (docs/protocol.md §13), against a real OpenID Provider: JWT callers on
 * every route beside static tokens, several roles per token, the refusals' shape, delegated PEPs, and
 * the `identity` every record written on a verified caller's request carries — through the sidecar's
 * own listener and through an HTTP front (which authenticates decisions on its own thread).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startIdp, type TestIdp } from '../helpers/oidc.js';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, offboardingBody, startTestServer, WRIT_BIN, type TestServer } from '../helpers/server.js';
import { schemaIssue } from '../../src/schemas/validate.js';
import { offboardingEmployee } from '../helpers/offboarding.js';

const AUD = 'https://writ.test';
const GW_AUD = 'https://gateway.test/mcp/idp';
let idp: TestIdp;
let mint: Awaited<ReturnType<TestIdp['addKey']>>;

before(async () => {
  idp = await startIdp({
    clients: [
      { id: 'offboarding-agent-prod', scope: 'writ.pep writ.audit' },
      { id: 'gateway', scope: 'writ.delegate' },
      { id: 'nobody', scope: 'other' },
    ],
  });
  mint = await idp.addKey({ kid: 'minted' });
});
after(() => idp.stop());

const nowS = () => Math.floor(Date.now() / 1000);
const jwtIssuers = () => [
  {
    issuer: idp.issuer,
    audience: AUD,
    roles: {
      'writ.pep': { role: 'pep', actor: { type: 'Agent', claim: 'client_id' } },
      'writ.audit': { role: 'auditor' },
      'writ.approve': { role: 'approver', principal: { type: 'User', claim: 'sub' } },
      'writ.delegate': { role: 'pep', delegated: { audiences: [GW_AUD] } },
      'writ.admin': { role: 'admin' },
      'writ.evaluate': { role: 'evaluator' },
    },
  },
];

for (const httpThreads of [0, 1]) {
  test(`JWT callers, refusals, delegated PEPs and recorded identities (http_threads ${httpThreads})`, async () => {
    const s: TestServer = await startTestServer({ config: { jwt_issuers: jwtIssuers(), http_threads: httpThreads } });
    try {
      const agent = await idp.clientToken('offboarding-agent-prod', { scope: 'writ.pep writ.audit', resource: AUD });
      // One token, two roles: the pep decides …
      const propose = offboardingBody({ execution_id: `jwt-${httpThreads}` });
      const d = await call(s, 'POST', '/v1/decisions', { token: agent, body: propose });
      assert.equal(d.status, 200, d.text);
      // … and the auditor reads the record, which names who it was.
      const rec = await call(s, 'GET', `/v1/ledger/records/${d.body.record.seq}`, { token: agent });
      assert.equal(rec.status, 200, rec.text);
      assert.equal(rec.body.identity.method, 'jwt');
      assert.equal(rec.body.identity.iss, idp.issuer);
      assert.equal(rec.body.identity.client_id, 'offboarding-agent-prod');
      assert.equal(typeof rec.body.identity.jti, 'string');
      assert.ok(!JSON.stringify(rec.body).includes(agent.split('.')[2]!), 'the record holds no token');
      // The envelope must still name the token's actor (a non-delegated pep: ACTOR_MISMATCH).
      const other = await call(s, 'POST', '/v1/decisions', {
        token: agent,
        body: offboardingBody({ execution_id: `jwt-x-${httpThreads}`, envelope: { actor: { type: 'Agent', id: 'someone-else' } } }),
      });
      assert.equal(other.body.error?.code, 'ACTOR_MISMATCH', other.text);

      // Refusals: a token for another audience is 401 with the challenge and the check named.
      const res = await fetch(`${s.url}/v1/decisions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${await idp.clientToken('offboarding-agent-prod', { scope: 'writ.pep', resource: 'https://other.test' })}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify(propose),
      });
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('www-authenticate'), 'Bearer error="invalid_token"');
      const refused = (await res.json()) as { error: { code: string; message: string } };
      assert.equal(refused.error.code, 'UNAUTHENTICATED');
      assert.match(refused.error.message, /^aud:/);
      // A valid token whose scopes grant no role this route admits: 403.
      const nobody = await idp.clientToken('nobody', { scope: 'other', resource: AUD });
      assert.equal((await call(s, 'POST', '/v1/decisions', { token: nobody, body: propose })).body.error?.code, 'FORBIDDEN_ROLE');
      assert.equal((await call(s, 'GET', '/v1/ledger/checkpoint', { token: nobody })).body.error?.code, 'FORBIDDEN_ROLE');
      // An expired token, on a route the front passes through.
      const expired = await mint({ iss: idp.issuer, aud: AUD, sub: 'x', scope: 'writ.audit', exp: nowS() - 120 });
      const e = await call(s, 'GET', '/v1/ledger/checkpoint', { token: expired });
      assert.equal(e.status, 401);
      assert.match(e.body.error.message, /^exp:/);

      // An approver authenticated by JWT: the approval names the principal from the token.
      const approver = await mint({ iss: idp.issuer, aud: AUD, sub: 'hr-5519', scope: 'writ.approve', iat: nowS(), exp: nowS() + 300 });
      const a = await call(s, 'POST', '/v1/approvals', {
        token: approver,
        body: {
          actor: propose.envelope.actor,
          execution_id: propose.execution_id,
          binding: d.body.binding,
          envelope_digest: d.body.envelope_digest,
          expires_at: new Date(Date.now() + 3600_000).toISOString(),
        },
      });
      assert.equal(a.status, 201, a.text);
      const approval = (await call(s, 'GET', `/v1/ledger/records/${a.body.record.seq}`, { token: agent })).body;
      assert.deepEqual(approval.approver, { type: 'User', id: 'hr-5519' });
      assert.equal(approval.identity.sub, 'hr-5519');

      // Every record written on a verified caller's request names it: an entity change by an admin's JWT too.
      const admin = await mint({ iss: idp.issuer, aud: AUD, sub: 'ops-1', scope: 'writ.admin', exp: nowS() + 300 });
      const put = await call(s, 'PUT', '/v1/entities/Employee/7721', { token: admin, body: offboardingEmployee({}) });
      assert.equal(put.status, 200, put.text);
      const entityRecord = (await call(s, 'GET', `/v1/ledger/records/${put.body.record.seq}`, { token: agent })).body;
      assert.equal(entityRecord.kind, 'entity');
      assert.deepEqual({ ...entityRecord.identity, exp: 0 }, { method: 'jwt', iss: idp.issuer, sub: 'ops-1', exp: 0 });

      // A delegated pep (the gateway's own token) speaks for the end user its identity_token names.
      const gateway = await idp.clientToken('gateway', { scope: 'writ.delegate', resource: AUD });
      const user = await mint({
        iss: idp.issuer,
        aud: GW_AUD,
        sub: 'manager-1842',
        act: { sub: 'offboarding-agent-prod' },
        jti: 'u-1',
        iat: nowS(),
        exp: nowS() + 300,
      });
      const { requester: _r, actor: _a, ...rest } = propose.envelope;
      const delegatedBody = { ...offboardingBody({ execution_id: `dlg-${httpThreads}` }), envelope: rest, identity_token: user };
      const dd = await call(s, 'POST', '/v1/decisions', { token: gateway, body: delegatedBody });
      assert.equal(dd.status, 200, dd.text);
      const drec = (await call(s, 'GET', `/v1/ledger/records/${dd.body.record.seq}`, { token: agent })).body;
      assert.deepEqual(drec.envelope.requester, { type: 'User', id: 'manager-1842' });
      assert.deepEqual(drec.actor, { type: 'Agent', id: 'offboarding-agent-prod' });
      assert.deepEqual(drec.identity, {
        method: 'jwt',
        iss: idp.issuer,
        sub: 'manager-1842',
        act: { sub: 'offboarding-agent-prod' },
        jti: 'u-1',
        exp: drec.identity.exp,
      });
      assert.ok(!JSON.stringify(drec).includes(user.split('.')[2]!), 'the record holds no identity token');
      for (const r of [rec.body, approval, drec]) assert.equal(schemaIssue('ledger-record.json', r), null, JSON.stringify(r));
      // The delegated pep executes a call for that user and reports its outcome with the same identity_token.
      const exec = await call(s, 'POST', '/v1/decisions', {
        token: gateway,
        body: {
          execution_id: `dlg-x-${httpThreads}`,
          phase: 'execute',
          envelope: { task_id: 'T-1', purpose: 'scheduled_employee_offboarding', subject: { type: 'Employee', id: '7721' } },
          action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } },
          identity_token: user,
        },
      });
      assert.equal(exec.body.state, 'invoking', exec.text);
      // Events the tool reported (§17) are sealed for the same user's actor, with the same identity_token.
      const eventsPath = `/v1/executions/dlg-x-${httpThreads}/events`;
      const events = [{ type: 'record.read', data: { employee_id: '7721' } }];
      assert.equal((await call(s, 'POST', eventsPath, { token: gateway, body: { events } })).status, 401);
      const sealed = await call(s, 'POST', eventsPath, { token: gateway, body: { events, identity_token: user } });
      assert.equal(sealed.status, 200, sealed.text);
      assert.equal((await call(s, 'GET', `/v1/ledger/records/${sealed.body.records[0].seq}`, { token: agent })).body.identity.sub, 'manager-1842');
      assert.equal((await call(s, 'POST', eventsPath, { token: s.tokens.pep, body: { events, identity_token: user } })).body.error?.code, 'INVALID_REQUEST');
      const outcomePath = `/v1/executions/dlg-x-${httpThreads}/outcome`;
      assert.equal((await call(s, 'POST', outcomePath, { token: gateway, body: { status: 'committed' } })).status, 401);
      const out = await call(s, 'POST', outcomePath, { token: gateway, body: { status: 'committed', identity_token: user } });
      assert.equal(out.status, 200, out.text);
      assert.equal((await call(s, 'GET', `/v1/ledger/records/${out.body.record.seq}`, { token: agent })).body.identity.sub, 'manager-1842');
      const seen = await call(s, 'GET', `/v1/executions/dlg-x-${httpThreads}?actor=${encodeURIComponent('Agent::"offboarding-agent-prod"')}`, {
        token: gateway,
      });
      assert.equal(seen.body.state, 'committed', seen.text);
      // A requester the token does not name: 403 IDENTITY_MISMATCH.
      const mismatch = await call(s, 'POST', '/v1/decisions', {
        token: gateway,
        body: { ...delegatedBody, execution_id: `dlg-m-${httpThreads}`, envelope: { ...rest, requester: { type: 'User', id: 'ceo' } } },
      });
      assert.equal(mismatch.status, 403, mismatch.text);
      assert.equal(mismatch.body.error.code, 'IDENTITY_MISMATCH');
      // Tool lists (§15) for the delegated pep: the same identity_token names requester and actor.
      const vis = await call(s, 'POST', '/v1/tools/visible', {
        token: gateway,
        body: { envelope: rest, server: 'idp', tools: ['disable_sign_in', 'wipe'], identity_token: user },
      });
      assert.equal(vis.status, 200, vis.text);
      assert.deepEqual(vis.body.visible, ['disable_sign_in']);
      const visMismatch = await call(s, 'POST', '/v1/tools/visible', {
        token: gateway,
        body: { envelope: { ...rest, requester: { type: 'User', id: 'ceo' } }, server: 'idp', tools: [], identity_token: user },
      });
      assert.equal(visMismatch.body.error?.code, 'IDENTITY_MISMATCH', visMismatch.text);
      assert.equal((await call(s, 'POST', '/v1/tools/visible', { token: gateway, body: { envelope: rest, server: 'idp', tools: [] } })).status, 401);
      // No identity_token, or one for another audience: 401.
      const { identity_token: _t, ...without } = delegatedBody;
      assert.equal((await call(s, 'POST', '/v1/decisions', { token: gateway, body: { ...without, execution_id: `dlg-n-${httpThreads}` } })).status, 401);
      const wrongAud = await mint({ iss: idp.issuer, aud: AUD, sub: 'manager-1842', client_id: 'x', exp: nowS() + 300 });
      const w = await call(s, 'POST', '/v1/decisions', {
        token: gateway,
        body: { ...delegatedBody, execution_id: `dlg-w-${httpThreads}`, identity_token: wrongAud },
      });
      assert.equal(w.status, 401, w.text);
      assert.match(w.body.error.message, /^aud:/);
      // An AuthZEN evaluator by scope; its record names the token too.
      const evaluator = await mint({ iss: idp.issuer, aud: AUD, sub: 'pdp-client', client_id: 'pdp-client', scope: 'writ.evaluate', exp: nowS() + 300 });
      const ev = await call(s, 'POST', '/access/v1/evaluation', {
        token: evaluator,
        body: { subject: { type: 'Agent', id: 'a' }, action: { name: 'idp/disable_sign_in' }, resource: { type: 'Employee', id: '7721' } },
      });
      assert.equal(ev.status, 200, ev.text);

      // writ verify takes records with `identity` as any others.
      const dir = mkdtempSync(join(tmpdir(), 'writ-identity-'));
      try {
        const exported = await call(s, 'GET', '/v1/ledger/export', { token: agent });
        assert.equal(exported.status, 200);
        const lines = exported.text
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l));
        assert.ok(lines.filter((r) => r.identity !== undefined).length >= 5);
        assert.ok(lines.some((r) => r.api === 'authzen' && r.identity?.sub === 'pdp-client'));
        writeFileSync(join(dir, 'export.jsonl'), exported.text);
        const v = spawnSync(process.execPath, [WRIT_BIN, 'verify', join(dir, 'export.jsonl')], { encoding: 'utf8' });
        assert.equal(v.status, 0, v.stdout + v.stderr);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }

      // A pep that is not delegated does not send identity_token.
      const st = await call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, body: { ...propose, execution_id: `st-${httpThreads}`, identity_token: user } });
      assert.equal(st.status, 400, st.text);
    } finally {
      await s.stop();
    }
  });
}

test('a burst of 1,000 requests with unknown kids makes at most one JWKS fetch, however many fronts verify', async () => {
  const s: TestServer = await startTestServer({ config: { jwt_issuers: jwtIssuers(), http_threads: 2 } });
  try {
    const agent = await idp.clientToken('offboarding-agent-prod', { scope: 'writ.pep writ.audit', resource: AUD });
    assert.equal((await call(s, 'GET', '/v1/ledger/checkpoint', { token: agent })).status, 200);
    const before = idp.jwksFetches();
    const { generateKeyPair, SignJWT } = await import('jose');
    const rogue = await generateKeyPair('ES256');
    const claims = { iss: idp.issuer, aud: AUD, sub: 'x', client_id: 'offboarding-agent-prod', scope: 'writ.pep writ.audit', exp: nowS() + 300 };
    const statuses: number[] = [];
    for (let wave = 0; wave < 20; wave++) {
      await Promise.all(
        Array.from({ length: 50 }, async (_, i) => {
          const token = await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: `forged-${wave}-${i}` }).sign(rogue.privateKey);
          const r =
            i % 2 === 0
              ? await call(s, 'POST', '/v1/decisions', { token, body: offboardingBody({ execution_id: `forged-${wave}-${i}` }) })
              : await call(s, 'GET', '/v1/ledger/checkpoint', { token });
          statuses.push(r.status);
        }),
      );
    }
    assert.equal(statuses.length, 1000);
    assert.ok(
      statuses.every((st) => st === 401),
      `statuses: ${[...new Set(statuses)].join(', ')}`,
    );
    assert.ok(idp.jwksFetches() - before <= 1, `${idp.jwksFetches() - before} JWKS fetches`);
    const m = await call(s, 'GET', '/metrics');
    assert.match(m.text, new RegExp(`^writ_jwks_fetches_total\\{issuer="${idp.issuer}",result="ok"\\} [12]$`, 'm'));
  } finally {
    await s.stop();
  }
});

test('an issuer that goes down: keys held keep working; an issuer never reached is 503 IDENTITY_UNAVAILABLE', async () => {
  const down = await startIdp({ clients: [{ id: 'offboarding-agent-prod', scope: 'writ.audit' }] });
  // A loopback port nobody listens on: the second issuer's keys can never be had.
  const probe = await startIdp({ clients: [{ id: 'x', scope: 'y' }] });
  const unreachable = probe.issuer;
  const signForUnreachable = await probe.addKey({ kid: 'k' });
  await probe.stop();
  const s: TestServer = await startTestServer({
    config: {
      jwt_issuers: [
        { issuer: down.issuer, audience: AUD, roles: { 'writ.audit': { role: 'auditor' } } },
        { issuer: unreachable, audience: AUD, roles: { 'writ.audit': { role: 'auditor' } } },
      ],
    },
  });
  try {
    const first = await down.clientToken('offboarding-agent-prod', { scope: 'writ.audit', resource: AUD });
    const second = await down.clientToken('offboarding-agent-prod', { scope: 'writ.audit', resource: AUD });
    assert.equal((await call(s, 'GET', '/v1/ledger/checkpoint', { token: first })).status, 200);
    await down.stop();
    assert.equal((await call(s, 'GET', '/v1/ledger/checkpoint', { token: second })).status, 200);
    const never = await signForUnreachable({ iss: unreachable, aud: AUD, sub: 'x', scope: 'writ.audit', exp: nowS() + 300 });
    const r = await call(s, 'GET', '/v1/ledger/checkpoint', { token: never });
    assert.equal(r.status, 503, r.text);
    assert.equal(r.body.error.code, 'IDENTITY_UNAVAILABLE');
  } finally {
    await s.stop();
  }
});
