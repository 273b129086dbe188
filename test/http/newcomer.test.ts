/**
 * What a new user tripped on (issue 12), over HTTP against the real server: refusals counted once,
 * undecodable path segments, 413 on any route answered and closed cleanly while the client is still
 * sending, human messages for a timestamp without offset and a bad phase, 405 with Allow.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, offboardingBody, startTestServer, type TestServer } from '../helpers/server.js';
import { rawExchange } from '../helpers/raw-http.js';

/** Sends a request with a declared body of `bodyBytes` through a raw socket, in paced chunks, and
 *  collects everything the server sends until it ends (or resets) the connection. */
function rawOversizedRequest(url: string, path: string, token: string, bodyBytes: number): Promise<{ answer: string; error?: string; sentBytes: number }> {
  const { hostname } = new URL(url);
  const head =
    `POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${token}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${bodyBytes}\r\n\r\n`;
  return rawExchange(url, head, { chunk: Buffer.alloc(64 * 1024, 0x20), total: bodyBytes });
}

describe('what a new user tripped on', () => {
  let s: TestServer;
  let policyDir: string;

  before(async () => {
    // A permit-all policy set, so an execution reaches a terminal state in two calls.
    policyDir = mkdtempSync(join(tmpdir(), 'writ-newcomer-policies-'));
    writeFileSync(join(policyDir, 'all.cedar'), '@id("permit-all")\npermit (principal, action, resource);\n');
    writeFileSync(join(policyDir, 'entities.json'), '[]');
    s = await startTestServer({ policyDir });
  });
  after(async () => {
    assert.equal(await s.stop(), 0);
    rmSync(policyDir, { recursive: true, force: true });
  });

  const refusals = async (code: string): Promise<number> => {
    const m = await call(s, 'GET', '/metrics');
    const line = new RegExp(`^writ_refusals_total\\{code="${code}"\\} (\\d+)$`, 'm').exec(m.text);
    return line ? Number(line[1]) : 0;
  };

  test('a ledgered refusal (EXECUTION_TERMINAL) counts once in writ_refusals_total', async () => {
    const body = offboardingBody({ execution_id: 'NEW-1:terminal', phase: 'execute' });
    const allowed = await call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, body });
    assert.equal(allowed.body.decision, 'allow', allowed.text);
    const done = await call(s, 'POST', '/v1/executions/NEW-1:terminal/outcome', { token: s.tokens.pep, body: { status: 'rejected' } });
    assert.equal(done.status, 200, done.text);
    const before = await refusals('EXECUTION_TERMINAL');
    const retry = await call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, body });
    assert.equal(retry.body.error.code, 'EXECUTION_TERMINAL');
    assert.equal(await refusals('EXECUTION_TERMINAL'), before + 1);
  });

  test('an undecodable percent-encoded path segment is 400 INVALID_REQUEST naming it, on every route', async () => {
    const put = await call(s, 'PUT', '/v1/entities/Employee/%E9', { token: s.tokens.admin, body: { attrs: {}, parents: [] } });
    assert.equal(put.status, 400, put.text);
    assert.equal(put.body.error.code, 'INVALID_REQUEST');
    assert.match(put.body.error.message, /%E9/);
    const get = await call(s, 'GET', '/v1/entities/Employee/%25E9', { token: s.tokens.admin });
    assert.equal(get.status, 404, `nothing was stored under the raw text %E9: ${get.text}`);
    for (const [method, path] of [
      ['GET', '/v1/executions/a%zz'],
      ['POST', '/v1/approvals/%C3%28/revoke'],
      ['GET', '/v1/entities/%/x'],
      ['GET', '/nope/%FF'],
    ]) {
      const r = await call(s, method!, path!, { token: s.tokens.auditor });
      assert.equal(r.status, 400, `${method} ${path}: ${r.text}`);
      assert.equal(r.body.error.code, 'INVALID_REQUEST');
      assert.ok(r.body.error.message.includes(path!.split('/').find((seg) => seg.includes('%'))!), r.body.error.message);
    }
    // Valid encodings still work.
    const ok = await call(s, 'PUT', '/v1/entities/Employee/%C3%A9', { token: s.tokens.admin, body: { attrs: {}, parents: [] } });
    assert.equal(ok.status, 200, ok.text);
  });

  test('2 MiB to any route is 413 PAYLOAD_TOO_LARGE, then a clean close while the client keeps sending', async () => {
    for (const path of ['/v1/approvals/some-approval/revoke', '/v1/decisions', '/v1/executions/X-1/outcome']) {
      const token = path.includes('approvals') ? s.tokens.approver : s.tokens.pep;
      const r = await rawOversizedRequest(s.url, path, token, 2 * 1024 * 1024);
      assert.equal(r.error, undefined, `${path}: the connection was reset (${r.error}) after ${r.sentBytes} bytes; answer so far: ${r.answer.slice(0, 200)}`);
      assert.match(r.answer, /^HTTP\/1\.1 413 /, path);
      assert.match(r.answer, /"code":"PAYLOAD_TOO_LARGE"/, path);
      assert.match(r.answer, /\r\nconnection: close\r\n/i, path);
    }
    const still = await call(s, 'GET', '/healthz');
    assert.equal(still.status, 200);
  });

  test('execute_after without an offset names the rule with an example', async () => {
    const r = await call(s, 'POST', '/v1/decisions', {
      token: s.tokens.pep,
      body: offboardingBody({ execution_id: 'NEW-2:x', envelope: { execute_after: '2026-08-24T17:00:00' } }),
    });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error.code, 'ENVELOPE_INVALID');
    assert.equal(r.body.error.path, '/envelope/execute_after');
    assert.match(r.body.error.message, /strict RFC 3339/);
    assert.match(r.body.error.message, /offset/);
    assert.match(r.body.error.message, /2026-08-24T17:00:00\+07:00/);
    assert.doesNotMatch(r.body.error.message, /characters/);
  });

  test('a bad phase lists propose and execute', async () => {
    const body = { ...offboardingBody({ execution_id: 'NEW-3:x' }), phase: 'run' };
    const r = await call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, body });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error.code, 'INVALID_REQUEST');
    assert.equal(r.body.error.path, '/phase');
    assert.match(r.body.error.message, /"propose", "execute"/);
  });

  test('a wrong method on a known route is 405 with Allow; an unknown route stays 404', async () => {
    const cases: Array<[string, string, string]> = [
      ['GET', '/v1/decisions', 'POST'],
      ['DELETE', '/v1/entities/Employee/7721', 'GET, HEAD, PUT'],
      ['PUT', '/v1/executions/X-1/outcome', 'POST'],
      ['POST', '/healthz', 'GET, HEAD'],
    ];
    for (const [method, path, allow] of cases) {
      const res = await fetch(s.url + path, { method, headers: { authorization: `Bearer ${s.tokens.admin}` } });
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.equal(res.headers.get('allow'), allow, `${method} ${path}`);
      const body = (await res.json()) as { error: { code: string } };
      assert.equal(body.error.code, 'METHOD_NOT_ALLOWED');
    }
    const missing = await call(s, 'GET', '/v1/nothing-here');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'NOT_FOUND');
  });
});
