/**
 * HTTPS on the public port (config `tls_cert_file` / `tls_key_file`): the sidecar's own listener
 * (`http_threads: 0`) and the HTTP fronts both terminate TLS with the configured certificate, decide
 * over it exactly as over HTTP, and refuse plaintext; TLS files that cannot serve stop the start before
 * anything is created. The certificate is a self-signed test fixture (test/fixtures/tls/).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { generateKeyPairSync } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { offboardingBody, REPO, startTestServer, TEST_TOKENS, WRIT_BIN } from '../helpers/server.js';
import { until } from '../helpers/wait.js';

const CERT_FILE = join(REPO, 'test', 'fixtures', 'tls', 'cert.pem');
const KEY_FILE = join(REPO, 'test', 'fixtures', 'tls', 'key.pem');
const CA = readFileSync(CERT_FILE, 'utf8');

/** One HTTPS exchange that trusts only the fixture certificate. */
function httpsCall(
  url: string,
  method: string,
  path: string,
  o: { token?: string; body?: unknown } = {},
): Promise<{ status: number; body: any; protocol: string }> {
  return new Promise((resolve, reject) => {
    const text = o.body === undefined ? undefined : JSON.stringify(o.body);
    const req = httpsRequest(
      new URL(path, url),
      {
        method,
        ca: CA,
        headers: {
          ...(o.token ? { authorization: `Bearer ${o.token}` } : {}),
          ...(text !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } : {}),
        },
      },
      (res) => {
        let data = '';
        const protocol = (res.socket as TLSSocket).getProtocol() ?? ''; // read now: the socket goes back to the agent at the end
        res.setEncoding('utf8');
        res.on('data', (d) => (data += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(data), protocol }));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

/** A plaintext HTTP request to the TLS port: whatever happens, it must not be an HTTP answer. */
function plaintextOutcome(url: string): Promise<string> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const req = httpRequest({ host: u.hostname, port: u.port, path: '/healthz', timeout: 5000 }, (res) => resolve(`answered ${res.statusCode}`));
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve(`refused: ${(e as NodeJS.ErrnoException).code ?? e.message}`));
    req.end();
  });
}

// 0: the sidecar's own listener; 1: a front thread; 2: two fronts (threads on Node ≥ 22.12, cluster processes before).
for (const httpThreads of [0, 1, 2]) {
  describe(`HTTPS with http_threads: ${httpThreads}`, () => {
    test('serves HTTPS with the configured certificate, decides over it, and refuses plaintext', async () => {
      const s = await startTestServer({ config: { tls_cert_file: CERT_FILE, tls_key_file: KEY_FILE, http_threads: httpThreads } });
      try {
        assert.match(s.url, /^https:\/\/127\.0\.0\.1:\d+$/, 'the start line names an https URL');
        const health = await httpsCall(s.url, 'GET', '/healthz');
        assert.equal(health.status, 200);
        assert.match(health.protocol, /^TLSv1\.[23]$/);
        const decided = await httpsCall(s.url, 'POST', '/v1/decisions', {
          token: s.tokens.pep,
          body: offboardingBody({
            execution_id: `tls-${httpThreads}`,
            phase: 'execute',
            action: { server: 'hris', tool: 'read_employee', arguments: { employee_id: '7721' } },
            envelope: { subject: { type: 'Employee', id: '7721' } },
          }),
        });
        assert.equal(decided.status, 200, JSON.stringify(decided.body));
        assert.equal(decided.body.decision, 'allow');
        // The decision is in the ledger, read back over the same TLS port.
        const exec = await httpsCall(s.url, 'GET', `/v1/executions/tls-${httpThreads}`, { token: s.tokens.pep });
        assert.equal(exec.status, 200);
        assert.equal(exec.body.state, 'invoking');
        // AuthZEN discovery names the URL the client used, https included (behind a front too, whose
        // pass-through reaches the sidecar over loopback HTTP).
        const discovery = await httpsCall(s.url, 'GET', '/.well-known/authzen-configuration');
        assert.equal(discovery.status, 200);
        assert.equal(discovery.body.policy_decision_point, s.url);
        assert.match(await plaintextOutcome(s.url), /^refused: /, 'plain HTTP on the TLS port gets no HTTP answer');
      } finally {
        assert.equal(await s.stop(), 0);
      }
    });
  });
}

