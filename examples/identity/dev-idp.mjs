#!/usr/bin/env node
// A development OpenID Provider for trying writ's JWT callers (docs/identity.md, "Trying it with a dev IdP"): oidc-provider
// (a devDependency of writ) on http://127.0.0.1:8780, issuing JWT access tokens by the client credentials
// grant with resource indicators (RFC 8707), so `aud` is the resource asked for. One client per caller of
// the walkthrough; every client's secret is `dev-secret`. Never for production.
import Provider from 'oidc-provider';

const port = Number(process.env.PORT ?? 8780);
const clients = {
  'offboarding-agent-prod': 'writ.pep',
  'hr-5519': 'writ.approve',
  auditor: 'writ.audit',
  ops: 'writ.admin',
};
const scopes = [...new Set(Object.values(clients))];
const provider = new Provider(`http://127.0.0.1:${port}`, {
  clients: Object.entries(clients).map(([client_id, scope]) => ({
    client_id,
    client_secret: 'dev-secret',
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    scope,
    id_token_signed_response_alg: 'RS256',
  })),
  scopes,
  ttl: { ClientCredentials: 3600 },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => ({ scope: scopes.join(' '), audience: resource, accessTokenTTL: 3600, accessTokenFormat: 'jwt' }),
    },
  },
});
provider.listen(port, '127.0.0.1', () => console.log(`dev IdP: issuer http://127.0.0.1:${port}`));
