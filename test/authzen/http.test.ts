/**
 * The AuthZEN routes against the real sidecar (bin/writ serve) over HTTP: every route, the three
 * batch semantics (a short-circuit records only what it evaluated), auth, malformed input with
 * pointers, the stored-wins rule, approval_required, and the ledger (`writ verify` on the export).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, startTestServer, WRIT_BIN, type TestServer } from '../helpers/server.js';
import { schemaIssue } from '../../src/schemas/validate.js';

const POLICIES = `
@id("read-doc")
permit (principal is user, action == Action::"read", resource is doc)
when { principal.clearance >= resource.level };

@id("write-needs-approval")
@requires_approval("group::\\"editors\\"")
forbid (principal, action == Action::"write", resource)
when { context.size > 10 };

@id("write")
permit (principal is user, action == Action::"write", resource is doc);

@id("ping")
permit (principal, action == Action::"ping", resource)
when { context.action.method == "GET" && context.ip == "10.0.0.1" && context.weight.greaterThan(decimal("1.2")) };
`;

const ENTITIES = [
  { uid: { type: 'user', id: 'alice' }, attrs: { clearance: 2 }, parents: [] },
  { uid: { type: 'user', id: 'bob' }, attrs: { clearance: 5 }, parents: [] },
  { uid: { type: 'doc', id: 'public' }, attrs: { level: 1 }, parents: [] },
  { uid: { type: 'doc', id: 'secret' }, attrs: { level: 5 }, parents: [] },
];

const TOKENS = {
  evaluator: 'authzen-evaluator',
  pep: 'authzen-pep-alice',
  auditor: 'authzen-auditor',
  admin: 'authzen-admin',
  approver: 'authzen-approver',
};

let dir: string;
let server: TestServer;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'writ-authzen-'));
  writeFileSync(join(dir, 'docs.cedar'), POLICIES);
  writeFileSync(join(dir, 'entities.json'), JSON.stringify(ENTITIES));
  server = await startTestServer({
    policyDir: dir,
    // Test-only fault injection (src/server/faults.ts): inert until a test writes the file.
    env: { WRIT_FAULT_FILE: join(dir, 'fault.json') },
    config: {
      tokens: [
        { token: TOKENS.evaluator, role: 'evaluator' },
        { token: TOKENS.pep, role: 'pep', actor: { type: 'user', id: 'alice' } },
        { token: TOKENS.auditor, role: 'auditor' },
        { token: TOKENS.admin, role: 'admin' },
        { token: TOKENS.approver, role: 'approver', principal: { type: 'user', id: 'ed' } },
      ],
    },
  });
});

after(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const user = (id: string, properties?: Record<string, unknown>) => (properties ? { type: 'user', id, properties } : { type: 'user', id });
const doc = (id: string, properties?: Record<string, unknown>) => (properties ? { type: 'doc', id, properties } : { type: 'doc', id });
const read = (subject: unknown, resource: unknown) => ({ subject, action: { name: 'read' }, resource });

async function evaluation(body: unknown, token = TOKENS.evaluator) {
  return call(server, 'POST', '/access/v1/evaluation', { token, body });
}
async function evaluations(body: unknown, token = TOKENS.evaluator) {
  return call(server, 'POST', '/access/v1/evaluations', { token, body });
}

async function authzenRecords(): Promise<any[]> {
  const out: any[] = [];
  for (let from = 0; ; ) {
    const page = await call(server, 'GET', `/v1/ledger/records?kind=decision&from=${from}&limit=1000`, { token: TOKENS.auditor });
    assert.equal(page.status, 200);
    out.push(...page.body.records.filter((r: any) => r.api === 'authzen'));
    if (page.body.next === null) return out;
    from = page.body.next;
  }
}

test('POST /access/v1/evaluation: true only for allow, with decision_id and reasons; recorded in the ledger', async () => {
  const before = (await authzenRecords()).length;
  const allowed = await evaluation(read(user('bob'), doc('secret')));
  assert.equal(allowed.status, 200, allowed.text);
  assert.equal(allowed.body.decision, true);
  assert.deepEqual(Object.keys(allowed.body.context).sort(), ['decision_id', 'reasons']);
  assert.deepEqual(allowed.body.context.reasons, ['read-doc']);
  const denied = await evaluation(read(user('alice'), doc('secret')));
  assert.equal(denied.body.decision, false);
  assert.deepEqual(denied.body.context.reasons, []);

  const records = await authzenRecords();
  assert.equal(records.length, before + 2);
  const rec = records.find((r) => r.decision_id === allowed.body.context.decision_id);
  assert.ok(rec, 'the evaluation is a ledger record with its own decision_id');
  assert.equal(rec.kind, 'decision');
  assert.equal(rec.api, 'authzen');
  assert.equal(rec.execution_id, undefined);
  assert.deepEqual(rec.subject, user('bob'));
  assert.deepEqual(rec.action, { name: 'read' });
  assert.deepEqual(rec.resource, doc('secret'));
  assert.deepEqual(rec.context, {});
  assert.equal(rec.decision, 'allow');
  assert.deepEqual(rec.reasons, ['read-doc']);
  assert.deepEqual(rec.errors, []);
  assert.match(rec.policy_version, /^sha256:[0-9a-f]{64}$/);
  assert.match(rec.entities_version, /^sha256:[0-9a-f]{64}$/);
  assert.ok(!Number.isNaN(Date.parse(rec.now)));
  assert.deepEqual({ ...rec.caller, name: undefined }, { role: 'evaluator', name: undefined });
  assert.match(rec.caller.name, /^sha256:[0-9a-f]{16}$/);
  assert.equal(schemaIssue('ledger-record.json', rec), null);
  assert.notEqual(schemaIssue('ledger-record.json', { ...rec, execution_id: 'E-1' }), null);
});

test('stored attributes win over properties; an entity not in the store is built from its properties', async () => {
  // alice's stored clearance (2) wins over the claimed 9.
  assert.equal((await evaluation(read(user('alice', { clearance: 9 }), doc('secret')))).body.decision, false);
  // carol is not stored: her properties are all there is.
  assert.equal((await evaluation(read(user('carol', { clearance: 9 }), doc('secret')))).body.decision, true);
  assert.equal((await evaluation(read(user('carol', { clearance: 1 }), doc('secret')))).body.decision, false);
  // A resource's properties: the stored level wins; an unstored doc takes its properties.
  assert.equal((await evaluation(read(user('alice'), doc('secret', { level: 0 })))).body.decision, false);
  assert.equal((await evaluation(read(user('alice'), doc('draft', { level: 2 })))).body.decision, true);
  // Without properties an unknown entity has no attributes: Cedar errors, writ denies (and records the error).
  const unknown = await evaluation(read(user('nobody'), doc('public')));
  assert.equal(unknown.body.decision, false);
  const rec = (await authzenRecords()).find((r) => r.decision_id === unknown.body.context.decision_id);
  assert.ok(rec.errors.length > 0);
  // The record keeps the properties as the request gave them.
  const carol = (await authzenRecords()).find((r) => r.subject.id === 'carol');
  assert.deepEqual(carol.subject, user('carol', { clearance: 9 }));
});

test('context is admitted like tool arguments: action.properties under context.action, decimals, BINDING_* with paths', async () => {
  const ping = (context: unknown, method = 'GET') => ({
    subject: user('alice'),
    action: { name: 'ping', properties: { method } },
    resource: doc('public'),
    context,
  });
  assert.equal((await evaluation(ping({ ip: '10.0.0.1', weight: 1.5 }))).body.decision, true);
  assert.equal((await evaluation(ping({ ip: '10.0.0.1', weight: 1.5 }, 'POST'))).body.decision, false);
  assert.equal((await evaluation(ping({ ip: '10.0.0.2', weight: 1.5 }))).body.decision, false);
  const raw = (ctx: string) =>
    `{"subject":{"type":"user","id":"alice"},"action":{"name":"ping","properties":{"method":"GET"}},"resource":{"type":"doc","id":"public"},"context":${ctx}}`;
  const lossy = await call(server, 'POST', '/access/v1/evaluation', { token: TOKENS.evaluator, rawBody: raw('{"ip":"10.0.0.1","weight":2.0}') });
  assert.equal(lossy.status, 400);
  assert.deepEqual(lossy.body.error.code, 'BINDING_LOSSY_NUMBER');
  assert.equal(lossy.body.error.path, '/context/weight');
  const dup = await call(server, 'POST', '/access/v1/evaluation', { token: TOKENS.evaluator, rawBody: raw('{"ip":"a","ip":"a"}') });
  assert.deepEqual([dup.status, dup.body.error.code, dup.body.error.path], [400, 'BINDING_DUPLICATE_KEY', '/context/ip']);
  const batch = `{"subject":{"type":"user","id":"alice"},"action":{"name":"ping"},"resource":{"type":"doc","id":"public"},"evaluations":[{},{"context":{"n":[1,1e300]}}]}`;
  const inBatch = await call(server, 'POST', '/access/v1/evaluations', { token: TOKENS.evaluator, rawBody: batch });
  assert.deepEqual([inBatch.status, inBatch.body.error.code, inBatch.body.error.path], [400, 'BINDING_LOSSY_NUMBER', '/evaluations/1/context/n/1']);
  const record = (await authzenRecords()).find((r) => r.action.name === 'ping' && r.decision === 'allow');
  assert.deepEqual(record.context, { ip: '10.0.0.1', weight: 1.5 });
  assert.deepEqual(record.action, { name: 'ping', properties: { method: 'GET' } });
});

test('approval_required answers false with its obligations in context', async () => {
  const write = (size: number) => ({ subject: user('alice'), action: { name: 'write' }, resource: doc('public'), context: { size } });
  const small = await evaluation(write(3));
  assert.equal(small.body.decision, true);
  const big = await evaluation(write(30));
  assert.equal(big.body.decision, false);
  assert.deepEqual(big.body.context.reasons, ['write-needs-approval']);
  assert.deepEqual(big.body.context.obligations, [{ policy: 'write-needs-approval', approver_group: 'group::"editors"' }]);
  const rec = (await authzenRecords()).find((r) => r.decision_id === big.body.context.decision_id);
  assert.equal(rec.decision, 'approval_required');
});

test('POST /access/v1/evaluations: execute_all, deny_on_first_deny, permit_on_first_permit; skipped items are not recorded', async () => {
  // alice (clearance 2): public allowed, secret denied.
  const items = (...ids: string[]) => ids.map((id) => ({ resource: doc(id) }));
  const batch = (ids: string[], semantic?: string) => ({
    subject: user('alice'),
    action: { name: 'read' },
    ...(semantic ? { options: { evaluations_semantic: semantic } } : {}),
    evaluations: items(...ids),
  });
  const decisions = (r: { body: any }) => r.body.evaluations.map((e: any) => e.decision);

  let count = (await authzenRecords()).length;
  const all = await evaluations(batch(['public', 'secret', 'public']));
  assert.equal(all.status, 200, all.text);
  assert.deepEqual(decisions(all), [true, false, true]);
  let records = await authzenRecords();
  assert.equal(records.length, count + 3);
  assert.deepEqual(
    records.slice(-3).map((r) => r.decision_id),
    all.body.evaluations.map((e: any) => e.context.decision_id),
  );
  assert.deepEqual(
    records.slice(-3).map((r) => r.resource.id),
    ['public', 'secret', 'public'],
  );
  // One group commit: the batch's records are consecutive.
  assert.deepEqual(
    records.slice(-3).map((r) => r.seq - records.at(-3).seq),
    [0, 1, 2],
  );
  count = records.length;

  const explicit = await evaluations(batch(['secret', 'public'], 'execute_all'));
  assert.deepEqual(decisions(explicit), [false, true]);
  count += 2;

  const denyFirst = await evaluations(batch(['public', 'secret', 'public', 'public'], 'deny_on_first_deny'));
  assert.deepEqual(decisions(denyFirst), [true, false]);
  records = await authzenRecords();
  assert.equal(records.length, count + 2, 'the two skipped items are neither evaluated nor recorded');
  assert.deepEqual(
    records.slice(-2).map((r) => r.resource.id),
    ['public', 'secret'],
  );
  count += 2;

  const permitFirst = await evaluations(batch(['secret', 'secret', 'public', 'secret'], 'permit_on_first_permit'));
  assert.deepEqual(decisions(permitFirst), [false, false, true]);
  assert.equal((await authzenRecords()).length, count + 3);
  count += 3;

  // No item decides: every item is evaluated.
  const none = await evaluations(batch(['public', 'public'], 'deny_on_first_deny'));
  assert.deepEqual(decisions(none), [true, true]);
  count += 2;

  // No `evaluations`, or an empty one, answers like /evaluation (AuthZEN 1.0 §7.1).
  const plain = await evaluations(read(user('bob'), doc('secret')));
  assert.equal(plain.body.decision, true);
  assert.deepEqual(Object.keys(plain.body).sort(), ['context', 'decision']);
  const empty = await evaluations({ ...read(user('bob'), doc('secret')), evaluations: [] });
  assert.equal(empty.body.decision, true);
  const nothing = await evaluations({ evaluations: [] });
  assert.deepEqual([nothing.status, nothing.body.error.path], [400, '/subject']);
  assert.equal((await authzenRecords()).length, count + 2);
});

test('a malformed item fails the whole batch with 400 and a pointer into it; nothing is recorded', async () => {
  const count = (await authzenRecords()).length;
  const bad = await evaluations({
    subject: user('alice'),
    action: { name: 'read' },
    evaluations: [{ resource: doc('public') }, { resource: { type: 'doc' } }],
  });
  assert.deepEqual([bad.status, bad.body.error.code, bad.body.error.path], [400, 'INVALID_REQUEST', '/evaluations/1/resource/id']);
  const missing = await evaluation({ subject: user('alice'), action: { name: 'read' } });
  assert.deepEqual([missing.status, missing.body.error.code, missing.body.error.path], [400, 'INVALID_REQUEST', '/resource']);
  const wrongType = await evaluation({ ...read(user('alice'), doc('public')), action: { name: 123 } });
  assert.deepEqual([wrongType.status, wrongType.body.error.path], [400, '/action/name']);
  const notJson = await call(server, 'POST', '/access/v1/evaluation', { token: TOKENS.evaluator, rawBody: '{"subject":' });
  assert.deepEqual([notJson.status, notJson.body.error.code], [400, 'INVALID_JSON']);
  const media = await call(server, 'POST', '/access/v1/evaluation', { token: TOKENS.evaluator, rawBody: '{}', headers: { 'content-type': 'text/plain' } });
  assert.deepEqual([media.status, media.body.error.code], [415, 'UNSUPPORTED_MEDIA_TYPE']);
  const big = await call(server, 'POST', '/access/v1/evaluation', { token: TOKENS.evaluator, rawBody: JSON.stringify({ pad: 'x'.repeat(1024 * 1024 + 1) }) });
  assert.deepEqual([big.status, big.body.error.code], [413, 'PAYLOAD_TOO_LARGE']);
  assert.equal((await authzenRecords()).length, count);
});

test('auth: evaluator asks about anyone; a pep only about its own actor; other roles 403; no token 401', async () => {
  const own = read(user('alice'), doc('public'));
  const other = read(user('bob'), doc('public'));
  assert.equal((await evaluation(other, TOKENS.evaluator)).status, 200);
  const pepOwn = await evaluation(own, TOKENS.pep);
  assert.equal(pepOwn.status, 200);
  assert.equal(pepOwn.body.decision, true);
  const rec = (await authzenRecords()).find((r) => r.decision_id === pepOwn.body.context.decision_id);
  assert.deepEqual({ ...rec.caller, name: undefined }, { role: 'pep', name: undefined, actor: { type: 'user', id: 'alice' } });

  const count = (await authzenRecords()).length;
  const pepOther = await evaluation(other, TOKENS.pep);
  assert.deepEqual([pepOther.status, pepOther.body.error.code, pepOther.body.error.path], [403, 'ACTOR_MISMATCH', '/subject']);
  // A type that differs is another subject too.
  assert.equal((await evaluation(read({ type: 'User', id: 'alice' }, doc('public')), TOKENS.pep)).status, 403);
  // A batch answers 403 as a whole when any item asks about another subject.
  const mixed = await evaluations(
    { action: { name: 'read' }, resource: doc('public'), evaluations: [{ subject: user('alice') }, { subject: user('bob') }] },
    TOKENS.pep,
  );
  assert.deepEqual([mixed.status, mixed.body.error.code, mixed.body.error.path], [403, 'ACTOR_MISMATCH', '/evaluations/1/subject']);
  const ownBatch = await evaluations(
    { subject: user('alice'), action: { name: 'read' }, evaluations: [{ resource: doc('public') }, { resource: doc('secret') }] },
    TOKENS.pep,
  );
  assert.equal(ownBatch.status, 200);
  assert.equal((await authzenRecords()).length, count + 2, 'refused requests are not evaluated');

  for (const path of ['/access/v1/evaluation', '/access/v1/evaluations']) {
    for (const token of [TOKENS.auditor, TOKENS.admin, TOKENS.approver]) {
      const r = await call(server, 'POST', path, { token, body: own });
      assert.deepEqual([r.status, r.body.error.code], [403, 'FORBIDDEN_ROLE'], `${path} ${token}`);
    }
    const anonymous = await call(server, 'POST', path, { body: own });
    assert.deepEqual([anonymous.status, anonymous.body.error.code], [401, 'UNAUTHENTICATED']);
    const wrong = await call(server, 'POST', path, { token: 'not-a-token', body: own });
    assert.equal(wrong.status, 401);
  }
});

test('fail closed: a store that cannot write answers 503 STORE_UNAVAILABLE, never a decision', async () => {
  const count = (await authzenRecords()).length;
  writeFileSync(join(dir, 'fault.json'), JSON.stringify({ label: 'authzen', mode: 'fail', remaining: 1 }));
  const failed = await evaluations({ subject: user('bob'), action: { name: 'read' }, evaluations: [{ resource: doc('public') }, { resource: doc('secret') }] });
  assert.deepEqual([failed.status, failed.body.error.code], [503, 'STORE_UNAVAILABLE']);
  assert.equal(failed.body.evaluations, undefined);
  assert.equal((await authzenRecords()).length, count, 'nothing of the failed batch was written');
  const next = await evaluation(read(user('bob'), doc('public')));
  assert.deepEqual([next.status, next.body.decision], [200, true]);
});

test('X-Request-ID is echoed, on answers and on errors', async () => {
  const ok = await fetch(`${server.url}/access/v1/evaluation`, {
    method: 'POST',
    body: JSON.stringify(read(user('bob'), doc('public'))),
    headers: { authorization: `Bearer ${TOKENS.evaluator}`, 'content-type': 'application/json', 'x-request-id': 'req-42' },
  });
  assert.equal(ok.status, 200);
  assert.equal(ok.headers.get('x-request-id'), 'req-42');
  const refused = await fetch(`${server.url}/access/v1/evaluations`, {
    method: 'POST',
    body: '{"evaluations": 1}',
    headers: { authorization: `Bearer ${TOKENS.evaluator}`, 'content-type': 'application/json', 'x-request-id': 'req-43' },
  });
  assert.equal(refused.status, 400);
  assert.equal(refused.headers.get('x-request-id'), 'req-43');
  // Any value HTTP carries (spaces, long ones), on every answer: 401 (with its scheme), 405, the discovery document.
  const long = `trace ${'x'.repeat(600)}`;
  const unauth = await fetch(`${server.url}/access/v1/evaluation`, {
    method: 'POST',
    body: '{}',
    headers: { 'content-type': 'application/json', 'x-request-id': 'req 44' },
  });
  assert.deepEqual([unauth.status, unauth.headers.get('x-request-id'), unauth.headers.get('www-authenticate')], [401, 'req 44', 'Bearer']);
  const wrongMethod = await fetch(`${server.url}/access/v1/evaluation`, { headers: { 'x-request-id': long } });
  assert.deepEqual([wrongMethod.status, wrongMethod.headers.get('x-request-id')], [405, long]);
  const discovery = await fetch(`${server.url}/.well-known/authzen-configuration`, { headers: { 'x-request-id': 'req-45' } });
  assert.deepEqual([discovery.status, discovery.headers.get('x-request-id')], [200, 'req-45']);
});

test('members writ does not know are ignored (AuthZEN 1.0 forward compatibility), and not recorded', async () => {
  const body = {
    subject: { type: 'user', id: 'bob', nickname: 'b' },
    action: { name: 'read', verb: 'GET' },
    resource: { type: 'doc', id: 'public', etag: 'x' },
    foo: 'bar',
    futureField: { nested: true },
  };
  const one = await evaluation(body);
  assert.deepEqual([one.status, one.body.decision], [200, true], JSON.stringify(one.body));
  const many = await evaluations({ ...body, evaluations: [{ resource: { type: 'doc', id: 'secret', x: 1 }, later: true }], options: { page: { limit: 1 } } });
  assert.deepEqual([many.status, many.body.evaluations?.map((e: { decision: boolean }) => e.decision)], [200, [true]], JSON.stringify(many.body));
  const record = await call(server, 'GET', `/v1/ledger/records?kind=decision&limit=1000`, { token: TOKENS.auditor });
  const mine = record.body.records.find((r: { decision_id?: string }) => r.decision_id === one.body.context.decision_id);
  assert.ok(mine, 'the evaluation is recorded');
  assert.equal(JSON.stringify(mine).includes('futureField') || JSON.stringify(mine).includes('nickname'), false, JSON.stringify(mine));
});

test('GET /.well-known/authzen-configuration: no auth, absolute URLs of this sidecar from the Host', async () => {
  const r = await call(server, 'GET', '/.well-known/authzen-configuration');
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, {
    policy_decision_point: server.url,
    access_evaluation_endpoint: `${server.url}/access/v1/evaluation`,
    access_evaluations_endpoint: `${server.url}/access/v1/evaluations`,
    search_subject_endpoint: `${server.url}/access/v1/search/subject`,
    search_resource_endpoint: `${server.url}/access/v1/search/resource`,
    search_action_endpoint: `${server.url}/access/v1/search/action`,
  });
  const { port } = new URL(server.url);
  /** The discovery document of a request that names `host` in its Host header. */
  const discoveryFor = (host: string) =>
    new Promise<any>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/.well-known/authzen-configuration', headers: { host } }, (res) => {
        let text = '';
        res.on('data', (d) => (text += d)).on('end', () => resolve(JSON.parse(text)));
      });
      req.on('error', reject).end();
    });
  const viaHost = await discoveryFor('pdp.example.internal:8443');
  assert.equal(viaHost.policy_decision_point, 'http://pdp.example.internal:8443');
  assert.equal(viaHost.access_evaluations_endpoint, 'http://pdp.example.internal:8443/access/v1/evaluations');
  // The Host exactly as sent: discovery compares the identifier with the URL the client used.
  const mixedCase = await discoveryFor('PDP.Example.com:80');
  assert.equal(mixedCase.policy_decision_point, 'http://PDP.Example.com:80');
});

