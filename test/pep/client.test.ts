// PdpClient (fail closed on transport trouble), defaults/context, and the raw member scanner.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AddressInfo, Socket } from 'node:net';
import { test } from 'node:test';
import { PdpClient, parseDefaults, envelopeFromDefaults, resolvePointer } from '../../src/pep/index.js';
import { callContext } from '../../src/pep/context.js';
import { rawMember } from '../../src/util/rawjson.js';
import { isWritError } from '../../src/errors.js';
import { envelope } from './helpers.js';
import { REPO } from '../helpers/server.js';
import { waitUntil } from '../helpers/wait.js';

async function serve(
  handler: (body: string, url: string, res: import('node:http').ServerResponse) => void,
): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => handler(body, req.url ?? '', res));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const body = { execution_id: 'e1', phase: 'execute' as const, envelope: envelope(), action: { server: 's', tool: 't', arguments: { a: 1 } } };

test('PdpClient: 5xx, timeouts, unreadable answers and refused connections are PDP_UNAVAILABLE; 4xx keep their code', { timeout: 20_000 }, async () => {
  let mode = '';
  const s = await serve((_b, _u, res) => {
    if (mode === 'hang') return; // never answers
    if (mode === '503') {
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"code":"STORE_UNAVAILABLE","message":"x"}}');
    } else if (mode === '409') {
      res.writeHead(409, { 'content-type': 'application/json' }).end('{"error":{"code":"EXECUTION_TERMINAL","message":"done","path":"/execution_id"}}');
    } else if (mode === 'garbage') {
      res.writeHead(200).end('<html>');
    } else if (mode === 'bad-decision') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"decision":"maybe"}');
    } else if (mode === 'allow-other-execution' || mode === 'allow-not-invoking' || mode === 'allow-ok') {
      const answer = {
        decision: 'allow',
        execution_id: mode === 'allow-other-execution' ? 'someone-else' : body.execution_id,
        state: mode === 'allow-not-invoking' ? 'proposed' : 'invoking',
        arguments: {},
        reasons: [],
        obligations: [],
      };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    }
  });
  try {
    const c = new PdpClient({ url: `${s.url}/`, token: 'tok', timeoutMs: 300 });
    // An allow for another execution, or one that did not move it to invoking, licenses nothing.
    for (const m of ['503', 'hang', 'garbage', 'bad-decision', 'allow-other-execution', 'allow-not-invoking']) {
      mode = m;
      const r = await c.decide(body);
      assert.equal(r.ok, false, m);
      if (!r.ok) assert.equal(r.error.code, 'PDP_UNAVAILABLE', m);
    }
    mode = 'allow-ok';
    const ok = await c.decide(body);
    assert.equal(ok.ok && ok.body.decision, 'allow');
    mode = '409';
    const r = await c.decide(body);
    assert.deepEqual(r, { ok: false, status: 409, error: { code: 'EXECUTION_TERMINAL', message: 'done', path: '/execution_id' } });
  } finally {
    await s.close();
  }
  const gone = new PdpClient({ url: s.url, token: 'tok', timeoutMs: 300 });
  const r = await gone.decide(body);
  assert.equal(r.ok || r.error.code, 'PDP_UNAVAILABLE');
  assert.throws(() => new PdpClient({ url: 'ftp://x', token: 't' }), TypeError);
});

test('PdpClient: an answer cut off mid-body is PDP_UNAVAILABLE; a slow answer past the idle-connection limit still arrives; a connection the server closed while idle is not reused', {
  timeout: 30_000,
}, async () => {
  let mode = '';
  const s = await serve((_b, _u, res) => {
    if (mode === 'cut') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      // Cut once the first bytes are out.
      res.write('{"decision":', () => res.socket?.destroy());
    } else {
      const answer = () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ decision: 'deny', reasons: [], obligations: [] }));
      // A fixed delay is what this case tests: an answer slower than the client's 2 s idle-connection limit.
      if (mode === 'slow') setTimeout(answer, 2_600);
      else answer();
    }
  });
  // The server drops idle connections quickly: a client that reused one it had closed would fail.
  s.server.keepAliveTimeout = 300;
  const open = new Set<Socket>();
  s.server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  try {
    const c = new PdpClient({ url: s.url, token: 'tok', timeoutMs: 10_000 });
    mode = 'cut';
    const cut = await c.decide(body);
    assert.equal(cut.ok || cut.error.code, 'PDP_UNAVAILABLE');
    mode = 'slow';
    assert.equal((await c.decide(body)).ok, true);
    mode = '';
    for (let i = 0; i < 3; i++) {
      assert.equal((await c.decide(body)).ok, true);
      await waitUntil(() => open.size === 0, 'the server to close the idle connection');
    }
  } finally {
    await s.close();
  }
});

