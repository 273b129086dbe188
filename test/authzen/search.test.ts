// AuthZEN 1.0 search (docs/protocol.md §15) over HTTP against the real server and the example in
// examples/authzen-search: subject, resource and action search, paging with opaque tokens, who may
// search what, one ledger record per page (valid against the record schema; `writ verify` and
// `writ policy replay` take it), and the discovery keys.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { call, startTestServer, WRIT_BIN, type TestServer } from '../helpers/server.js';
import { schemaIssue } from '../../src/schemas/validate.js';
import { REPO } from '../pep/helpers.js';

const EXAMPLE = join(REPO, 'examples', 'authzen-search');
const TOKENS = { evaluator: 'search-evaluator', bob: 'search-pep-bob', auditor: 'search-auditor' };
let s: TestServer;
before(async () => {
  s = await startTestServer({
    policyDir: EXAMPLE,
    config: {
      tokens: [
        { token: TOKENS.evaluator, role: 'evaluator' },
        { token: TOKENS.bob, role: 'pep', actor: { type: 'user', id: 'bob' } },
        { token: TOKENS.auditor, role: 'auditor' },
      ],
    },
  });
});
after(async () => {
  await s.stop();
});

const search = (kind: string, body: unknown, token = TOKENS.evaluator) => call(s, 'POST', `/access/v1/search/${kind}`, { token, body });
const readers = { subject: { type: 'user' }, action: { name: 'can_read' }, resource: { type: 'document', id: 'design-doc' } };

test('subject, resource and action search answer the example\'s cases, in a stable order, with page.next_token ""', async () => {
  const subjects = await search('subject', readers);
  assert.equal(subjects.status, 200, subjects.text);
  assert.deepEqual(subjects.body, {
    results: [
      { type: 'user', id: 'alice' },
      { type: 'user', id: 'bob' },
      { type: 'user', id: 'dave' },
    ],
    page: { next_token: '' },
  });
  // An id sent for the searched member is ignored.
  assert.deepEqual((await search('subject', { ...readers, subject: { type: 'user', id: 'zed' } })).body.results.length, 3);
  const resources = await search('resource', { subject: { type: 'user', id: 'bob' }, action: { name: 'can_read' }, resource: { type: 'document' } });
  assert.deepEqual(
    resources.body.results.map((r: any) => r.id),
    ['design-doc', 'handbook', 'salaries'],
  );
  const actions = await search('action', { subject: { type: 'user', id: 'alice' }, resource: { type: 'document', id: 'design-doc' } });
  assert.deepEqual(actions.body, {
    results: [{ name: 'can_delete' }, { name: 'can_edit' }, { name: 'can_read' }, { name: 'can_share' }],
    page: { next_token: '' },
  });
  // An unknown type or action: no results.
  assert.deepEqual((await search('subject', { ...readers, subject: { type: 'robot' } })).body, { results: [], page: { next_token: '' } });
  assert.deepEqual((await search('subject', { ...readers, action: { name: 'can_fly' } })).body.results, []);
});

test('paging: limit 1 walks every result once, in order, by opaque tokens; a foreign token is refused', async () => {
  const seen: string[] = [];
  let token = '';
  let pages = 0;
  do {
    const r = await search('subject', { ...readers, page: { limit: 1, ...(token ? { token } : {}) } });
    assert.equal(r.status, 200, r.text);
    seen.push(...r.body.results.map((x: any) => x.id));
    token = r.body.page.next_token;
    pages++;
  } while (token !== '' && pages < 10);
  assert.deepEqual(seen, ['alice', 'bob', 'dave']);
  const bad = await search('subject', { ...readers, page: { token: 'bm90LWEtdG9rZW4' } });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.path, '/page/token');
  const first = await search('subject', { ...readers, page: { limit: 1 } });
  const crossed = await search('resource', {
    subject: { type: 'user', id: 'bob' },
    action: { name: 'can_read' },
    resource: { type: 'document' },
    page: { token: first.body.page.next_token },
  });
  assert.equal(crossed.status, 400, 'a subject search token is no resource search token');
  assert.equal((await search('subject', { ...readers, page: { limit: 0 } })).status, 400);
});

test('who may search: a pep token searches resources and actions for its own actor only, never subjects', async () => {
  const own = await search('resource', { subject: { type: 'user', id: 'bob' }, action: { name: 'can_read' }, resource: { type: 'document' } }, TOKENS.bob);
  assert.equal(own.status, 200, own.text);
  const other = await search('action', { subject: { type: 'user', id: 'alice' }, resource: { type: 'document', id: 'design-doc' } }, TOKENS.bob);
  assert.equal(other.status, 403);
  assert.equal(other.body.error.code, 'ACTOR_MISMATCH');
  const subjects = await search('subject', readers, TOKENS.bob);
  assert.equal(subjects.status, 403);
  assert.equal(subjects.body.error.code, 'FORBIDDEN_ROLE');
  assert.equal((await search('subject', readers, TOKENS.auditor)).status, 403);
});

test('each page is one ledger record (schema-valid); writ verify and replay take them; discovery names the endpoints', async () => {
  const before = await call(s, 'GET', '/v1/ledger/records?kind=decision&limit=1000', { token: TOKENS.auditor });
  const page = await search('subject', { ...readers, page: { limit: 2 } });
  const after = await call(s, 'GET', '/v1/ledger/records?kind=decision&limit=1000', { token: TOKENS.auditor });
  const added = after.body.records.slice(before.body.records.length);
  assert.equal(added.length, 1);
  const rec = added[0];
  assert.deepEqual(rec.search, { kind: 'subject', query: { ...readers, page: { limit: 2 } } });
  assert.equal(rec.results, page.body.results.length);
  assert.equal(rec.api, 'authzen');
  assert.deepEqual(rec.caller.role, 'evaluator');
  assert.equal(schemaIssue('ledger-record.json', rec), null);

  // Asked before the CLI runs below: a test blocked in spawnSync for longer than the server's keep-alive
  // finds its pooled connection closed ("other side closed") on the next call.
  const discovery = await call(s, 'GET', '/.well-known/authzen-configuration');
  assert.match(discovery.body.search_subject_endpoint, /\/access\/v1\/search\/subject$/);
  assert.match(discovery.body.search_resource_endpoint, /\/access\/v1\/search\/resource$/);
  assert.match(discovery.body.search_action_endpoint, /\/access\/v1\/search\/action$/);
  assert.equal(schemaIssue('authzen-configuration.json', discovery.body), null);
  const dir = mkdtempSync(join(tmpdir(), 'writ-search-'));
  try {
    const exported = await call(s, 'GET', '/v1/ledger/export', { token: TOKENS.auditor });
    writeFileSync(join(dir, 'export.jsonl'), exported.text);
    const v = spawnSync(process.execPath, [WRIT_BIN, 'verify', join(dir, 'export.jsonl')], { encoding: 'utf8' });
    assert.equal(v.status, 0, v.stdout + v.stderr);
    const r = spawnSync(process.execPath, [WRIT_BIN, 'policy', 'replay', '--dir', EXAMPLE, join(dir, 'export.jsonl')], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stdout + r.stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
