/**
 * No input makes the sidecar answer 5xx (issue 4): ≥ 1000 generated hostile requests — malformed and
 * truncated JSON, wrong types, unknown fields, oversized bodies, deep nesting, bad UTF-8, wrong media
 * types — each answered 4xx with a contract error code; /readyz stays 200 throughout.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { request } from 'node:http';
import { call, offboardingBody, startTestServer, type TestServer } from '../helpers/server.js';
import { STATUS_BY_CODE } from '../../src/errors.js';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(async () => {
  await s.stop();
});

/** Raw HTTP (fetch refuses some hostile shapes itself). */
function raw(method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(s.url);
    const req = request(
      { host: u.hostname, port: u.port, method, path, headers: { ...headers, ...(body ? { 'content-length': String(body.length) } : {}) } },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    if (body) req.write(body);
    req.end();
  });
}

const valid = JSON.stringify(offboardingBody({ execution_id: 'FUZZ-base' }));

function mutations(rng: () => number): Buffer[] {
  const out: Buffer[] = [];
  const pick = <T>(xs: T[]) => xs[Math.floor(rng() * xs.length)]!;
  // Truncations of a valid body.
  for (let i = 0; i < 250; i++) out.push(Buffer.from(valid.slice(0, Math.floor(rng() * valid.length))));
  // Byte flips and insertions of JSON-significant characters.
  for (let i = 0; i < 350; i++) {
    const b = Buffer.from(valid);
    const n = 1 + Math.floor(rng() * 4);
    for (let k = 0; k < n; k++) b[Math.floor(rng() * b.length)] = pick([0x7b, 0x7d, 0x5b, 0x5d, 0x22, 0x2c, 0x3a, 0x00, 0xff, 0xc3, 0x5c, 0x31, 0x2e, 0x65]);
    out.push(b);
  }
  // Wrong types at every known field.
  const wrongs = [null, 1, 1.5, -0, true, 'x', [], {}, [1, 2], { type: 'User' }, '2026-02-30T10:00:00Z', 'a'.repeat(5000)];
  const paths = [
    ['execution_id'],
    ['phase'],
    ['envelope'],
    ['envelope', 'task_id'],
    ['envelope', 'purpose'],
    ['envelope', 'requester'],
    ['envelope', 'actor'],
    ['envelope', 'subject'],
    ['envelope', 'execute_after'],
    ['envelope', 'evidence_refs'],
    ['envelope', 'supersedes'],
    ['envelope', 'traceparent'],
    ['action'],
    ['action', 'server'],
    ['action', 'tool'],
    ['action', 'arguments'],
    ['envelope', 'requester', 'type'],
    ['envelope', 'requester', 'id'],
    ['envelope', 'unknown_field'],
    ['unknown_top'],
    ['action', 'extra'],
  ];
  for (const p of paths) {
    for (const w of wrongs) {
      const copy = JSON.parse(valid);
      let o = copy;
      for (const k of p.slice(0, -1)) o = o[k];
      o[p[p.length - 1]!] = w;
      out.push(Buffer.from(JSON.stringify(copy)));
    }
  }
  // Deep nesting, in the arguments and elsewhere.
  for (const depth of [65, 100, 1000, 100000]) {
    out.push(Buffer.from(valid.replace('"employee_id":"7721"', `"employee_id":${'['.repeat(depth)}${']'.repeat(depth)}`)));
    out.push(Buffer.from(`{"execution_id":${'['.repeat(depth)}${']'.repeat(depth)}}`));
  }
  // Hostile numbers and strings in the arguments.
  for (const tok of [
    '1.0',
    '1e400',
    '-1e400',
    '9007199254740993',
    '0.30000000000000004',
    '1e-7',
    'NaN',
    'Infinity',
    '01',
    '.5',
    '1.',
    '"\\ud800"',
    '"\\u00"',
    '"\\x41"',
  ]) {
    out.push(Buffer.from(valid.replace('"employee_id":"7721"', `"employee_id":${tok}`)));
  }
  // Duplicate keys everywhere.
  out.push(Buffer.from(valid.replace('"phase":"propose"', '"phase":"propose","phase":"propose"')));
  out.push(Buffer.from(valid.replace('"task_id":"OFF-2048"', '"task_id":"OFF-2048","task_id":"OFF-2049"')));
  // Garbage.
  for (let i = 0; i < 100; i++) out.push(Buffer.from(Array.from({ length: Math.floor(rng() * 200) }, () => Math.floor(rng() * 256))));
  out.push(Buffer.from(''), Buffer.from('null'), Buffer.from('[]'), Buffer.from('"x"'), Buffer.from('{}'), Buffer.from(`\uFEFF${valid}`));
  return out;
}

