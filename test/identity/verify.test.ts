import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { base64url, exportJWK, exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startIdp, type TestIdp } from '../helpers/oidc.js';
import { checkJwtIssuers, IssuerConfigError, type JwtIssuerSpec } from '../../src/identity/issuers.js';
import { JwtVerifier } from '../../src/identity/verify.js';
import { delegatedIdentityOf, grantedCallers } from '../../src/identity/grants.js';
import { isWritError } from '../../src/errors.js';

const AUD = 'https://writ.test';
let idp: TestIdp;
let spec: JwtIssuerSpec;
let sign: Awaited<ReturnType<TestIdp['addKey']>>;

before(async () => {
  idp = await startIdp({
    clients: [
      { id: 'agent-7', scope: 'writ.pep writ.audit other' },
      { id: 'nobody', scope: 'other' },
    ],
  });
  [spec] = checkJwtIssuers([
    {
      issuer: idp.issuer,
      audience: AUD,
      roles: {
        'writ.pep': { role: 'pep', actor: { type: 'Agent', claim: 'client_id' } },
        'writ.audit': { role: 'auditor' },
        'writ.approve': { role: 'approver', principal: { type: 'User', claim: 'sub' } },
      },
    },
  ]) as [JwtIssuerSpec];
  sign = await idp.addKey({ kid: 'minted-1' });
});
after(() => idp.stop());

const nowS = () => Math.floor(Date.now() / 1000);
const claims = (extra: Record<string, unknown> = {}) => ({
  iss: idp.issuer,
  aud: AUD,
  sub: 'u-1',
  iat: nowS(),
  exp: nowS() + 300,
  scope: 'writ.audit',
  ...extra,
});

/** The refusal a verification ends in: its code, status and message. */
async function refusal(p: Promise<unknown>): Promise<{ code: string; status: number; message: string; challenge?: string }> {
  try {
    await p;
  } catch (e) {
    if (!isWritError(e)) throw e;
    return { code: e.code, status: e.status, message: e.message, challenge: (e.details as { wwwAuthenticate?: string } | undefined)?.wwwAuthenticate };
  }
  assert.fail('the token was accepted');
}

test('a token from the IdP (client credentials, resource indicator) verifies by discovery; scopes map to several roles', async () => {
  const v = new JwtVerifier([spec]);
  const token = await idp.clientToken('agent-7', { scope: 'writ.pep writ.audit', resource: AUD });
  const ok = await v.verify(token);
  assert.equal(ok.claims.client_id, 'agent-7');
  const callers = grantedCallers(ok);
  assert.deepEqual(
    callers.map((c) => c.role),
    ['pep', 'auditor'],
  );
  assert.deepEqual(callers[0]!.actor, { type: 'Agent', id: 'agent-7' });
  assert.equal(callers[0]!.identity.method, 'jwt');
  assert.equal(callers[0]!.identity.iss, idp.issuer);
  assert.equal(callers[0]!.identity.client_id, 'agent-7');
  assert.equal(typeof callers[0]!.identity.jti, 'string');
  // `scp` as an array (Entra ID, Okta) grants the same way.
  const scp = await v.verify(await sign(claims({ scope: undefined, scp: ['writ.approve'] })));
  assert.deepEqual(grantedCallers(scp), [
    { role: 'approver', principal: { type: 'User', id: 'u-1' }, identity: { method: 'jwt', iss: idp.issuer, sub: 'u-1', exp: scp.claims.exp } },
  ]);
});

test('a valid token whose scopes map to no role holds no role', async () => {
  const v = new JwtVerifier([spec]);
  const ok = await v.verify(await idp.clientToken('nobody', { scope: 'other', resource: AUD }));
  assert.deepEqual(grantedCallers(ok), []);
});