test('a replica waiting for its database answers over HTTPS on its address too', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'writ-tls-wait-'));
  try {
    const configPath = join(dir, 'config.json');
    // Nobody listens on port 1: the database is unreachable, so the replica waits for it, serving meanwhile.
    writeFileSync(
      configPath,
      JSON.stringify({
        listen: '127.0.0.1:0',
        data_dir: join(dir, 'data'),
        database_url: 'postgres://writ@127.0.0.1:1/writ',
        tls_cert_file: CERT_FILE,
        tls_key_file: KEY_FILE,
        tokens: [{ token: TEST_TOKENS.auditor, role: 'auditor' }],
      }),
    );
    const child = spawn(process.execPath, [WRIT_BIN, 'serve', '--config', configPath], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b) => (out += b));
    child.stderr.on('data', (b) => (out += b));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const WAITING = /waiting for it on (https:\/\/\S+),/;
      const url = await until(async () => WAITING.exec(out)?.[1], 'the waiting line', 300).catch((e) => assert.fail(`${e.message}:\n${out}`));
      assert.equal((await httpsCall(url, 'GET', '/healthz')).status, 200);
      assert.equal((await httpsCall(url, 'GET', '/readyz')).status, 503);
      assert.equal((await httpsCall(url, 'GET', '/.well-known/authzen-configuration')).body.policy_decision_point, url);
      assert.match(await plaintextOutcome(url), /^refused: /);
    } finally {
      child.kill('SIGTERM');
      assert.equal(await exited, 0, out);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

describe('TLS settings that cannot serve stop the start', () => {
  const serveWith = (extra: Record<string, unknown>) => {
    const dir = mkdtempSync(join(tmpdir(), 'writ-tls-'));
    try {
      const path = join(dir, 'config.json');
      const dataDir = join(dir, 'data');
      writeFileSync(path, JSON.stringify({ listen: '127.0.0.1:0', data_dir: dataDir, tokens: [{ token: 'a'.repeat(32), role: 'auditor' }], ...extra }));
      const r = spawnSync(process.execPath, [WRIT_BIN, 'serve', '--config', path], { encoding: 'utf8', timeout: 60_000, cwd: dir });
      return { ...r, dataDirMade: existsSync(dataDir), dir };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  test('a certificate without its key (or the reverse) is a config error', () => {
    for (const extra of [{ tls_cert_file: CERT_FILE }, { tls_key_file: KEY_FILE }]) {
      const r = serveWith(extra);
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, /tls_cert_file and tls_key_file must be set together/);
      assert.equal(r.dataDirMade, false);
    }
  });

  test("a missing file, or a key that is not the certificate's, is named and nothing is created", () => {
    const missing = serveWith({ tls_cert_file: join(tmpdir(), 'writ-no-such-cert.pem'), tls_key_file: KEY_FILE });
    assert.equal(missing.status, 1, missing.stderr);
    assert.match(missing.stderr, /cannot read tls_cert_file .*writ-no-such-cert\.pem/);
    assert.equal(missing.dataDirMade, false);

    const otherKeyDir = mkdtempSync(join(tmpdir(), 'writ-tls-key-'));
    try {
      const otherKey = join(otherKeyDir, 'other.pem');
      writeFileSync(otherKey, generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }));
      const mismatched = serveWith({ tls_cert_file: CERT_FILE, tls_key_file: otherKey });
      assert.equal(mismatched.status, 1, mismatched.stderr);
      assert.match(mismatched.stderr, /cannot use tls_cert_file .*cert\.pem with tls_key_file .*other\.pem/);
      assert.equal(mismatched.dataDirMade, false);
      assert.doesNotMatch(mismatched.stderr, /\n\s+at /, 'no stack trace');
    } finally {
      rmSync(otherKeyDir, { recursive: true, force: true });
    }
  });
});