test('GET /.well-known/authzen-configuration with public_url set: that URL, whatever Host a request sends', async () => {
  const pinned = await startTestServer({ config: { public_url: 'https://pdp.example.com/writ/' } });
  try {
    const { port } = new URL(pinned.url);
    const doc = await new Promise<any>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/.well-known/authzen-configuration', headers: { host: 'evil.example' } }, (res) => {
        let text = '';
        res.on('data', (d) => (text += d)).on('end', () => resolve(JSON.parse(text)));
      });
      req.on('error', reject).end();
    });
    assert.deepEqual(doc, {
      policy_decision_point: 'https://pdp.example.com/writ',
      access_evaluation_endpoint: 'https://pdp.example.com/writ/access/v1/evaluation',
      access_evaluations_endpoint: 'https://pdp.example.com/writ/access/v1/evaluations',
      search_subject_endpoint: 'https://pdp.example.com/writ/access/v1/search/subject',
      search_resource_endpoint: 'https://pdp.example.com/writ/access/v1/search/resource',
      search_action_endpoint: 'https://pdp.example.com/writ/access/v1/search/action',
    });
  } finally {
    assert.equal(await pinned.stop(), 0, pinned.output());
  }
});

test('/metrics counts AuthZEN evaluations by decision', async () => {
  const text = (await call(server, 'GET', '/metrics')).text;
  assert.match(text, /writ_authzen_evaluations_total\{decision="allow"\} [1-9]/);
  assert.match(text, /writ_authzen_evaluations_total\{decision="deny"\} [1-9]/);
});