test('every check refuses with 401 invalid_token naming the check, never quoting the token', async () => {
  const v = new JwtVerifier([spec]);
  const cases: Array<[string, Promise<string>, RegExp]> = [
    ["wrong aud (the IdP's token for another resource)", idp.clientToken('agent-7', { scope: 'writ.pep', resource: 'https://other.test' }), /^aud:/],
    ['expired beyond the leeway', sign(claims({ exp: nowS() - 61 })), /^exp:/],
    ['no exp', sign(claims({ exp: undefined })), /exp/],
    ['not yet valid', sign(claims({ nbf: nowS() + 120 })), /^nbf:/],
    ['issued in the future', sign(claims({ iat: nowS() + 120 })), /^iat:/],
    ['unknown issuer', sign(claims({ iss: 'https://evil.test' })), /^iss:/],
    ['no subject', sign(claims({ sub: undefined })), /^sub:/],
    [
      'tampered payload',
      sign(claims()).then((t) => {
        const [h, , s] = t.split('.');
        return `${h}.${base64url.encode(JSON.stringify(claims({ scope: 'writ.pep writ.audit writ.approve' })))}.${s}`;
      }),
      /^signature:/,
    ],
    [
      'alg none',
      Promise.resolve(`${base64url.encode(JSON.stringify({ alg: 'none', kid: 'minted-1' }))}.${base64url.encode(JSON.stringify(claims()))}.`),
      /^alg:/,
    ],
  ];
  for (const [name, made, check] of cases) {
    const token = await made;
    const r = await refusal(v.verify(token));
    assert.equal(r.code, 'UNAUTHENTICATED', name);
    assert.equal(r.status, 401, name);
    assert.equal(r.challenge, 'Bearer error="invalid_token"', name);
    assert.match(r.message, check, `${name}: ${r.message}`);
    for (const part of token.split('.').filter((p) => p.length > 8)) assert.ok(!r.message.includes(part), `${name}: the message quotes the token`);
  }
  // Within the 60 s leeway each way: accepted.
  await v.verify(await sign(claims({ exp: nowS() - 30, nbf: nowS() + 30, iat: nowS() + 30 })));
});

test('HMAC is refused: signed with the public key as secret, or with a symmetric key the JWKS offers', async () => {
  const v = new JwtVerifier([spec]);
  const pair = await generateKeyPair('RS256', { extractable: true });
  const pem = await exportSPKI(pair.publicKey);
  idp.serveJwk({ ...(await exportJWK(pair.publicKey)), kid: 'rsa-pub' });
  const secret = 'a-symmetric-secret-the-jwks-gives-away-0123456789';
  idp.serveJwk({ kty: 'oct', kid: 'sym', k: base64url.encode(secret) });
  const hs = (kid: string, key: string) => {
    const input = `${base64url.encode(JSON.stringify({ alg: 'HS256', kid }))}.${base64url.encode(JSON.stringify(claims()))}`;
    return `${input}.${base64url.encode(createHmac('sha256', key).update(input).digest())}`;
  };
  for (const token of [
    hs('rsa-pub', pem),
    hs('sym', secret),
    await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256', kid: 'sym' }).sign(new TextEncoder().encode(secret)),
  ]) {
    const r = await refusal(v.verify(token));
    assert.equal(r.code, 'UNAUTHENTICATED');
    assert.match(r.message, /^alg: "HS256" is not allowed/);
  }
});

test('an unknown kid is fetched again at most once per 30 s per issuer, whatever the burst; a rotated key is then found', async () => {
  let skewMs = 0;
  const v = new JwtVerifier([spec], { now: () => Date.now() + skewMs });
  await v.verify(await sign(claims()));
  const before = idp.jwksFetches();
  const rogue = await generateKeyPair('ES256');
  const forged = await Promise.all(
    Array.from({ length: 1000 }, (_, i) => new SignJWT(claims()).setProtectedHeader({ alg: 'ES256', kid: `forged-${i}` }).sign(rogue.privateKey)),
  );
  const answers = await Promise.all(forged.map((t) => refusal(v.verify(t))));
  assert.ok(answers.every((r) => r.code === 'UNAUTHENTICATED' && /^kid:/.test(r.message)));
  assert.ok(idp.jwksFetches() - before <= 1, `${idp.jwksFetches() - before} JWKS fetches for one burst`);
  // The IdP rotates to a new key: within the 30 s its tokens are refused (the refetch was spent) …
  const rotated = await idp.addKey({ kid: 'rotated-2' });
  const token = await rotated(claims());
  assert.match((await refusal(v.verify(token))).message, /^kid:/);
  // … and once 30 s have passed, the first token naming it fetches the keys again, once.
  skewMs = 31_000;
  const fetched = idp.jwksFetches();
  const ok = await Promise.all([v.verify(token), v.verify(await rotated(claims({ sub: 'u-2' })))]);
  assert.equal(ok.length, 2);
  assert.equal(idp.jwksFetches() - fetched, 1);
});

test('a verifier-only issuer entry accepts a token only for the audience each verification names', async () => {
  const [bare] = checkJwtIssuers([{ issuer: idp.issuer }], { verifierOnly: true }) as [JwtIssuerSpec];
  const v = new JwtVerifier([bare]);
  assert.match((await refusal(v.verify(await sign(claims())))).message, /^aud: no audience/);
  assert.equal((await v.verify(await sign(claims({ aud: 'https://gw.test/mcp/a' })), ['https://gw.test/mcp/a'])).claims.sub, 'u-1');
  assert.match((await refusal(v.verify(await sign(claims({ aud: 'https://gw.test/mcp/a' })), ['https://gw.test/mcp/b']))).message, /^aud:/);
});