test('PdpClient over https: a PDP whose certificate the process trusts answers; one it does not trust is PDP_UNAVAILABLE', { timeout: 30_000 }, async () => {
  // A self-signed certificate for 127.0.0.1, made for these tests only (valid until 2126).
  const fixtures = join(REPO, 'test', 'pep', 'fixtures');
  const certFile = join(fixtures, 'test-pdp.cert.pem');
  const server = createHttpsServer({ cert: readFileSync(certFile), key: readFileSync(join(fixtures, 'test-pdp.key.pem')) }, (req, res) => {
    req.resume();
    req.on('end', () =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ decision: 'deny', reasons: ['over-tls'], obligations: [] })),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const untrusted = await new PdpClient({ url, token: 'tok', timeoutMs: 5_000 }).decide(body);
    assert.equal(untrusted.ok || untrusted.error.code, 'PDP_UNAVAILABLE');
    assert.match(untrusted.ok ? '' : untrusted.error.message, /certificate/i);
    // Trusted the way an operator trusts a private CA: NODE_EXTRA_CA_CERTS, read when a process starts.
    const client = pathToFileURL(join(REPO, 'dist', 'src', 'pep', 'client.js')).href;
    const script = `const { PdpClient } = await import(${JSON.stringify(client)});
      const r = await new PdpClient({ url: ${JSON.stringify(url)}, token: 'tok', timeoutMs: 5000 }).decide(${JSON.stringify(body)});
      process.stdout.write(JSON.stringify(r));`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: certFile },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    await new Promise((r) => child.once('close', r));
    const trusted = JSON.parse(out);
    assert.equal(trusted.ok, true, out);
    assert.deepEqual(trusted.body.reasons, ['over-tls']);
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

test('PdpClient: raw arguments are spliced verbatim; outcome retries and treats a landed earlier attempt as done', { timeout: 20_000 }, async () => {
  const seen: string[] = [];
  let outcomeCalls = 0;
  const s = await serve((b, url, res) => {
    seen.push(b);
    if (url.endsWith('/outcome')) {
      outcomeCalls++;
      if (outcomeCalls === 1) return void res.writeHead(502).end();
      return void res.writeHead(409, { 'content-type': 'application/json' }).end('{"error":{"code":"EXECUTION_TERMINAL","message":"t"}}');
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        decision: 'allow',
        execution_id: 'e1',
        state: 'invoking',
        arguments: { a: 1 },
        reasons: ['p'],
        obligations: [],
        binding: 'b',
        envelope_digest: 'd',
      }),
    );
  });
  try {
    const c = new PdpClient({ url: s.url, token: 'tok', retryDelayMs: 5 });
    const raw = '{"a":1.0, "a":2,"big":123456789012345678901}';
    const r = await c.decide(body, { rawArguments: raw });
    assert.ok(r.ok);
    assert.ok(seen[0]!.endsWith(`"arguments":${raw}}}`), seen[0]);
    assert.deepEqual(JSON.parse(seen[0]!.replace(raw, '{}')).envelope, envelope());
    const o = await c.outcome('e/1', { status: 'committed' });
    assert.equal(o.ok, true);
    assert.equal(outcomeCalls, 2);
    // A 409 on the first attempt is a real refusal.
    const o2 = await c.outcome('e1', { status: 'committed' });
    assert.equal(o2.ok, false);
  } finally {
    await s.close();
  }
});

test('PdpClient refuses options Node would quietly change: timeouts outside 1..2^31-1 ms, a URL with a query or fragment', () => {
  const base = { url: 'http://127.0.0.1:1', token: 't' };
  for (const bad of [0, -5, 2.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31, '100' as unknown as number]) {
    assert.throws(() => new PdpClient({ ...base, timeoutMs: bad }), /timeoutMs must be a whole number of milliseconds from 1 to 2147483647/);
  }
  assert.equal(new PdpClient({ ...base, timeoutMs: 1 }).timeoutMs, 1);
  assert.equal(new PdpClient({ ...base, timeoutMs: 2 ** 31 - 1 }).timeoutMs, 2 ** 31 - 1);
  assert.throws(() => new PdpClient({ ...base, url: 'http://127.0.0.1:1/?x=1' }), /query or fragment/);
  assert.throws(() => new PdpClient({ ...base, url: 'http://127.0.0.1:1/#f' }), /query or fragment/);
  assert.throws(() => new PdpClient({ ...base, outcomeAttempts: 0 }), /outcomeAttempts/);
  assert.throws(() => new PdpClient({ ...base, retryDelayMs: Number.NaN }), /retryDelayMs/);
});

