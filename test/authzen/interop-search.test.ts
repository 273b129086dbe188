/**
 * The worked example examples/authzen-interop-search (the AuthZEN interop "Search" scenario): its
 * published expected results pass as `writ policy test` search cases, and a served sidecar answers the
 * interop's search requests over HTTP — pruned by partial evaluation, with the same answers — and
 * refuses the published action-search requests' numeric record ids (see the example's README).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, REPO, startTestServer, WRIT_BIN, type TestServer } from '../helpers/server.js';

const EXAMPLE = join(REPO, 'examples', 'authzen-interop-search');
const TOKEN = 'interop-search-pep';

let server: TestServer;
before(async () => {
  server = await startTestServer({ policyDir: EXAMPLE, config: { tokens: [{ token: TOKEN, role: 'evaluator' }] } });
});
after(async () => {
  await server?.stop();
});

test("over HTTP: the interop's subject, resource and action searches, and a numeric record id refused", async () => {
  const search = (kind: string, body: unknown) => call(server, 'POST', `/access/v1/search/${kind}`, { token: TOKEN, body });
  const editors = await search('subject', { subject: { type: 'user' }, action: { name: 'edit' }, resource: { type: 'record', id: '115' } });
  assert.equal(editors.status, 200, editors.text);
  assert.deepEqual(editors.body, {
    results: [
      { type: 'user', id: 'carol' },
      { type: 'user', id: 'dan' },
    ],
    page: { next_token: '' },
  });
  const erin = await search('resource', { subject: { type: 'user', id: 'erin' }, action: { name: 'view' }, resource: { type: 'record' } });
  assert.deepEqual(
    erin.body.results.map((r: { id: string }) => r.id),
    ['105', '111', '115', '117'],
  );
  // Paged: limit 2 walks alice's five editable records in order.
  const seen: string[] = [];
  let token = '';
  do {
    const page = await search('resource', {
      subject: { type: 'user', id: 'alice' },
      action: { name: 'edit' },
      resource: { type: 'record' },
      page: { limit: 2, ...(token ? { token } : {}) },
    });
    assert.equal(page.status, 200, page.text);
    seen.push(...page.body.results.map((r: { id: string }) => r.id));
    token = page.body.page.next_token;
  } while (token !== '' && seen.length < 50);
  assert.deepEqual(seen, ['101', '107', '110', '113', '119']);
  const actions = await search('action', { subject: { type: 'user', id: 'dan' }, resource: { type: 'record', id: '115' } });
  assert.deepEqual(actions.body, { results: [{ name: 'edit' }, { name: 'view' }], page: { next_token: '' } });
  // The published action-search requests send the record id as a number: refused, never guessed.
  const numeric = await search('action', { subject: { type: 'user', id: 'dan' }, resource: { type: 'record', id: 115 } });
  assert.equal(numeric.status, 400, numeric.text);
  assert.equal(numeric.body.error.code, 'INVALID_REQUEST');
  assert.equal(numeric.body.error.path, '/resource/id');
});

// After the HTTP test: a test blocked in spawnSync past the server's keep-alive finds a pooled connection closed.
test('writ policy test passes the published expected results (60 subject, 18 resource, 74 action searches)', () => {
  const cases = JSON.parse(readFileSync(join(EXAMPLE, 'tests', 'search.json'), 'utf8')) as Array<{ search: { kind: string } }>;
  const kinds: Record<string, number> = {};
  for (const c of cases) kinds[c.search.kind] = (kinds[c.search.kind] ?? 0) + 1;
  assert.deepEqual(kinds, { subject: 60, resource: 18, action: 74 });
  const run = spawnSync(process.execPath, [WRIT_BIN, 'policy', 'test', '--dir', EXAMPLE, '--coverage'], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stdout + run.stderr);
  assert.match(run.stdout, /^152 passed, 0 failed$/m);
});