test('discovery falls back to RFC 8414 metadata, and refuses metadata naming another issuer', async () => {
  // An authorization server that publishes only RFC 8414 metadata (its keys: the test IdP's JWKS).
  let claimedIssuer = '';
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/.well-known/oauth-authorization-server')) {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ issuer: claimedIssuer, jwks_uri: `${idp.issuer}/jwks` }));
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}/as`;
    const [as] = checkJwtIssuers([{ issuer, audience: AUD, roles: {} }]) as [JwtIssuerSpec];
    claimedIssuer = 'https://someone-else.example';
    assert.equal((await refusal(new JwtVerifier([as]).verify(await sign(claims({ iss: issuer }))))).code, 'IDENTITY_UNAVAILABLE');
    claimedIssuer = issuer;
    assert.equal((await new JwtVerifier([as]).verify(await sign(claims({ iss: issuer })))).claims.iss, issuer);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test('the IdP down: keys held keep working; with none held, 503 IDENTITY_UNAVAILABLE', async () => {
  const down = await startIdp({ clients: [{ id: 'agent-7', scope: 'writ.pep' }] });
  const [downSpec] = checkJwtIssuers([
    { issuer: down.issuer, audience: AUD, roles: { 'writ.pep': { role: 'pep', actor: { type: 'Agent', claim: 'client_id' } } } },
  ]) as [JwtIssuerSpec];
  const held = new JwtVerifier([downSpec]);
  const first = await down.clientToken('agent-7', { scope: 'writ.pep', resource: AUD });
  const second = await down.clientToken('agent-7', { scope: 'writ.pep', resource: AUD });
  await held.verify(first);
  const cold = new JwtVerifier([downSpec]);
  await down.stop();
  assert.equal((await held.verify(second)).claims.client_id, 'agent-7');
  const r = await refusal(cold.verify(second));
  assert.equal(r.code, 'IDENTITY_UNAVAILABLE');
  assert.equal(r.status, 503);
});

test('a delegated identity token names the requester (sub) and the actor (act.sub, else client_id, else azp)', async () => {
  const v = new JwtVerifier([{ ...spec, identity_types: { requester: 'Employee', actor: 'Agent' } }]);
  const id = async (extra: Record<string, unknown>) =>
    delegatedIdentityOf(await v.verify(await sign(claims({ aud: 'https://gw.test', ...extra })), ['https://gw.test']));
  assert.deepEqual((await id({ act: { sub: 'agent-a' }, client_id: 'c' })).actor, { type: 'Agent', id: 'agent-a' });
  assert.deepEqual((await id({ client_id: 'c', azp: 'z' })).actor, { type: 'Agent', id: 'c' });
  const viaAzp = await id({ azp: 'z' });
  assert.deepEqual(viaAzp.actor, { type: 'Agent', id: 'z' });
  assert.deepEqual(viaAzp.requester, { type: 'Employee', id: 'u-1' });
  assert.match((await refusal(id({}))).message, /^act:/);
  // The audience asked for is the one checked: the issuer's own audience does not pass for it.
  assert.match((await refusal(v.verify(await sign(claims()), ['https://gw.test']))).message, /^aud:/);
});

test('issuer URLs must be https except on loopback; the roles are checked', () => {
  const bad = (v: unknown) => assert.throws(() => checkJwtIssuers([v]), IssuerConfigError);
  bad({ issuer: 'http://idp.example.com', audience: 'a', roles: {} });
  bad({ issuer: 'https://idp.example.com', audience: 'a', jwks_uri: 'http://idp.example.com/jwks', roles: {} });
  bad({ issuer: 'https://idp.example.com', audience: 'a', roles: { s: { role: 'pep' } } });
  bad({ issuer: 'https://idp.example.com', audience: 'a', roles: { s: { role: 'root' } } });
  bad({ issuer: 'https://idp.example.com', roles: {} });
  assert.equal(checkJwtIssuers([{ issuer: 'http://localhost:9/x', audience: 'a', roles: { s: { role: 'pep', delegated: { audiences: ['g'] } } } }]).length, 1);
  // A verifier-only door (the gateway) names only the issuer; the audience comes with each verification.
  bad({ issuer: 'https://idp.example.com' });
  assert.deepEqual(checkJwtIssuers([{ issuer: 'https://idp.example.com' }], { verifierOnly: true })[0]!.roles, {});
});
