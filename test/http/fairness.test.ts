/**
 * Fair under hostile load (issue 49, docs/protocol.md §8), over HTTP against the real server, through
 * both doors: an HTTP front (http_threads 1) and the sidecar's own app (http_threads 0). Counts and
 * codes only, never timings (bench/fairness.mjs measures the latencies).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { call, offboardingBody, startTestServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/wait.js';

const LIMITS = { object_members: 50, array_elements: 50, total_members: 200, string_length: 1000 };
const AGENT = { type: 'Agent', id: 'offboarding-agent-prod' };

function refusalsOf(metrics: string, code: string): number {
  const line = metrics.split('\n').find((l) => l.startsWith(`writ_refusals_total{code="${code}"}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

/** Arguments `members` wide, each member within the limits. */
function wideArguments(members: number): Record<string, number> {
  const args: Record<string, number> = {};
  for (let i = 0; i < members; i++) args[`m${i}`] = i;
  return args;
}

for (const httpThreads of [1, 0]) {
  describe(`fairness through ${httpThreads ? 'an HTTP front' : "the sidecar's own app"}`, () => {
    let s: TestServer;
    before(async () => {
      s = await startTestServer({ config: { http_threads: httpThreads, admission_limits: LIMITS } });
    });
    after(async () => {
      await s?.stop();
    });

    test('admission limits refuse arguments, envelope and AuthZEN bodies with LIMIT_EXCEEDED and the pointer of the first excess', async () => {
      const before = refusalsOf((await call(s, 'GET', '/metrics')).text, 'LIMIT_EXCEEDED');
      const wide = await call(s, 'POST', '/v1/decisions', {
        token: s.tokens.pep,
        body: offboardingBody({ execution_id: 'wide-1', action: { arguments: wideArguments(51) } }),
      });
      assert.equal(wide.status, 400, wide.text);
      assert.deepEqual(wide.body.error.code, 'LIMIT_EXCEEDED');
      assert.equal(wide.body.error.path, '/action/arguments/m50');
      const long = await call(s, 'POST', '/v1/decisions', {
        token: s.tokens.pep,
        body: offboardingBody({ execution_id: 'wide-2', action: { arguments: { note: 'x'.repeat(1001) } } }),
      });
      assert.deepEqual([long.status, long.body.error?.code, long.body.error?.path], [400, 'LIMIT_EXCEEDED', '/action/arguments/note']);
      const refs = Array.from({ length: 51 }, (_, i) => `ref-${i}`);
      const envelope = await call(s, 'POST', '/v1/decisions', {
        token: s.tokens.pep,
        body: offboardingBody({ execution_id: 'wide-3', envelope: { evidence_refs: refs } }),
      });
      assert.deepEqual([envelope.status, envelope.body.error?.code, envelope.body.error?.path], [400, 'LIMIT_EXCEEDED', '/envelope/evidence_refs/50']);
      // AuthZEN: properties and context (a pep token may ask about its own actor).
      const ask = (extra: Record<string, unknown>) => ({
        subject: { ...AGENT, properties: {} },
        action: { name: 'idp/disable_sign_in' },
        resource: { type: 'Employee', id: '7721' },
        ...extra,
      });
      const props = await call(s, 'POST', '/access/v1/evaluation', {
        token: s.tokens.pep,
        body: ask({ subject: { ...AGENT, properties: wideArguments(51) } }),
      });
      assert.deepEqual([props.status, props.body.error?.code, props.body.error?.path], [400, 'LIMIT_EXCEEDED', '/subject/properties/m50']);
      const context = await call(s, 'POST', '/access/v1/evaluations', {
        token: s.tokens.pep,
        body: { evaluations: [ask({}), ask({ context: { list: Array.from({ length: 51 }, (_, i) => i) } })] },
      });
      assert.deepEqual([context.status, context.body.error?.code, context.body.error?.path], [400, 'LIMIT_EXCEEDED', '/evaluations/1/context/list/50']);
      // Nothing of them reached the ledger, and each is counted as a refusal.
      const records = await call(s, 'GET', '/v1/ledger/records?limit=1000', { token: s.tokens.auditor });
      assert.equal(records.body.records.filter((r: { execution_id?: string }) => String(r.execution_id ?? '').startsWith('wide-')).length, 0);
      const after = refusalsOf((await call(s, 'GET', '/metrics')).text, 'LIMIT_EXCEEDED');
      assert.equal(after - before, 5);
    });

    test('writ_refusals_total counts NOT_FOUND and METHOD_NOT_ALLOWED like every other code', async () => {
      const metrics = async () => (await call(s, 'GET', '/metrics')).text;
      const before = await metrics();
      assert.equal((await call(s, 'GET', '/no/such/route')).status, 404);
      assert.equal((await call(s, 'DELETE', '/v1/decisions', { token: s.tokens.pep })).status, 405);
      const after = await metrics();
      assert.equal(refusalsOf(after, 'NOT_FOUND') - refusalsOf(before, 'NOT_FOUND'), 1);
      assert.equal(refusalsOf(after, 'METHOD_NOT_ALLOWED') - refusalsOf(before, 'METHOD_NOT_ALLOWED'), 1);
    });

    test('every answer carrying ledger or execution data has Cache-Control: no-store and nosniff, errors included', async () => {
      const t = s.tokens;
      const asks: Array<[string, string, string, unknown?]> = [
        ['POST', '/v1/decisions', t.pep, offboardingBody({ execution_id: 'cache-1' })],
        ['GET', '/v1/executions/cache-1', t.pep],
        ['GET', '/v1/executions/no-such', t.pep],
        ['GET', '/v1/ledger/records?limit=2', t.auditor],
        ['GET', '/v1/ledger/records/0', t.auditor],
        ['GET', '/v1/ledger/export?from=0&to=2', t.auditor],
        ['GET', '/v1/ledger/records', t.pep],
        ['POST', '/access/v1/evaluation', t.pep, { subject: AGENT, action: { name: 'idp/disable_sign_in' }, resource: { type: 'Employee', id: '7721' } }],
      ];
      for (const [method, path, token, body] of asks) {
        const res = await fetch(`${s.url}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
          ...(body ? { body: JSON.stringify(body) } : {}),
        });
        await res.arrayBuffer();
        assert.equal(res.headers.get('cache-control'), 'no-store', `${method} ${path} (${res.status})`);
        assert.equal(res.headers.get('x-content-type-options'), 'nosniff', `${method} ${path}`);
      }
    });

    test('a caller over its share gets 429 RATE_LIMITED with Retry-After; another caller is still served', async () => {
      // A decision whose body is still being sent holds 300,000 bytes of the pep token's 262,144-byte share.
      const { port, hostname } = new URL(s.url);
      // The held request and the first probe travel on different connections: a probe that arrives first
      // makes the held request the one over the share (answered 429 at once). Then it is sent again.
      const holdShare = async (): Promise<{ socket: Socket; refused: () => boolean }> => {
        const socket: Socket = connect(Number(port), hostname);
        await new Promise((resolve) => socket.once('connect', resolve));
        let answered = false;
        socket.once('data', () => {
          answered = true;
        });
        socket.write(
          `POST /v1/decisions HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${s.tokens.pep}\r\nContent-Type: application/json\r\nContent-Length: 300000\r\n\r\n{"execution_id":`,
        );
        return { socket, refused: () => answered };
      };
      let hold = await holdShare();
      const limited = await until(async () => {
        if (hold.refused()) {
          hold.socket.destroy();
          hold = await holdShare();
        }
        const r = await call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, body: offboardingBody({ execution_id: `over-${Math.random()}` }) });
        return r.status === 429 ? r : undefined;
      }, 'a 429 for the caller whose share is held');
      const held = hold.socket;
      assert.equal(limited.body.error.code, 'RATE_LIMITED');
      const again = await fetch(`${s.url}/access/v1/evaluation`, {
        method: 'POST',
        headers: { authorization: `Bearer ${s.tokens.pep}`, 'content-type': 'application/json' },
        body: JSON.stringify({ subject: AGENT, action: { name: 'idp/disable_sign_in' }, resource: { type: 'Employee', id: '7721' } }),
      });
      assert.equal(again.status, 429);
      assert.equal(again.headers.get('retry-after'), '1');
      // Another PEP decides meanwhile.
      const other = await call(s, 'POST', '/v1/decisions', {
        token: s.tokens.pep2,
        body: offboardingBody({ execution_id: 'other-1', envelope: { actor: { type: 'Agent', id: 'other-agent' } } }),
      });
      assert.equal(other.status, 200, other.text);
      // The held request ends (refused: its body is not JSON); the caller's share is free again.
      const answered = new Promise<Buffer>((resolve) => held.once('data', resolve));
      // (Written, not ended: a client that half-closes has its request dropped by Node's HTTP server.)
      held.write('x'.repeat(300000 - '{"execution_id":'.length));
      assert.match((await answered).toString('latin1'), /^HTTP\/1\.1 400 /);
      held.destroy();
      const free = await until(async () => {
        const r = await call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, body: offboardingBody({ execution_id: `free-${Math.random()}` }) });
        return r.status === 200 ? r : undefined;
      }, 'the share freed');
      assert.equal(free.status, 200);
    });

    test('one PEP sends wide requests while another decides: the other is always served, the wide ones are answered or rate-limited', async () => {
      const hostile = Array.from({ length: 24 }, (_, i) =>
        call(s, 'POST', '/v1/decisions', {
          token: s.tokens.pep,
          body: offboardingBody({
            execution_id: `hostile-${i}`,
            action: { arguments: { blob: 'y'.repeat(1000), rows: Array.from({ length: 40 }, () => 'z'.repeat(1000)) } },
          }),
        }),
      );
      const victim: Array<Awaited<ReturnType<typeof call>>> = [];
      for (let i = 0; i < 10; i++) {
        victim.push(
          await call(s, 'POST', '/v1/decisions', {
            token: s.tokens.pep2,
            body: offboardingBody({ execution_id: `victim-${i}`, envelope: { actor: { type: 'Agent', id: 'other-agent' } } }),
          }),
        );
      }
      const answered = await Promise.all(hostile);
      assert.deepEqual(
        victim.map((r) => r.status),
        Array(10).fill(200),
      );
      const codes = answered.map((r) => (r.status === 200 ? 200 : `${r.status} ${r.body.error?.code}`));
      assert.ok(
        codes.every((c) => c === 200 || c === '429 RATE_LIMITED'),
        JSON.stringify(codes),
      );
      assert.equal(codes.length, 24);
    });
  });
}
