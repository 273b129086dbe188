/**
 * What a black-box review against the contract found (2026-12-02), over HTTP against the real server,
 * with and without the HTTP front thread (`http_threads`): an approval stays dead once its subject's
 * record changed, even if the record is changed back (§5); entity upserts refuse what the store or Cedar
 * cannot hold (a path id past the uid limit, an integer beyond 2^53, `1.0`, a malformed `__entity`, a parent cycle); Cedar's reserved
 * identifiers are not type names (§2: 400, never a deny); a trailing slash is another path (404); a
 * request refused on its headers while its body is still coming does not cost the next request on the
 * connection; AuthZEN discovery without a Host header names the sidecar's own address; a revocation body
 * is JSON when sent; `limit=0` and a repeated query parameter are refused; an actor filter names a uid however it is spelled.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { offboardingSteps } from '../helpers/offboarding.js';
import { call, offboardingBody, startTestServer, type TestServer } from '../helpers/server.js';

for (const httpThreads of [1, 0]) {
  describe(`contract review findings (http_threads ${httpThreads})`, () => {
    let s: TestServer;
    let dir: string;
    const at = (t: string) => writeFileSync(join(dir, 'now'), t);

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'writ-review-'));
      at('2026-08-24T15:30:00+07:00');
      s = await startTestServer({ clockFile: join(dir, 'now'), config: { http_threads: httpThreads } });
    });
    after(async () => {
      assert.equal(await s.stop(), 0, s.output());
      rmSync(dir, { recursive: true, force: true });
    });

    test('§5: a subject record changed and changed back leaves the approval invalid for good', async () => {
      const t = s.tokens;
      const { propose, execute, decide, approve, putEmployee } = offboardingSteps(s);
      const p = await decide(propose);
      assert.equal(p.decision, 'approval_required');
      const approval = await approve(p);
      const approvals = async () =>
        (await call(s, 'GET', `/v1/executions/${encodeURIComponent(propose.execution_id)}`, { token: t.pep })).body.approvals.map(
          (a: { approval_id: string; valid: boolean; invalid_reason?: string }) => [a.approval_id, a.valid, a.invalid_reason],
        );
      assert.deepEqual(await approvals(), [[approval, true, undefined]]);
      // A PUT of the very same record is not a change.
      await putEmployee({});
      assert.deepEqual(await approvals(), [[approval, true, undefined]]);
      await putEmployee({ status: 'termination_delayed' });
      assert.deepEqual(await approvals(), [[approval, false, 'subject_changed']]);
      await putEmployee({}); // back as it was approved
      assert.deepEqual(await approvals(), [[approval, false, 'subject_changed']]);
      at('2026-08-24T17:01:00+07:00');
      const again = await decide(execute);
      assert.equal(again.decision, 'approval_required', JSON.stringify(again));
      assert.equal(again.approval_used, undefined);
      // A fresh approval, given after the changes, counts.
      at('2026-08-24T17:02:00+07:00');
      const fresh = await approve(again);
      at('2026-08-24T17:03:00+07:00');
      const allowed = await decide(execute);
      assert.equal(allowed.decision, 'allow', JSON.stringify(allowed));
      assert.equal(allowed.approval_used, fresh);
      at('2026-08-24T15:30:00+07:00');
    });

    test('§5/§8: an entity upsert the store or Cedar cannot hold is a 400, not a 503 or a silent rounding', async () => {
      const t = s.tokens;
      const put = (path: string, body: unknown) => call(s, 'PUT', path, { token: t.admin, body });
      const long = await put(`/v1/entities/Role/${'a'.repeat(3000)}`, { attrs: {}, parents: [] });
      assert.equal(long.status, 400, long.text);
      assert.equal(long.body.error.code, 'INVALID_REQUEST');
      assert.equal((await put(`/v1/entities/Role/${'a'.repeat(1024)}`, { attrs: {}, parents: [] })).status, 200);

      const big = await call(s, 'PUT', '/v1/entities/Acme::Emp/e1', { token: t.admin, rawBody: '{"attrs":{"n":9007199254740993,"ok":[1,2]},"parents":[]}' });
      assert.equal(big.status, 400, big.text);
      assert.deepEqual([big.body.error.code, big.body.error.path], ['BINDING_UNSAFE_INTEGER', '/attrs/n']);
      const exact = await call(s, 'PUT', '/v1/entities/Acme::Emp/e1', { token: t.admin, rawBody: '{"attrs":{"n":9007199254740991},"parents":[]}' });
      assert.equal(exact.status, 200, exact.text);
      assert.equal(exact.body.attrs.n, 9007199254740991);
      // An integral value written as a float would be stored as an integer: refused as in arguments (§3).
      const lossy = await call(s, 'PUT', '/v1/entities/Acme::Emp/e1', { token: t.admin, rawBody: '{"attrs":{"r":{"a":[1,1.0]}},"parents":[]}' });
      assert.equal(lossy.status, 400, lossy.text);
      assert.deepEqual([lossy.body.error.code, lossy.body.error.path], ['BINDING_LOSSY_NUMBER', '/attrs/r/a/1']);
      // What Cedar cannot hold (a non-integral number, a null) is refused with its place, not Cedar's internal message.
      for (const [raw, path, why] of [
        ['{"attrs":{"rate":1.5},"parents":[]}', '/attrs/rate', /Cedar has no floating-point numbers.*"__extn"/],
        ['{"attrs":{"r":{"a":[1,1e-7]}},"parents":[]}', '/attrs/r/a/1', /not an integer/],
        ['{"attrs":{"gone":null},"parents":[]}', '/attrs/gone', /Cedar has no null/],
      ] as const) {
        const refused = await call(s, 'PUT', '/v1/entities/Acme::Emp/e1', { token: t.admin, rawBody: raw });
        assert.equal(refused.status, 400, refused.text);
        assert.deepEqual([refused.body.error.code, refused.body.error.path], ['INVALID_REQUEST', path], raw);
        assert.match(refused.body.error.message, why);
      }
      // A malformed entity reference would be read by Cedar as a plain record (every comparison false): refused.
      for (const [attrs, path] of [
        [{ manager: { __entity: { type: 'User' } } }, '/attrs/manager/__entity'],
        [{ manager: { __entity: { type: 'User', id: 'u1' }, note: 'x' } }, '/attrs/manager'],
        [{ team: [{ __entity: { __entity: { type: 'User', id: 'u1' } } }] }, '/attrs/team/0/__entity'],
        [{ limit: { __extn: 'decimal' } }, '/attrs/limit/__extn'],
      ] as const) {
        const bad = await put('/v1/entities/Acme::Emp/e2', { attrs, parents: [] });
        assert.equal(bad.status, 400, bad.text);
        assert.deepEqual([bad.body.error.code, bad.body.error.path], ['INVALID_REQUEST', path], JSON.stringify(attrs));
      }
      const good = await put('/v1/entities/Acme::Emp/e2', {
        attrs: { manager: { __entity: { type: 'User', id: 'u1' } }, limit: { __extn: { fn: 'decimal', arg: '1.5' } } },
        parents: [],
      });
      assert.equal(good.status, 200, good.text);

      assert.equal((await put('/v1/entities/Role/cyc-a', { attrs: {}, parents: [{ type: 'Role', id: 'cyc-b' }] })).status, 200);
      assert.equal((await put('/v1/entities/Role/cyc-c', { attrs: {}, parents: [{ type: 'Role', id: 'cyc-a' }] })).status, 200);
      const cycle = await put('/v1/entities/Role/cyc-b', { attrs: {}, parents: [{ type: 'Role', id: 'cyc-c' }] });
      assert.equal(cycle.status, 400, cycle.text);
      assert.equal(cycle.body.error.code, 'INVALID_REQUEST');
      assert.match(cycle.body.error.message, /cycle/);
      const self = await put('/v1/entities/Role/cyc-d', { attrs: {}, parents: [{ type: 'Role', id: 'cyc-d' }] });
      assert.equal(self.status, 400, self.text);
      // Nothing of the refused upsert landed: decisions still work.
      const d = await call(s, 'POST', '/v1/decisions', { token: t.pep, body: offboardingBody({ execution_id: 'REV-cycle' }) });
      assert.equal(d.status, 200, d.text);
      assert.equal(d.body.errors.length, 0, d.text);
    });

    test('§2: a Cedar reserved identifier is not a type name — 400, never a deny', async () => {
      const t = s.tokens;
      for (const type of ['if', 'true', 'Acme::in', '__cedar::X', 'has']) {
        const d = await call(s, 'POST', '/v1/decisions', {
          token: t.pep,
          body: offboardingBody({ execution_id: `REV-type-${type.replace(/:/g, '.')}`, envelope: { subject: { type, id: '1' } } }),
        });
        assert.equal(d.status, 400, `${type}: ${d.text}`);
        assert.deepEqual([d.body.error.code, d.body.error.path], ['ENVELOPE_INVALID', '/envelope/subject/type']);
      }
      const fine = await call(s, 'POST', '/v1/decisions', {
        token: t.pep,
        body: offboardingBody({ execution_id: 'REV-type-ok', envelope: { subject: { type: 'Acme::ifx', id: '1' } } }),
      });
      assert.equal(fine.status, 200, fine.text);
      const entity = await call(s, 'PUT', '/v1/entities/like/1', { token: t.admin, body: { attrs: {}, parents: [] } });
      assert.equal(entity.status, 400, entity.text);
    });

    test('§8: a trailing slash is another path — 404 NOT_FOUND, not 405', async () => {
      const t = s.tokens;
      for (const [method, path] of [
        ['POST', '/v1/decisions/'],
        ['GET', '/v1/executions/x/'],
        ['GET', '/healthz/'],
        ['POST', '/access/v1/evaluation/'],
      ] as const) {
        const r = await call(s, method, path, { token: t.pep, ...(method === 'POST' ? { body: {} } : {}) });
        assert.equal(r.status, 404, `${method} ${path}: ${r.text}`);
        assert.equal(r.body.error.code, 'NOT_FOUND');
      }
      // Still 405 with Allow on the path itself.
      const wrong = await call(s, 'GET', '/v1/decisions', { token: t.pep });
      assert.equal(wrong.status, 405);
      // A route that answers GET with nothing at this path (a console file that does not exist) is 404, not 405.
      for (const method of ['GET', 'HEAD'] as const) {
        const missing = await call(s, method, '/console/nope.js');
        assert.equal(missing.status, 404, `${method} /console/nope.js: ${missing.text}`);
      }
    });

    test('§4/§9: many decisions at once on one execution are each decided and recorded (no false EXECUTION_IN_FLIGHT)', async () => {
      const t = s.tokens;
      const id = `REV-same-${httpThreads}`;
      const first = await call(s, 'POST', '/v1/decisions', { token: t.pep, body: offboardingBody({ execution_id: id }) });
      assert.equal(first.status, 200, first.text);
      // Eight lanes for three seconds, every one on the same execution (a false 409 came after 20 retries).
      const until = Date.now() + 3_000;
      const refused: string[] = [];
      let decided = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (Date.now() < until) {
            const a = await call(s, 'POST', '/v1/decisions', { token: t.pep, body: offboardingBody({ execution_id: id }) });
            if (a.status === 200) decided++;
            else refused.push(a.text);
          }
        }),
      );
      assert.deepEqual(refused.slice(0, 3), [], `${refused.length} of ${decided + refused.length} refused`);
      const exec = await call(s, 'GET', `/v1/executions/${id}`, { token: t.pep });
      assert.equal(exec.body.records.length, 1 + decided);
      assert.equal(exec.body.state, 'proposed');
    });

    test('§4: an execution lists every record naming it, a refusal from before it was reserved included', async () => {
      const t = s.tokens;
      const id = `REV-early-refusal-${httpThreads}`;
      const refused = await call(s, 'POST', '/v1/decisions', {
        token: t.pep,
        body: offboardingBody({ execution_id: id, envelope: { supersedes: 'REV-never-reserved' } }),
      });
      assert.equal(refused.status, 404, refused.text);
      const reserved = await call(s, 'POST', '/v1/decisions', { token: t.pep, body: offboardingBody({ execution_id: id }) });
      assert.equal(reserved.status, 200, reserved.text);
      const exec = await call(s, 'GET', `/v1/executions/${id}`, { token: t.pep });
      const ledger = await call(s, 'GET', `/v1/ledger/records?execution_id=${id}`, { token: t.auditor });
      assert.deepEqual(
        exec.body.records,
        ledger.body.records.map((r: { seq: number }) => r.seq),
      );
      assert.equal(exec.body.records.length, 2);
      assert.equal(ledger.body.records[0].kind, 'refusal');
    });

    test('§2/§4: the execution ids . and .. (dot segments no URL can carry) are refused before they are reserved', async () => {
      const t = s.tokens;
      for (const id of ['.', '..']) {
        const r = await call(s, 'POST', '/v1/decisions', { token: t.pep, body: offboardingBody({ execution_id: id }) });
        assert.deepEqual([r.status, r.body.error?.code, r.body.error?.path], [400, 'INVALID_REQUEST', '/execution_id'], r.text);
        const approval = await call(s, 'POST', '/v1/approvals', {
          token: t.approver,
          body: {
            actor: { type: 'Agent', id: 'offboarding-agent-prod' },
            execution_id: id,
            binding: `writ-bind/1:sha256:${'0'.repeat(64)}`,
            envelope_digest: `sha256:${'0'.repeat(64)}`,
            expires_at: new Date(Date.now() + 60_000).toISOString(),
          },
        });
        assert.equal(approval.status, 400, approval.text);
      }
      const dots = await call(s, 'POST', '/v1/decisions', { token: t.pep, body: offboardingBody({ execution_id: `...${httpThreads}` }) });
      assert.equal(dots.status, 200, dots.text);
      const read = await call(s, 'GET', `/v1/executions/...${httpThreads}`, { token: t.pep });
      assert.equal(read.status, 200, read.text);
    });

    test('§8: a JSON body declared in a charset other than UTF-8 is 415; UTF-8 in any spelling is fine', async () => {
      const t = s.tokens;
      for (const [type, status] of [
        ['application/json; charset=utf-16', 415],
        ['application/json;charset=latin1', 415],
        ['application/json; charset="UTF-8"', 200],
        ['application/json; charset=utf8', 200],
      ] as const) {
        const body = JSON.stringify(offboardingBody({ execution_id: `REV-charset-${status}-${type.length}` }));
        const r = await call(s, 'POST', '/v1/decisions', { token: t.pep, rawBody: body, headers: { 'content-type': type } });
        assert.equal(r.status, status, `${type}: ${r.text}`);
        if (status === 415) assert.equal(r.body.error.code, 'UNSUPPORTED_MEDIA_TYPE');
      }
    });

    test('§8: a request refused on its headers while its body is still coming does not cost the next request', async () => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const { hostname, port } = new URL(s.url);
      const send = (token: string | undefined, body: string) =>
        new Promise<{ status: number; text: string }>((resolve, reject) => {
          const req = http.request(
            {
              host: hostname,
              port,
              method: 'POST',
              path: '/v1/decisions',
              agent,
              headers: {
                'content-type': 'application/json',
                'content-length': Buffer.byteLength(body),
                ...(token ? { authorization: `Bearer ${token}` } : {}),
              },
            },
            (res) => {
              let text = '';
              res.setEncoding('utf8');
              res.on('data', (c: string) => (text += c));
              res.on('end', () => resolve({ status: res.statusCode!, text }));
            },
          );
          req.on('error', reject);
          req.end(body);
        });
      try {
        for (let i = 0; i < 3; i++) {
          // A string body: encoded as it is written, so the answer comes while it is still being sent.
          const refused = await send(i === 1 ? s.tokens.auditor : undefined, ' '.repeat(2 * 1024 * 1024));
          assert.equal(refused.status, i === 1 ? 403 : 401, refused.text);
          const next = await send(s.tokens.pep, JSON.stringify(offboardingBody({ execution_id: `REV-after-refusal-${i}` })));
          assert.equal(next.status, 200, next.text);
        }
      } finally {
        agent.destroy();
      }
    });

    test('odd request lines and repeated headers get the same answer with or without the front', async () => {
      const { hostname, port } = new URL(s.url);
      /** Writes raw bytes and reads one answer (status and JSON body), or the socket's end. */
      const raw = (bytes: string, waitMs = 5_000) =>
        new Promise<{ status: number; body: any; ms: number }>((resolve, reject) => {
          const started = Date.now();
          const socket = net.connect(Number(port), hostname, () => socket.write(bytes));
          let text = '';
          const timer = setTimeout(() => {
            socket.destroy();
            reject(new Error(`no answer within ${waitMs} ms to ${bytes.slice(0, 60)}`));
          }, waitMs);
          socket.setEncoding('latin1');
          socket.on('data', (c: string) => {
            text += c;
            const end = text.indexOf('\r\n\r\n');
            if (end < 0) return;
            const length = Number(/content-length: *(\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
            if (text.length < end + 4 + length) return;
            clearTimeout(timer);
            socket.destroy();
            const bodyText = text.slice(end + 4, end + 4 + length);
            resolve({ status: Number(text.slice(9, 12)), body: bodyText ? JSON.parse(bodyText) : undefined, ms: Date.now() - started });
          });
          socket.on('error', reject);
        });
      const body = JSON.stringify(offboardingBody({ execution_id: `REV-raw-${httpThreads}` }));
      const post = (path: string, headers: string[], payload = body) =>
        `POST ${path} HTTP/1.1\r\n${['Host: 127.0.0.1', ...headers, `Content-Length: ${Buffer.byteLength(payload)}`].join('\r\n')}\r\n\r\n${payload}`;
      const pep = `Authorization: Bearer ${s.tokens.pep}`;
      const json = 'Content-Type: application/json';

      const twiceAuth = await raw(post('/v1/decisions', [pep, json, pep]));
      assert.deepEqual([twiceAuth.status, twiceAuth.body?.error?.code], [401, 'UNAUTHENTICATED']);
      const twiceType = await raw(post('/v1/decisions', [pep, json, json]));
      assert.deepEqual([twiceType.status, twiceType.body?.error?.code], [415, 'UNSUPPORTED_MEDIA_TYPE']);
      const badHost = await raw(post('/v1/decisions', [pep, json]).replace('Host: 127.0.0.1', 'Host: a b'));
      assert.deepEqual([badHost.status, badHost.body?.error?.code], [400, 'INVALID_REQUEST']);
      // Two Host fields (RFC 9112 §3.2) are refused, not judged by the first and read joined.
      const twiceHost = await raw('GET /.well-known/authzen-configuration HTTP/1.1\r\nHost: a\r\nHost: evil.example/x?\r\n\r\n');
      assert.deepEqual([twiceHost.status, twiceHost.body?.error?.code], [400, 'INVALID_REQUEST']);
      const noHost = await raw('GET /healthz HTTP/1.1\r\n\r\n');
      assert.deepEqual([noHost.status, noHost.body?.error?.code], [400, 'INVALID_REQUEST']);
      assert.match(noHost.body.error.message, /must send a Host header/);
      const backslash = await raw(post('/v1/decisions\\', [pep, json]));
      assert.deepEqual([backslash.status, backslash.body?.error?.code], [400, 'INVALID_REQUEST']);
      const dots = await raw(post('/v1/x/../decisions', [pep, json]));
      assert.equal(dots.status, 200, JSON.stringify(dots.body));
      assert.equal(dots.body.execution_id, `REV-raw-${httpThreads}`);
      // A refusal on the headers does not wait for a body that never comes.
      const short = await raw(post('/v1/executions/x/outcome', ['Authorization: Bearer nobody', json], '{"status":"committed"}').slice(0, -1), 3_000);
      assert.deepEqual([short.status, short.body?.error?.code], [401, 'UNAUTHENTICATED']);
      // What Node's HTTP parser refuses, and the asterisk form, are answered in the §8 shape too.
      for (const [line, status] of [
        ['FOO / HTTP/1.1\r\nHost: x\r\n\r\n', 400],
        ['GET /a\x01b HTTP/1.1\r\nHost: x\r\n\r\n', 400],
        ['OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n', 400],
        ['POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab', 400],
        [`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
      ] as const) {
        const refused = await raw(line);
        assert.deepEqual([refused.status, refused.body?.error?.code], [status, 'INVALID_REQUEST'], line.slice(0, 40));
      }
    });

    test('§10: discovery without a Host header names the address the sidecar listens on', async () => {
      const { hostname, port } = new URL(s.url);
      const answer = await new Promise<string>((resolve, reject) => {
        // HTTP/1.0 without Host; the server closes the connection after its answer.
        const socket = net.connect(Number(port), hostname, () => socket.write('GET /.well-known/authzen-configuration HTTP/1.0\r\n\r\n'));
        let text = '';
        socket.setEncoding('utf8');
        socket.on('data', (c: string) => (text += c));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
      const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
      assert.equal(body.policy_decision_point, s.url);
      assert.equal(body.access_evaluation_endpoint, `${s.url}/access/v1/evaluation`);
      // With a Host header, its name is used.
      const named = await call(s, 'GET', '/.well-known/authzen-configuration');
      assert.equal(named.body.policy_decision_point, s.url);
    });

    test('§5/§6: a revocation body, when sent, is JSON; limit=0 is refused; actor filters are uids', async () => {
      const t = s.tokens;
      const bad = await call(s, 'POST', '/v1/approvals/apr_none/revoke', { token: t.approver, rawBody: '{' });
      assert.equal(bad.status, 400, bad.text);
      assert.equal(bad.body.error.code, 'INVALID_JSON');
      const none = await call(s, 'POST', '/v1/approvals/apr_none/revoke', { token: t.approver });
      assert.equal(none.status, 404, none.text);
      const zero = await call(s, 'GET', '/v1/ledger/records?limit=0', { token: t.auditor });
      assert.equal(zero.status, 400, zero.text);
      assert.equal(zero.body.error.code, 'INVALID_REQUEST');
      const capped = await call(s, 'GET', '/v1/ledger/records?limit=5000', { token: t.auditor });
      assert.equal(capped.status, 200, capped.text);
      // A record seq that is not a whole number is a malformed path segment (400); one past the end, 404.
      for (const bad of ['abc', '-1', '1e2', '1.0', '99999999999999999999']) {
        const r = await call(s, 'GET', `/v1/ledger/records/${bad}`, { token: t.auditor });
        assert.deepEqual([r.status, r.body.error?.code], [400, 'INVALID_REQUEST'], bad);
      }
      const past = await call(s, 'GET', '/v1/ledger/records/9007199254740991', { token: t.auditor });
      assert.deepEqual([past.status, past.body.error?.code], [404, 'NOT_FOUND']);
      assert.equal((await call(s, 'GET', '/v1/ledger/records/0', { token: t.auditor })).status, 200);
      // A parameter given twice is refused, not read as its first value (a proxy may read the last).
      const agent = encodeURIComponent('Agent::"offboarding-agent-prod"');
      const other = encodeURIComponent('Agent::"someone-else"');
      for (const [method, path, token] of [
        ['GET', `/v1/ledger/records?limit=1&limit=1000`, t.auditor],
        ['GET', `/v1/executions/x?actor=${other}&actor=${agent}`, t.auditor],
        ['POST', `/v1/executions/x/reconcile?actor=${agent}&actor=${other}`, t.reconciler],
      ] as const) {
        const twice = await call(s, method, path, { token, ...(method === 'POST' ? { body: { resolution: 'absent', evidence_ref: 'x' } } : {}) });
        assert.equal(twice.status, 400, `${path}: ${twice.text}`);
        assert.equal(twice.body.error.code, 'INVALID_REQUEST');
        assert.match(twice.body.error.message, /is given more than once/);
      }
      // An actor filter names a uid, however its id is spelled (a JSON escape is the same character).
      const plain = await call(s, 'GET', `/v1/ledger/records?actor=${encodeURIComponent('Agent::"offboarding-agent-prod"')}`, { token: t.auditor });
      const escaped = await call(s, 'GET', `/v1/ledger/records?actor=${encodeURIComponent('Agent::"offboarding\\u002dagent-prod"')}`, { token: t.auditor });
      assert.ok(plain.body.records.length > 0, plain.text);
      assert.deepEqual(escaped.body, plain.body);
      // A kind that no record can have is a mistake, not an empty ledger.
      const bogus = await call(s, 'GET', '/v1/ledger/records?kind=decisions', { token: t.auditor });
      assert.equal(bogus.status, 400, bogus.text);
      assert.match(bogus.body.error.message, /kind must be one of decision, refusal/);
      const actor = encodeURIComponent('Agent::"offboarding-agent-prod"');
      const everything = await call(s, 'GET', `/v1/ledger/records?limit=1000&actor=${actor}`, { token: t.auditor });
      const combined = await call(s, 'GET', `/v1/ledger/records?limit=1000&kind=decision&actor=${actor}`, { token: t.auditor });
      const upTo = everything.body.next ?? Infinity; // the first page of the actor's records, whatever follows it
      const decisions = everything.body.records.filter((r: { kind: string }) => r.kind === 'decision');
      assert.ok(decisions.length > 0);
      assert.deepEqual(
        combined.body.records.filter((r: { seq: number }) => r.seq < upTo),
        decisions,
      );
    });
  });
}
