// The gateway's config (docs/protocol.md §14.1) and its 2026-07-28 routing-header check (§14.3): pure
// vectors, no process started.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { routingMismatch } from '../../src/gateway/app.js';
import { checkGatewayConfig, GatewayConfigError, resourceOf } from '../../src/gateway/config.js';
import { metadataUrl } from '../../src/gateway/resource.js';
import { routingHeaderValue } from '../../src/gateway/upstream.js';

const base = {
  public_url: 'https://mcp.example.com/',
  pdp: { url: 'http://127.0.0.1:8700', token_file: 't' },
  jwt_issuers: [{ issuer: 'https://idp.example.com' }],
  authorization_servers: ['https://idp.example.com'],
  servers: { crm: { url: 'https://crm.internal/mcp', headers: { 'x-key': 'k' } }, local: { command: ['node', 'server.js'], env: { A: '1' } } },
};
const check = (doc: unknown) => checkGatewayConfig(doc, { readFile: () => ' tok \n' });

test('a config: defaults, resource URIs, RFC 9728 metadata URLs, the issuer needing only `issuer`', () => {
  const c = check(base);
  assert.equal(c.host, '127.0.0.1');
  assert.equal(c.port, 8710);
  assert.equal(c.publicUrl, 'https://mcp.example.com');
  assert.equal(c.publicOrigin, 'https://mcp.example.com');
  assert.equal(c.pdp.token, 'tok');
  assert.equal(resourceOf(c, 'crm'), 'https://mcp.example.com/mcp/crm');
  assert.equal(metadataUrl(c, 'crm'), 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp/crm');
  assert.equal(metadataUrl(check({ ...base, public_url: 'https://x.example/gw' }), 'crm'), 'https://x.example/.well-known/oauth-protected-resource/gw/mcp/crm');
  assert.deepEqual(c.servers.get('crm'), { kind: 'http', url: 'https://crm.internal/mcp', headers: { 'x-key': 'k' } });
  assert.deepEqual(c.servers.get('local'), { kind: 'stdio', command: 'node', args: ['server.js'], env: { A: '1' } });
  assert.equal(c.issuers[0]!.issuer, 'https://idp.example.com');
  assert.equal(c.scopesSupported, undefined);
  assert.equal(c.allowedOrigins, undefined);
  assert.equal(check({ ...base, listen: '[::1]:0' }).host, '::1');
  assert.deepEqual(check({ ...base, allowed_origins: ['https://app.example.com/'] }).allowedOrigins, ['https://app.example.com']);
});

test('config refusals name what is wrong', () => {
  const bad: Array<[unknown, RegExp]> = [
    [{ ...base, extra: 1 }, /unknown member "extra"/],
    [{ ...base, public_url: 'ftp://x' }, /public_url must be http\(s\)/],
    [{ ...base, public_url: 'https://x/?q' }, /query or fragment/],
    [{ ...base, servers: {} }, /at least one MCP server/],
    [{ ...base, servers: { 'a/b': { url: 'https://x' } } }, /server name/],
    [{ ...base, servers: { a: { url: 'https://x', command: ['x'] } } }, /both url and command/],
    [{ ...base, servers: { a: { url: 'https://x', header: {} } } }, /unknown member "header"/],
    [{ ...base, servers: { a: { command: [] } } }, /at least one/],
    [{ ...base, servers: { a: {} } }, /a url or a command/],
    [{ ...base, jwt_issuers: [] }, /jwt_issuers must name at least one/],
    [{ ...base, jwt_issuers: [{ issuer: 'http://idp.example.com' }] }, /https/],
    [{ ...base, authorization_servers: [] }, /authorization_servers must name at least one/],
    [{ ...base, defaults: { envelope: {}, nope: 1 } }, /defaults: .*unknown key "nope"/],
    [{ ...base, defaults: { task_id: 7 } }, /defaults: .*ENVELOPE_INVALID/],
    [{ ...base, call_timeout_ms: 0 }, /call_timeout_ms/],
    [{ ...base, pdp: { url: 'http://x/?a', token_file: 't' } }, /pdp.url/],
    [{ ...base, tls_cert_file: 'c.pem' }, /tls_cert_file and tls_key_file go together/],
    [{ ...base, log_format: 'xml' }, /log_format/],
    [{ ...base, listen: 'nowhere' }, /listen must be "host:port"/],
  ];
  for (const [doc, why] of bad)
    assert.throws(
      () => check(doc),
      (e: unknown) => e instanceof GatewayConfigError && why.test(e.message),
      JSON.stringify(doc),
    );
});

test('2026-07-28 routing headers: derived from the body, checked against it', () => {
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' };
  const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', _meta: meta } };
  const headers = (h: Record<string, string>) => (n: string) => h[n];
  assert.equal(routingMismatch(call, headers({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'echo' })), undefined);
  assert.match(routingMismatch(call, headers({ 'mcp-method': 'tools/call', 'mcp-name': 'echo' }))!, /MCP-Protocol-Version header is required/);
  assert.match(routingMismatch(call, headers({ 'mcp-protocol-version': '2026-07-29', 'mcp-method': 'tools/call', 'mcp-name': 'echo' }))!, /names 2026-07-29/);
  assert.match(routingMismatch(call, headers({ 'mcp-protocol-version': '2026-07-28', 'mcp-name': 'echo' }))!, /Mcp-Method header is required/);
  assert.match(
    routingMismatch(call, headers({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list', 'mcp-name': 'echo' }))!,
    /Mcp-Method header names "tools\/list"/,
  );
  assert.match(routingMismatch(call, headers({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' }))!, /Mcp-Name header is required/);
  assert.match(
    routingMismatch(call, headers({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'secret' }))!,
    /Mcp-Name header names "secret"/,
  );
  // A name outside printable ASCII rides Base64-encoded, both ways.
  const wide = { ...call, params: { ...call.params, name: 'écho' } };
  assert.equal(routingHeaderValue('écho'), `=?base64?${Buffer.from('écho').toString('base64')}?=`);
  assert.equal(
    routingMismatch(wide, headers({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': routingHeaderValue('écho') })),
    undefined,
  );
  // Notifications need no headers, but ones sent must match.
  const note = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, _meta: meta } };
  assert.equal(routingMismatch(note, headers({})), undefined);
  assert.match(routingMismatch(note, headers({ 'mcp-method': 'ping' }))!, /Mcp-Method/);
});
