/**
 * `jwt_issuers` (docs/protocol.md §13): which identity providers writ trusts, for which audience, and
 * how a token's scopes become writ roles. Pure: the config's shape is checked here, once, at start; the
 * verifier (verify.ts) and the key cache (jwks-cache.ts) only read what passed.
 */
import { CEDAR_TYPE_NAME, type Uid } from '../util/uid.js';

export type GrantedRole = 'pep' | 'approver' | 'auditor' | 'reconciler' | 'admin' | 'evaluator';
const GRANTABLE: readonly GrantedRole[] = ['pep', 'approver', 'auditor', 'reconciler', 'admin', 'evaluator'];

/** Where a role's entity comes from: the entity type, and the claim whose string value is its id. */
export interface ClaimedUid {
  type: string;
  claim: string;
}

/** A `pep` that speaks for many users and agents: it sends each end user's token as `identity_token`. */
export interface Delegation {
  audiences: string[];
}

/** What one scope grants. */
export interface RoleGrant {
  role: GrantedRole;
  actor?: ClaimedUid;
  principal?: ClaimedUid;
  delegated?: Delegation;
}

export interface JwtIssuerSpec {
  /** The `iss` a token must carry, exactly. */
  issuer: string;
  /** The `aud` a token must hold to call writ itself (delegated identity tokens name their own). */
  audience: string;
  /** The issuer's JWKS; absent: found by discovery from the issuer. */
  jwks_uri?: string;
  /** Scope → role. */
  roles: Record<string, RoleGrant>;
  /** Types of the requester and actor a delegated identity token names. */
  identity_types: { requester: string; actor: string };
}

/** Config errors say where; the caller prefixes `config:`. */
export class IssuerConfigError extends Error {}

function fail(message: string): never {
  throw new IssuerConfigError(message);
}

const LOOPBACK_HOSTS = new Set(['localhost', '[::1]']);

/** True for a host name that cannot leave this machine (RFC 6761 localhost, 127.0.0.0/8, ::1). */
export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_HOSTS.has(hostname.toLowerCase()) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/**
 * An issuer or key URL writ may fetch from: https, or http on a loopback address only (a test IdP, a
 * sidecar IdP on the same host). Anything else would let a network attacker serve keys.
 */
export function trustedUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not a URL';
  }
  if (url.username || url.password) return 'must not carry credentials';
  if (url.hash) return 'must not carry a fragment';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && isLoopbackHost(url.hostname)) return undefined;
  return 'must be https (http only on a loopback address)';
}

function checkClaimedUid(v: unknown, where: string): ClaimedUid {
  const c = v as ClaimedUid;
  if (!c || typeof c !== 'object' || typeof c.type !== 'string' || !CEDAR_TYPE_NAME.test(c.type) || typeof c.claim !== 'string' || c.claim === '') {
    fail(`${where} must be {"type": <Cedar type name>, "claim": <claim name>}`);
  }
  return { type: c.type, claim: c.claim };
}

/** Checks a `delegated` member (of a token, a certificate entry or a JWT role). */
export function checkDelegation(v: unknown, where: string): Delegation {
  const d = v as Delegation;
  if (!d || typeof d !== 'object' || !Array.isArray(d.audiences) || d.audiences.length === 0 || !d.audiences.every((a) => typeof a === 'string' && a !== '')) {
    fail(`${where} must be {"audiences": [<audience>, …]} with at least one audience`);
  }
  return { audiences: [...d.audiences] };
}

function checkGrant(v: unknown, where: string): RoleGrant {
  const g = v as Record<string, unknown>;
  if (!g || typeof g !== 'object' || Array.isArray(g)) fail(`${where} must be an object {"role", …}`);
  if (!GRANTABLE.includes(g.role as GrantedRole)) fail(`${where}.role must be one of ${GRANTABLE.join(', ')}`);
  const grant: RoleGrant = { role: g.role as GrantedRole };
  if (g.role === 'pep') {
    if (g.delegated !== undefined) grant.delegated = checkDelegation(g.delegated, `${where}.delegated`);
    // A delegated pep takes each request's actor from the end user's token; its own actor is optional.
    if (g.actor !== undefined || grant.delegated === undefined) grant.actor = checkClaimedUid(g.actor, `${where}.actor`);
  } else if (g.actor !== undefined || g.delegated !== undefined) fail(`${where}: only a pep role names an actor or is delegated`);
  if (g.role === 'approver') grant.principal = checkClaimedUid(g.principal, `${where}.principal`);
  else if (g.principal !== undefined) fail(`${where}: only an approver role names a principal`);
  return grant;
}