test('≥ 1000 hostile requests: 4xx with a contract code, never 5xx; /readyz stays 200', async () => {
  let seed = 7;
  const rng = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  const bodies = mutations(rng);
  const routes: Array<[string, string, string]> = [
    ['POST', '/v1/decisions', s.tokens.pep],
    ['POST', '/v1/approvals', s.tokens.approver],
    ['POST', '/v1/executions/FUZZ-base/outcome', s.tokens.pep],
    ['POST', '/v1/executions/FUZZ-base/reconcile?actor=Agent%3A%3A%22offboarding-agent-prod%22', s.tokens.reconciler],
    ['PUT', '/v1/entities/Employee/fuzz', s.tokens.admin],
  ];
  let sent = 0;
  const codes = new Set(Object.keys(STATUS_BY_CODE));
  for (let i = 0; i < bodies.length; i++) {
    const [method, path, token] = i % 3 === 0 ? routes[i % routes.length]! : routes[0]!;
    const r = await raw(method, path, { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, bodies[i]);
    sent++;
    assert.ok(r.status < 500, `${method} ${path} #${i} answered ${r.status}: ${r.text.slice(0, 300)}`);
    if (r.status >= 400) {
      const parsed = JSON.parse(r.text);
      assert.ok(codes.has(parsed.error.code), `unknown code ${parsed.error.code}`);
    }
  }
  // A body just over 1 MiB, and one of 2 MiB; wrong media types; bad auth headers.
  for (const size of [1024 * 1024 + 1, 2 * 1024 * 1024]) {
    const r = await raw('POST', '/v1/decisions', { authorization: `Bearer ${s.tokens.pep}`, 'content-type': 'application/json' }, Buffer.alloc(size, 0x20));
    assert.equal(r.status, 413);
    sent++;
  }
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data', '']) {
    const r = await raw('POST', '/v1/decisions', { authorization: `Bearer ${s.tokens.pep}`, ...(type ? { 'content-type': type } : {}) }, Buffer.from(valid));
    assert.equal(r.status, 415, type);
    sent++;
  }
  for (const auth of ['', 'Bearer', 'Basic abc', `Bearer ${'x'.repeat(10000)}`, `bearer  ${s.tokens.pep}x`]) {
    const r = await raw('POST', '/v1/decisions', { ...(auth ? { authorization: auth } : {}), 'content-type': 'application/json' }, Buffer.from(valid));
    assert.equal(r.status, 401, auth.slice(0, 20));
    sent++;
  }
  // Random query strings on auditor routes.
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom('/v1/ledger/records', '/v1/ledger/proofs/inclusion', '/v1/ledger/proofs/consistency', '/v1/ledger/records/', '/v1/executions/x'),
      fc.string(),
      async (path, q) => {
        const r = await raw('GET', `${path}?${encodeURIComponent(q).replace(/%3D/g, '=').replace(/%26/g, '&')}&seq=${encodeURIComponent(q)}`, {
          authorization: `Bearer ${s.tokens.auditor}`,
        });
        sent++;
        assert.ok(r.status < 500, `${path}?${q}: ${r.status} ${r.text.slice(0, 200)}`);
      },
    ),
    { numRuns: 100, seed: 11 },
  );
  assert.ok(sent >= 1000, `sent ${sent}`);
  assert.equal((await call(s, 'GET', '/readyz')).status, 200);
});