test('defaults: plain envelope, extended form with pointers and per-tool layers, MISSING_CONTEXT', () => {
  const plain = parseDefaults(envelope());
  assert.deepEqual(envelopeFromDefaults(plain, 'x', {}), envelope());
  const d = parseDefaults({
    envelope: envelope({ subject: undefined }),
    from_arguments: { subject: { type: 'Employee', id: '/employee_id' }, requester: '/on_behalf_of' },
    tools: { 'a/b': { envelope: { purpose: 'special' }, from_arguments: { task_id: '/t~1k' } } },
    execution_id_prefix: 'px',
  });
  const args = { employee_id: 7721, on_behalf_of: { type: 'User', id: 'm-1' }, 't/k': 'T-7' };
  const e = envelopeFromDefaults(d, 'a/b', args);
  assert.deepEqual(e.subject, { type: 'Employee', id: '7721' });
  assert.deepEqual(e.requester, { type: 'User', id: 'm-1' });
  assert.equal(e.purpose, 'special');
  assert.equal(e.task_id, 'T-7');
  assert.equal(envelopeFromDefaults(d, 'other', args).purpose, 'pep_tests');
  assert.throws(
    () => envelopeFromDefaults(d, 'x', { employee_id: 1.5, on_behalf_of: { type: 'User', id: 'm' } }),
    (err) => isWritError(err) && err.code === 'MISSING_CONTEXT' && err.path === '/employee_id',
  );
  assert.throws(() => parseDefaults({ envelope: {}, from_arguments: { subject: 'no-slash' } }), /JSON pointer/);
  assert.throws(() => parseDefaults({ envelope: {}, extra: 1 }), /unknown key/);
  assert.equal(resolvePointer({ a: [{ b: 1 }] }, '/a/0/b'), 1);
  assert.equal(resolvePointer({ a: [] }, '/a/01'), undefined);

  // Context order: _meta first; an id without an envelope takes the defaults' envelope; neither → MISSING_CONTEXT.
  const c1 = callContext({ 'io.writ/envelope': { x: 1 }, 'io.writ/execution_id': 'id-1' }, plain, 't', {});
  assert.deepEqual(c1, { envelope: { x: 1 }, executionId: 'id-1' });
  const c2 = callContext({ 'io.writ/execution_id': 'id-2' }, plain, 't', {});
  assert.deepEqual(c2, { envelope: envelope(), executionId: 'id-2' });
  const c3 = callContext(undefined, d, 'a/b', args);
  assert.match(String(c3.executionId), /^px:[0-9a-f-]{36}$/);
  assert.throws(
    () => callContext({}, undefined, 't', {}),
    (err) => isWritError(err) && err.code === 'MISSING_CONTEXT',
  );
});

test('rawMember cuts exact member texts and flags repeated keys', () => {
  const line = '{"id":1,"params":{"name":"t","arguments": {"a":1.0,"b":[1, 2,{"c":"\\"}"}]} ,"x":null},"method":"tools/call"}';
  const args = '{"a":1.0,"b":[1, 2,{"c":"\\"}"}]}';
  assert.deepEqual(rawMember(line, ['params', 'arguments']), { found: true, raw: args, span: [line.indexOf(args), line.indexOf(args) + args.length] });
  assert.deepEqual(rawMember(line, ['id']), { found: true, raw: '1', span: [6, 7] });
  assert.deepEqual(rawMember(line, ['params', 'missing']), { found: false, duplicate: false });
  assert.deepEqual(rawMember('{"params":{"arguments":{},"argu\\u006dents":{"a":1}}}', ['params', 'arguments']), { found: false, duplicate: true });
  assert.deepEqual(rawMember('{"result":  {"content":[]} }', ['result']), { found: true, raw: '{"content":[]}', span: [12, 26] });
});
