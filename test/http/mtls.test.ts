/**
 * Client certificates (docs/protocol.md §13) on the HTTPS listener and through an HTTP front (which
 * terminates TLS and hands the certificate's caller to the sidecar by its own message): a certificate
 * that chains to `tls_client_ca_file` and names a `tls_clients` URI SAN authenticates as that entry;
 * one from another CA, or naming no entry, is 401 like no credential at all. The CAs and certificates
 * are made by the test with openssl.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpsRequest } from 'node:https';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { offboardingBody, REPO, startTestServer, TEST_TOKENS } from '../helpers/server.js';

const SERVER_CERT = join(REPO, 'test', 'fixtures', 'tls', 'cert.pem');
const SERVER_KEY = join(REPO, 'test', 'fixtures', 'tls', 'key.pem');
const SERVER_CA = readFileSync(SERVER_CERT, 'utf8');
const AGENT = 'spiffe://writ.test/ns/prod/sa/offboarding-agent';
const AUDITOR = 'spiffe://writ.test/ns/audit/sa/auditor';
let dir: string;

const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
function makeCa(name: string): void {
  openssl(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.pem`,
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
  );
}
function makeClient(name: string, ca: string, uri: string): { cert: string; key: string } {
  writeFileSync(join(dir, `${name}.ext`), `subjectAltName=URI:${uri}\nextendedKeyUsage=clientAuth\n`);
  openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
  openssl(
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.pem`,
    '-CAkey',
    `${ca}.key`,
    '-CAcreateserial',
    '-out',
    `${name}.pem`,
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
  );
  return { cert: readFileSync(join(dir, `${name}.pem`), 'utf8'), key: readFileSync(join(dir, `${name}.key`), 'utf8') };
}

type Client = { cert: string; key: string } | undefined;
let agent: Client, auditor: Client, stranger: Client, otherCa: Client;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'writ-mtls-'));
  makeCa('ca');
  makeCa('other-ca');
  agent = makeClient('agent', 'ca', AGENT);
  auditor = makeClient('auditor', 'ca', AUDITOR);
  stranger = makeClient('stranger', 'ca', 'spiffe://writ.test/ns/prod/sa/nobody');
  otherCa = makeClient('impostor', 'other-ca', AGENT);
});
after(() => rmSync(dir, { recursive: true, force: true }));

function httpsCall(url: string, method: string, path: string, o: { client?: Client; token?: string; body?: unknown }): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const text = o.body === undefined ? undefined : JSON.stringify(o.body);
    const req = httpsRequest(
      new URL(path, url),
      {
        method,
        ca: SERVER_CA,
        agent: false,
        ...(o.client ? { cert: o.client.cert, key: o.client.key } : {}),
        headers: {
          ...(o.token ? { authorization: `Bearer ${o.token}` } : {}),
          ...(text !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } : {}),
        },
      },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (data += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: data ? JSON.parse(data) : undefined }));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

for (const httpThreads of [0, 1]) {
  test(`client certificates authenticate by URI SAN (http_threads ${httpThreads})`, async () => {
    const s = await startTestServer({
      config: {
        http_threads: httpThreads,
        tls_cert_file: SERVER_CERT,
        tls_key_file: SERVER_KEY,
        tls_client_ca_file: join(dir, 'ca.pem'),
        tls_clients: [
          { uri: AGENT, role: 'pep', actor: { type: 'Agent', id: 'offboarding-agent-prod' } },
          { uri: AUDITOR, role: 'auditor' },
        ],
      },
    });
    try {
      const body = offboardingBody({ execution_id: `mtls-${httpThreads}` });
      const d = await httpsCall(s.url, 'POST', '/v1/decisions', { client: agent, body });
      assert.equal(d.status, 200, JSON.stringify(d.body));
      // The auditor's certificate reads the ledger (a GET the front hands over by message, not over loopback).
      const rec = await httpsCall(s.url, 'GET', `/v1/ledger/records/${d.body.record.seq}`, { client: auditor });
      assert.equal(rec.status, 200, JSON.stringify(rec.body));
      assert.deepEqual(rec.body.identity, { method: 'mtls', sub: AGENT });
      // The agent's certificate holds no auditor role.
      assert.equal((await httpsCall(s.url, 'GET', '/v1/ledger/checkpoint', { client: agent })).body.error?.code, 'FORBIDDEN_ROLE');
      // A bearer token, when sent, is what authenticates.
      assert.equal((await httpsCall(s.url, 'GET', '/v1/ledger/checkpoint', { client: agent, token: TEST_TOKENS.auditor })).status, 200);
      assert.equal((await httpsCall(s.url, 'GET', '/v1/ledger/checkpoint', { client: auditor, token: 'wrong' })).status, 401);
      // Another CA's certificate for the same URI, a certificate naming no entry, none at all: 401.
      for (const client of [otherCa, stranger, undefined]) {
        const r = await httpsCall(s.url, 'POST', '/v1/decisions', { client, body: { ...body, execution_id: `mtls-x-${httpThreads}` } });
        assert.equal(r.status, 401, JSON.stringify(r.body));
        assert.equal((await httpsCall(s.url, 'GET', '/v1/ledger/checkpoint', { client })).status, 401);
      }
    } finally {
      await s.stop();
    }
  });
}