test('the OpenAPI document lists the AuthZEN routes', async () => {
  const doc = (await call(server, 'GET', '/openapi.json')).body;
  assert.deepEqual(doc.paths['/access/v1/evaluation'].post['x-writ-roles'], ['evaluator', 'pep']);
  assert.deepEqual(doc.paths['/access/v1/evaluations'].post['x-writ-roles'], ['evaluator', 'pep']);
  assert.deepEqual(doc.paths['/.well-known/authzen-configuration'].get.security, []);
});

test('authzen decision records verify offline (writ verify on the export)', async () => {
  const exported = await call(server, 'GET', '/v1/ledger/export', { token: TOKENS.auditor });
  assert.equal(exported.status, 200);
  const lines = exported.text.trim().split('\n');
  assert.ok(lines.filter((l) => l.includes('"api":"authzen"')).length >= 20);
  const file = join(dir, 'export.jsonl');
  writeFileSync(file, exported.text);
  const keys = join(dir, 'keys.json');
  writeFileSync(keys, (await call(server, 'GET', '/v1/ledger/keys', { token: TOKENS.auditor })).text);
  const verified = spawnSync(process.execPath, [WRIT_BIN, 'verify', file, '--keys', keys], { encoding: 'utf8' });
  assert.equal(verified.status, 0, verified.stdout + verified.stderr);
  assert.deepEqual(JSON.parse(verified.stdout).records, lines.length);
  // A tampered authzen record is caught like any other.
  const i = lines.findIndex((l) => l.includes('"api":"authzen"') && l.includes('"decision":"deny"'));
  const tampered = [...lines];
  tampered[i] = tampered[i]!.replace('"decision":"deny"', '"decision":"allow"');
  writeFileSync(file, `${tampered.join('\n')}\n`);
  const refused = spawnSync(process.execPath, [WRIT_BIN, 'verify', file], { encoding: 'utf8' });
  assert.equal(refused.status, 1);
  assert.equal(JSON.parse(refused.stdout).code, 'HASH_MISMATCH');
});
