/**
 * A real OpenID Provider for the tests (oidc-provider, a certified implementation) on 127.0.0.1: client
 * credentials grant, resource indicators (RFC 8707) and JWT access tokens (RFC 9068), so `iss`, `aud`,
 * `scope`, `client_id` and the signing keys are the IdP's own. Tokens an IdP cannot be asked for in a
 * client credentials grant (RFC 8693 `act`, a key it rotated to) are minted by the test with jose and a
 * key this IdP's JWKS serves beside its own (`addKey`).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload } from 'jose';
import Provider from 'oidc-provider';

export interface TestIdp {
  issuer: string;
  /** JWKS documents served so far. */
  jwksFetches(): number;
  /** An access token from the IdP's token endpoint (client credentials). */
  clientToken(client: string, o: { scope: string; resource: string }): Promise<string>;
  /** Adds a key to the served JWKS and returns a signer with it (kid given, or a fresh one). */
  addKey(o?: { kid?: string; alg?: 'ES256' | 'RS256' | 'PS256' | 'EdDSA' }): Promise<(claims: JWTPayload, header?: Record<string, unknown>) => Promise<string>>;
  /** Adds a raw JWK to the served set as is (e.g. a symmetric key). */
  serveJwk(jwk: JWK): void;
  stop(): Promise<void>;
}

export const CLIENT_SECRET = 'test-secret-that-is-long-enough-for-hs256-0123456789';

export async function startIdp(o: { clients: Array<{ id: string; scope: string }>; port?: number }): Promise<TestIdp> {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const signing = { ...(await exportJWK(privateKey)), kid: 'idp-1', alg: 'ES256', use: 'sig' };
  const extra: JWK[] = [];
  let fetches = 0;
  const server: Server = createServer();
  await new Promise<void>((r) => server.listen(o.port ?? 0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: o.clients.map((c) => ({
      client_id: c.id,
      client_secret: CLIENT_SECRET,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      scope: c.scope,
      id_token_signed_response_alg: 'ES256',
    })),
    scopes: [...new Set(o.clients.flatMap((c) => c.scope.split(' ')))],
    jwks: { keys: [signing] },
    ttl: { ClientCredentials: 300 },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined as unknown as string,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string) => ({
          scope: o.clients.flatMap((c) => c.scope.split(' ')).join(' '),
          audience: resource,
          accessTokenTTL: 300,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
  });
  // The JWKS is served here, counted, with the keys tests add beside the IdP's own public key.
  provider.use(async (ctx: any, next: () => Promise<void>) => {
    if (ctx.path === '/jwks') {
      fetches++;
      const { d: _d, ...pub } = signing;
      ctx.type = 'application/jwk-set+json';
      ctx.body = JSON.stringify({ keys: [pub, ...extra] });
      return;
    }
    await next();
  });
  server.on('request', provider.callback());

  return {
    issuer,
    jwksFetches: () => fetches,
    async clientToken(client, t) {
      const res = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${client}:${CLIENT_SECRET}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope: t.scope, resource: t.resource }).toString(),
      });
      const body = (await res.json()) as { access_token?: string };
      if (!res.ok || !body.access_token) throw new Error(`token endpoint: ${res.status} ${JSON.stringify(body)}`);
      return body.access_token;
    },
    async addKey(k = {}) {
      const alg = k.alg ?? 'ES256';
      const kid = k.kid ?? `test-${extra.length + 1}`;
      const pair = await generateKeyPair(alg, { extractable: true });
      extra.push({ ...(await exportJWK(pair.publicKey)), kid, alg, use: 'sig' });
      return (claims, header = {}) => new SignJWT(claims).setProtectedHeader({ alg, kid, typ: 'at+jwt', ...header }).sign(pair.privateKey);
    },
    serveJwk(jwk) {
      extra.push(jwk);
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