/**
 * `jwt_issuers` as the config gives it, checked; throws IssuerConfigError naming the first problem.
 * `verifierOnly`: for a door that gives each verification its own audience and maps no roles (the
 * gateway verifies its clients' tokens for each upstream's resource URI): `audience` and `roles` may be
 * left out (an empty audience then accepts no token unless the caller names one).
 */
export function checkJwtIssuers(list: unknown, o: { verifierOnly?: boolean } = {}): JwtIssuerSpec[] {
  if (!Array.isArray(list)) fail('jwt_issuers must be an array');
  const seen = new Set<string>();
  return list.map((v: Record<string, unknown>, i: number): JwtIssuerSpec => {
    const where = `jwt_issuers[${i}]`;
    if (!v || typeof v !== 'object' || Array.isArray(v)) fail(`${where} must be an object`);
    if (typeof v.issuer !== 'string' || v.issuer === '') fail(`${where}.issuer must be a URL`);
    const problem = trustedUrlProblem(v.issuer);
    if (problem) fail(`${where}.issuer ${problem}`);
    // Two entries for one issuer would make which audience and roles apply depend on order.
    if (seen.has(v.issuer)) fail(`${where}.issuer is listed twice`);
    seen.add(v.issuer);
    const optional = o.verifierOnly === true;
    if (!(optional && v.audience === undefined) && (typeof v.audience !== 'string' || v.audience === '')) fail(`${where}.audience must be a non-empty string`);
    const spec: JwtIssuerSpec = { issuer: v.issuer, audience: v.audience ?? '', roles: {}, identity_types: { requester: 'User', actor: 'Agent' } };
    if (v.jwks_uri !== undefined) {
      const p = typeof v.jwks_uri === 'string' ? trustedUrlProblem(v.jwks_uri) : 'must be a URL';
      if (p) fail(`${where}.jwks_uri ${p}`);
      spec.jwks_uri = v.jwks_uri as string;
    }
    if (!(optional && v.roles === undefined) && (!v.roles || typeof v.roles !== 'object' || Array.isArray(v.roles)))
      fail(`${where}.roles must be an object {scope: {"role", …}}`);
    for (const [scope, grant] of Object.entries(v.roles ?? {})) {
      if (scope === '' || /\s/.test(scope)) fail(`${where}.roles: ${JSON.stringify(scope)} is not a scope token`);
      spec.roles[scope] = checkGrant(grant, `${where}.roles[${JSON.stringify(scope)}]`);
    }
    if (v.identity_types !== undefined) {
      const t = v.identity_types as Record<string, unknown>;
      if (!t || typeof t !== 'object') fail(`${where}.identity_types must be {"requester", "actor"}`);
      for (const k of ['requester', 'actor'] as const) {
        if (t[k] === undefined) continue;
        const name = t[k];
        if (typeof name !== 'string' || !CEDAR_TYPE_NAME.test(name)) fail(`${where}.identity_types.${k} must be a Cedar type name`);
        spec.identity_types[k] = name;
      }
    }
    const known = new Set(['issuer', 'audience', 'jwks_uri', 'roles', 'identity_types']);
    for (const k of Object.keys(v)) if (!known.has(k)) fail(`${where}: unknown member ${JSON.stringify(k)}`);
    return spec;
  });
}

/** A uid from a claim's value: a non-empty string, else undefined. */
export function uidFromClaim(claims: Record<string, unknown>, from: ClaimedUid): Uid | undefined {
  const v = claims[from.claim];
  return typeof v === 'string' && v !== '' ? { type: from.type, id: v } : undefined;
}
