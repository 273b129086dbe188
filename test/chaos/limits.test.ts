/**
 * Limits (issue 7, docs/protocol.md §3, §6, §8): connection floods and slow clients do not stall other
 * clients; oversized, over-deep and over-long input is refused with the contract's codes (never a 500,
 * never a crash); ledger pages are capped at 1000 records.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { startTestServer, TEST_TOKENS, type TestServer } from '../helpers/server.js';
import { readBody, req } from './harness.js';

const T = TEST_TOKENS;

function hostPort(url: string): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
}

function openSocket(url: string): Promise<Socket> {
  const { host, port } = hostPort(url);
  return new Promise((resolve, reject) => {
    const s = connect({ host, port }, () => resolve(s));
    s.once('error', reject);
  });
}

/** N decisions from `lanes` concurrent clients; each must complete (any answer) within the deadline. */
async function decisionsComplete(url: string, n: number, lanes: number, tag: string): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < n) {
        const i = next++;
        const r = await req(url, 'POST', '/v1/decisions', { token: T.pep, body: readBody(`${tag}-${i}`, 'propose'), timeoutMs: 15_000 });
        statuses.push(r.status);
      }
    }),
  );
  return statuses;
}

/** POST with a chunked body (no content-length), as a streaming client would send it. */
function postChunked(url: string, path: string, token: string, chunks: Buffer[]): Promise<{ status: number; text: string }> {
  const { host, port } = hostPort(url);
  return new Promise((resolve, reject) => {
    // A fresh connection (agent: false): a pooled keep-alive socket the server is just closing would
    // reset before this request is read.
    let answered = false;
    const r = request(
      {
        host,
        port,
        path,
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      },
      (res) => {
        answered = true;
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    r.on('error', (e) => {
      // The server closes the connection after answering 413 while we may still be writing: that
      // is fine once the answer arrived; a connection lost without an answer fails the test (never hangs).
      const code = (e as NodeJS.ErrnoException).code;
      if ((code === 'EPIPE' || code === 'ECONNRESET') && answered) return;
      reject(e);
    });
    r.on('close', () => {
      if (!answered) reject(new Error('the connection closed without an answer'));
    });
    (async () => {
      for (const c of chunks) {
        if (r.destroyed) return;
        if (!r.write(c)) await new Promise((res) => r.once('drain', res));
      }
      r.end();
    })().catch(reject);
  });
}

describe('limits', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(async () => {
    if (s) assert.equal(await s.stop(), 0);
  });

  test('500 idle sockets do not stall another client', async () => {
    const sockets: Socket[] = [];
    try {
      for (let i = 0; i < 500; i += 50) {
        sockets.push(...(await Promise.all(Array.from({ length: 50 }, () => openSocket(s.url)))));
      }
      assert.equal(sockets.length, 500);
      const t0 = Date.now();
      const statuses = await decisionsComplete(s.url, 40, 4, 'idle-flood');
      assert.deepEqual([...new Set(statuses)], [200], 'every decision is answered 200 while 500 sockets sit idle');
      assert.ok(Date.now() - t0 < 30_000, 'decisions complete within a generous timeout');
      assert.equal((await req(s.url, 'GET', '/healthz')).status, 200);
    } finally {
      for (const sock of sockets) sock.destroy();
    }
  });

  test('slow clients (headers and body dribbled a byte at a time) do not stall others', async () => {
    const slow: Socket[] = [];
    const timers: NodeJS.Timeout[] = [];
    try {
      for (let i = 0; i < 20; i++) {
        const sock = await openSocket(s.url);
        sock.on('error', () => undefined);
        slow.push(sock);
        const { host, port } = hostPort(s.url);
        if (i % 2 === 0) {
          // slowloris: an endless header section, one byte every 100 ms
          await new Promise((r) => sock.write(`POST /v1/decisions HTTP/1.1\r\nHost: ${host}:${port}\r\nX-Slow: `, r));
          timers.push(setInterval(() => sock.writable && sock.write('a'), 100));
        } else {
          // slow body: complete headers, a body that never finishes
          await new Promise((r) =>
            sock.write(
              `POST /v1/decisions HTTP/1.1\r\nHost: ${host}:${port}\r\nAuthorization: Bearer ${T.pep}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`,
              r,
            ),
          );
          timers.push(setInterval(() => sock.writable && sock.write(' '), 100));
        }
      }
      // Every slow client is connected and its first bytes are out (each write above waited for its flush).
      const statuses = await decisionsComplete(s.url, 40, 4, 'slowloris');
      assert.deepEqual([...new Set(statuses)], [200], 'other clients are served while slow clients dribble');
      const audit = await req(s.url, 'GET', '/v1/ledger/checkpoint', { token: T.auditor });
      assert.equal(audit.status, 200);
    } finally {
      for (const t of timers) clearInterval(t);
      for (const sock of slow) sock.destroy();
    }
  });

  test('a body over 1 MiB is 413 PAYLOAD_TOO_LARGE, with or without content-length', async () => {
    const pad = 'x'.repeat(1024 * 1024 + 1);
    const body = JSON.stringify({ ...readBody('too-large', 'propose'), pad });
    const r = await req(s.url, 'POST', '/v1/decisions', { token: T.pep, rawBody: body });
    assert.equal(r.status, 413, r.text.slice(0, 300));
    assert.equal(r.body.error.code, 'PAYLOAD_TOO_LARGE');
    const chunks: Buffer[] = [];
    const all = Buffer.from(body);
    for (let i = 0; i < all.length; i += 64 * 1024) chunks.push(all.subarray(i, i + 64 * 1024));
    const c = await postChunked(s.url, '/v1/decisions', T.pep, chunks);
    assert.equal(c.status, 413, c.text.slice(0, 300));
    assert.equal(JSON.parse(c.text).error.code, 'PAYLOAD_TOO_LARGE');
    // Other bodies too (outcome), and the server is fine afterwards.
    const o = await req(s.url, 'POST', '/v1/executions/too-large/outcome', { token: T.pep, rawBody: JSON.stringify({ status: 'committed', detail: pad }) });
    assert.equal(o.status, 413, o.text.slice(0, 300));
    // Just under the limit is not refused for its size.
    const under = await req(s.url, 'POST', '/v1/decisions', {
      token: T.pep,
      rawBody: JSON.stringify({ ...readBody('under', 'propose'), pad: 'x'.repeat(1000) }),
    });
    assert.notEqual(under.status, 413);
    assert.equal((await req(s.url, 'POST', '/v1/decisions', { token: T.pep, body: readBody('after-413', 'propose') })).status, 200);
  });

  test('nesting: 64 levels are admitted, 65 are 400 BINDING_TOO_DEEP, 100 000 do not crash the server', async () => {
    const nest = (k: number) => '['.repeat(k) + ']'.repeat(k);
    const raw = (k: number, id: string) =>
      JSON.stringify(readBody(id, 'propose')).replace('"arguments":{"employee_id":"7721"}', `"arguments":{"employee_id":"7721","deep":${nest(k)}}`);
    const ok = await req(s.url, 'POST', '/v1/decisions', { token: T.pep, rawBody: raw(63, 'depth-64') });
    assert.equal(ok.status, 200, `depth 64 (arguments = 1) is admitted: ${ok.text.slice(0, 300)}`);
    const deep = await req(s.url, 'POST', '/v1/decisions', { token: T.pep, rawBody: raw(64, 'depth-65') });
    assert.equal(deep.status, 400, deep.text.slice(0, 300));
    assert.equal(deep.body.error.code, 'BINDING_TOO_DEEP');
    assert.match(deep.body.error.path, /^\/action\/arguments\/deep/);
    const huge = await req(s.url, 'POST', '/v1/decisions', { token: T.pep, rawBody: raw(100_000, 'depth-huge') });
    assert.equal(huge.status, 400, huge.text.slice(0, 300));
    assert.equal(huge.body.error.code, 'BINDING_TOO_DEEP');
    // Deep nesting outside the arguments is a plain schema refusal, not a crash.
    const env = await req(s.url, 'POST', '/v1/decisions', {
      token: T.pep,
      rawBody: JSON.stringify(readBody('deep-env', 'propose')).replace('"supersedes":null', `"supersedes":${nest(100_000)}`),
    });
    assert.equal(env.status, 400, env.text.slice(0, 300));
    // The parser's stop (past 512 levels) is named by where it happens: only arguments get the binding code.
    assert.equal(env.body.error.code, 'ENVELOPE_INVALID');
    assert.match(env.body.error.path, /^\/envelope\/supersedes\/0\/0/);
    const top = await req(s.url, 'POST', '/v1/decisions', { token: T.pep, rawBody: `{"x":${nest(600)}}` });
    assert.equal(top.body.error.code, 'INVALID_REQUEST', top.text.slice(0, 300));
    const entity = await req(s.url, 'PUT', '/v1/entities/User/deep', { token: T.admin, rawBody: `{"attrs":{"x":${nest(600)}},"parents":[]}` });
    assert.equal(entity.status, 400, entity.text.slice(0, 300));
    assert.equal(entity.body.error.code, 'INVALID_REQUEST');
    assert.match(entity.body.error.path, /^\/attrs\/x\/0/);
    assert.equal((await req(s.url, 'GET', '/healthz')).status, 200);
  });

  test('evidence_refs over 64, over-long strings and ids are 400, never a deny', async () => {
    const refs = (n: number) => Array.from({ length: n }, (_, i) => `ev:${i}`);
    const at64 = await req(s.url, 'POST', '/v1/decisions', { token: T.pep, body: readBody('ev-64', 'propose', { evidence_refs: refs(64) }) });
    assert.equal(at64.status, 200, at64.text.slice(0, 300));
    const over = await req(s.url, 'POST', '/v1/decisions', { token: T.pep, body: readBody('ev-65', 'propose', { evidence_refs: refs(65) }) });
    assert.equal(over.status, 400, over.text.slice(0, 300));
    assert.equal(over.body.error.code, 'ENVELOPE_INVALID');
    const longRef = await req(s.url, 'POST', '/v1/decisions', { token: T.pep, body: readBody('ev-long', 'propose', { evidence_refs: ['x'.repeat(257)] }) });
    assert.equal(longRef.status, 400);
    assert.equal(longRef.body.error.code, 'ENVELOPE_INVALID');
    const longTask = await req(s.url, 'POST', '/v1/decisions', { token: T.pep, body: readBody('task-long', 'propose', { task_id: 'x'.repeat(1025) }) });
    assert.equal(longTask.status, 400);
    assert.equal(longTask.body.error.code, 'ENVELOPE_INVALID');
    const longId = await req(s.url, 'POST', '/v1/decisions', { token: T.pep, body: readBody('x'.repeat(129), 'propose') });
    assert.equal(longId.status, 400, longId.text.slice(0, 300));
    // Refused input never reached the ledger.
    const recs = await req(s.url, 'GET', '/v1/ledger/records?execution_id=ev-65', { token: T.auditor });
    assert.deepEqual(recs.body.records, []);
  });

  test('ids too long to be a store key are 400 or 404, never 503 STORE_UNAVAILABLE', async () => {
    // 700 × '€' is within the 1024-character id limit but 2,100 bytes of UTF-8: more than a table key holds.
    const euros = encodeURIComponent('€'.repeat(700));
    const put = await req(s.url, 'PUT', `/v1/entities/User/${euros}`, { token: T.admin, body: { attrs: {}, parents: [] } });
    assert.equal(put.status, 400, put.text.slice(0, 300));
    assert.equal(put.body.error.code, 'INVALID_REQUEST');
    const get = await req(s.url, 'GET', `/v1/entities/User/${euros}`, { token: T.admin });
    assert.equal(get.status, 404, get.text.slice(0, 300));
    const revoke = await req(s.url, 'POST', `/v1/approvals/${'a'.repeat(5000)}/revoke`, { token: T.approver, body: {} });
    assert.equal(revoke.status, 404, revoke.text.slice(0, 300));
    const actor = encodeURIComponent(`Agent::"${'x'.repeat(5000)}"`);
    const read = await req(s.url, 'GET', `/v1/executions/long-actor?actor=${actor}`, { token: T.auditor });
    assert.equal(read.status, 404, read.text.slice(0, 300));
    assert.equal(read.body.error.code, 'EXECUTION_NOT_FOUND');
    const reconcile = await req(s.url, 'POST', `/v1/executions/long-actor/reconcile?actor=${actor}`, {
      token: T.reconciler,
      body: { resolution: 'absent', evidence_ref: 'x' },
    });
    assert.equal(reconcile.status, 404, reconcile.text.slice(0, 300));
    assert.equal((await req(s.url, 'GET', '/readyz')).status, 200);
  });

  test('records pages are capped at 1000 whatever limit asks for', async () => {
    // Enough records for more than one full page.
    let size = (await req(s.url, 'GET', '/readyz')).body.ledger_size as number;
    if (size <= 1001) await decisionsComplete(s.url, 1002 - size, 16, 'page');
    size = (await req(s.url, 'GET', '/readyz')).body.ledger_size as number;
    assert.ok(size > 1001, `ledger has ${size} records`);
    for (const limit of ['1001', '5000', '999999999999999']) {
      const r = await req(s.url, 'GET', `/v1/ledger/records?from=0&limit=${limit}`, { token: T.auditor, timeoutMs: 30_000 });
      assert.equal(r.status, 200, r.text.slice(0, 300));
      assert.equal(r.body.records.length, 1000, `limit=${limit} is capped at 1000`);
      assert.equal(r.body.next, 1000);
      assert.deepEqual(
        r.body.records.map((x: { seq: number }) => x.seq),
        Array.from({ length: 1000 }, (_, i) => i),
      );
    }
    const page2 = await req(s.url, 'GET', '/v1/ledger/records?from=1000&limit=1000', { token: T.auditor });
    assert.equal(page2.status, 200);
    assert.equal(page2.body.records[0].seq, 1000);
  });
});
