/**
 * The gateway as an OAuth 2.1 resource server (docs/protocol.md §14, the MCP authorization spec):
 * RFC 9728 metadata per server, RFC 6750 challenges, RFC 8707 audiences, scopes, Origin checks. Token
 * verification is §13's (JwtVerifier), with the server's resource URI as the only audience.
 */
import { isWritError } from '../errors.js';
import type { JwtVerifier, VerifiedToken } from '../identity/verify.js';
import { resourceOf, type GatewayConfig } from './config.js';

/** The client a request comes from: its verified token, and the key sessions and tasks are bound to. */
export interface ClientIdentity {
  token: string;
  verified: VerifiedToken;
  /** Issuer, subject, client and actor: two tokens of one user and agent have one owner. */
  owner: string;
}

export type Refusal = { status: 401 | 403 | 503; reason: string; code: string; message: string; headers: Record<string, string> };

export function metadataUrl(cfg: Pick<GatewayConfig, 'publicUrl'>, name: string): string {
  const u = new URL(cfg.publicUrl);
  // RFC 9728 §3.1: the well-known segment goes between the host and the resource's path.
  return `${u.origin}/.well-known/oauth-protected-resource${u.pathname.replace(/\/$/, '')}/mcp/${name}`;
}

/** RFC 9728 protected-resource metadata of one server. */
export function resourceMetadata(cfg: GatewayConfig, name: string): Record<string, unknown> {
  const m: Record<string, unknown> = {
    resource: resourceOf(cfg, name),
    authorization_servers: cfg.authorizationServers,
    bearer_methods_supported: ['header'],
    resource_name: `${name} (through writ gateway)`,
  };
  if (cfg.scopesSupported) m.scopes_supported = cfg.scopesSupported;
  return m;
}

/** A quoted-string value of a challenge parameter (RFC 9110 §5.6.4): no quote, backslash or control. */
function quoted(v: string): string {
  return `"${v.replace(/[\\"\x00-\x1f\x7f]/g, ' ')}"`;
}

function challenge(cfg: GatewayConfig, name: string, extra: Record<string, string>): string {
  const params: Record<string, string> = { ...extra, resource_metadata: metadataUrl(cfg, name) };
  if (cfg.scopesSupported?.length && params.scope === undefined) params.scope = cfg.scopesSupported.join(' ');
  return (
    'Bearer ' +
    Object.entries(params)
      .map(([k, v]) => `${k}=${quoted(v)}`)
      .join(', ')
  );
}

/** An Origin header the gateway refuses (DNS rebinding, a page of another site): 403; none sent is fine. */
export function originRefusal(cfg: GatewayConfig, origin: string | undefined): Refusal | undefined {
  if (origin === undefined) return undefined;
  const allowed = cfg.allowedOrigins ?? [cfg.publicOrigin];
  if (allowed.includes(origin)) return undefined;
  return { status: 403, reason: 'origin', code: 'FORBIDDEN_ORIGIN', message: `the Origin ${origin.slice(0, 200)} is not allowed`, headers: {} };
}

/** Who the request is from, or why it is refused (401 with a challenge, 403 insufficient_scope, 503). */
export async function authenticateClient(
  cfg: GatewayConfig,
  verifier: JwtVerifier,
  name: string,
  authorization: string | undefined,
): Promise<ClientIdentity | Refusal> {
  const m = authorization === undefined ? null : /^Bearer +([^\s]+) *$/i.exec(authorization);
  if (!m) {
    const message = authorization === undefined ? 'an access token is required' : 'the Authorization header is not a bearer token';
    const extra: Record<string, string> = authorization === undefined ? {} : { error: 'invalid_request', error_description: message };
    return {
      status: 401,
      reason: authorization === undefined ? 'no_token' : 'malformed',
      code: 'UNAUTHENTICATED',
      message,
      headers: { 'www-authenticate': challenge(cfg, name, extra) },
    };
  }
  const token = m[1]!;
  let verified: VerifiedToken;
  try {
    verified = await verifier.verify(token, [resourceOf(cfg, name)]);
  } catch (e) {
    if (!isWritError(e)) throw e;
    if (e.code === 'IDENTITY_UNAVAILABLE')
      return { status: 503, reason: 'identity_unavailable', code: e.code, message: e.message, headers: { 'retry-after': '5' } };
    return {
      status: 401,
      reason: 'invalid_token',
      code: 'UNAUTHENTICATED',
      message: e.message,
      headers: { 'www-authenticate': challenge(cfg, name, { error: 'invalid_token', error_description: e.message }) },
    };
  }
  if (cfg.scopesSupported?.length && !verified.scopes.some((s) => cfg.scopesSupported!.includes(s))) {
    const message = `the token carries none of the scopes ${cfg.scopesSupported.join(', ')}`;
    return {
      status: 403,
      reason: 'insufficient_scope',
      code: 'INSUFFICIENT_SCOPE',
      message,
      headers: { 'www-authenticate': challenge(cfg, name, { error: 'insufficient_scope', error_description: message }) },
    };
  }
  const c = verified.claims;
  const act = c.act !== null && typeof c.act === 'object' ? (c.act as Record<string, unknown>).sub : undefined;
  const owner = JSON.stringify([c.iss, c.sub, c.client_id ?? c.azp ?? null, act ?? null]);
  return { token, verified, owner };
}
