/**
 * JWT access-token verification (docs/protocol.md §13), shared by the sidecar's routes, its HTTP fronts
 * and any other door that must know who is calling (the gateway verifies its clients' tokens with the
 * same code and an audience of its own). The checks, each refusal naming the one that failed and never
 * the token:
 * - the issuer (`iss`) is one configured, exactly;
 * - the algorithm is RS256, PS256, ES256 or EdDSA (never `none`, never an HMAC), and the header names a
 *   `kid` that one of the issuer's keys carries (fetched again, rate-limited, when unknown);
 * - the signature verifies (jose);
 * - `aud` holds an audience asked for; `exp` is present and not past; `nbf` and `iat` not in the future;
 *   60 s leeway on each for clock skew.
 * Verified tokens are remembered until they expire (a PEP sends the same token on every call), so only
 * the first call pays for the signature.
 */
import { decodeJwt, decodeProtectedHeader, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import { WritError } from '../errors.js';
import { JwksCache, KeysUnavailable, type JwksCacheOptions, type KeySource } from './jwks-cache.js';
import type { JwtIssuerSpec } from './issuers.js';

export const ALLOWED_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA'] as const;
/** Clock skew allowed on exp, nbf and iat, in seconds. */
export const LEEWAY_S = 60;
/** Verified tokens remembered, at most (then forgotten all at once, as the static-token table does). */
const REMEMBERED = 4096;

/** A token that passed every check: its issuer's entry and its claims. */
export interface VerifiedToken {
  spec: JwtIssuerSpec;
  claims: JWTPayload & Record<string, unknown>;
  /** The scopes it carries (`scope`, space-separated, or `scp`, an array). */
  scopes: string[];
}

/** How a ledger record names a verified identity (§13 `identity`). */
export interface RecordIdentity {
  method: 'jwt' | 'mtls';
  iss?: string;
  sub: string;
  client_id?: string;
  act?: { sub: string; iss?: string };
  jti?: string;
  exp?: number;
}

/** 401 for a token that failed a check: the message says which; the challenge is RFC 6750's. */
export function invalidToken(message: string): WritError {
  return new WritError('UNAUTHENTICATED', message, { details: { wwwAuthenticate: 'Bearer error="invalid_token"' } });
}

/** True when a bearer value has the shape of a compact JWS (three base64url parts). */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*$/.test(token);
}

export function scopesOf(claims: Record<string, unknown>): string[] {
  if (typeof claims.scope === 'string') return claims.scope.split(' ').filter((s) => s !== '');
  if (Array.isArray(claims.scp)) return claims.scp.filter((s): s is string => typeof s === 'string');
  return [];
}

/** The `identity` a record carries for a verified token. */
export function recordIdentityOf(claims: Record<string, unknown>): RecordIdentity {
  const identity: RecordIdentity = { method: 'jwt', sub: String(claims.sub) };
  if (typeof claims.iss === 'string') identity.iss = claims.iss;
  if (typeof claims.client_id === 'string') identity.client_id = claims.client_id;
  const act = claims.act as Record<string, unknown> | undefined;
  if (act && typeof act === 'object' && typeof act.sub === 'string') identity.act = { sub: act.sub, ...(typeof act.iss === 'string' ? { iss: act.iss } : {}) };
  if (typeof claims.jti === 'string') identity.jti = claims.jti;
  if (Number.isSafeInteger(claims.exp)) identity.exp = claims.exp as number;
  return identity;
}

export interface VerifierOptions extends JwksCacheOptions {
  /** Keys from elsewhere (an HTTP front asks the sidecar's cache); default: a JwksCache of its own. */
  keys?: KeySource;
}

export class JwtVerifier {
  readonly keys: KeySource;
  /** The cache this verifier fetches into, when it has one of its own. */
  readonly cache?: JwksCache;
  readonly #issuers = new Map<string, JwtIssuerSpec>();
  readonly #now: () => number;
  /** `${audience}\n${token}` → what it verified to. */
  readonly #remembered = new Map<string, VerifiedToken>();

  constructor(issuers: JwtIssuerSpec[], o: VerifierOptions = {}) {
    for (const i of issuers) this.#issuers.set(i.issuer, i);
    this.#now = o.now ?? Date.now;
    if (o.keys) this.keys = o.keys;
    else this.keys = this.cache = new JwksCache(issuers, o);
  }

  get issuers(): JwtIssuerSpec[] {
    return [...this.#issuers.values()];
  }

  /**
   * Verifies a compact JWT for one of `audiences` (default: its issuer's own `audience`). Throws 401
   * UNAUTHENTICATED (invalidToken) naming the failed check, or 503 IDENTITY_UNAVAILABLE when the
   * issuer's keys cannot be had and none is held.
   */
  async verify(token: string, audiences?: readonly string[]): Promise<VerifiedToken> {
    const memoKey = `${audiences ? audiences.join(' ') : ''}\n${token}`;
    const nowS = this.#now() / 1000;
    const known = this.#remembered.get(memoKey);
    if (known !== undefined) {
      if ((known.claims.exp as number) > nowS - LEEWAY_S) return known;
      this.#remembered.delete(memoKey);
    }
    const verified = await this.#verify(token, audiences, nowS);
    if (this.#remembered.size >= REMEMBERED) this.#remembered.clear();
    this.#remembered.set(memoKey, verified);
    return verified;
  }

  async #verify(token: string, audiences: readonly string[] | undefined, nowS: number): Promise<VerifiedToken> {
    if (!looksLikeJwt(token)) throw invalidToken('the bearer token is not a JWT');
    let header: ReturnType<typeof decodeProtectedHeader>;
    let unverified: JWTPayload;
    try {
      header = decodeProtectedHeader(token);
      unverified = decodeJwt(token);
    } catch {
      throw invalidToken('the token is not a well-formed JWT');
    }
    const spec = typeof unverified.iss === 'string' ? this.#issuers.get(unverified.iss) : undefined;
    if (!spec)
      throw invalidToken(
        `iss: the token's issuer ${JSON.stringify(typeof unverified.iss === 'string' ? unverified.iss.slice(0, 200) : null)} is not configured`,
      );
    const alg = header.alg;
    if (!(ALLOWED_ALGORITHMS as readonly string[]).includes(alg as string)) {
      throw invalidToken(`alg: ${JSON.stringify(String(alg).slice(0, 20))} is not allowed (${ALLOWED_ALGORITHMS.join(', ')})`);
    }
    if (typeof header.kid !== 'string' || header.kid === '') throw invalidToken('kid: the token names no key');
    const kid = header.kid;
    let lookup;
    try {
      lookup = await this.keys.lookupFor(spec.issuer, kid);
    } catch (e) {
      if (e instanceof KeysUnavailable) throw new WritError('IDENTITY_UNAVAILABLE', e.message);
      throw e;
    }
    if (lookup === undefined) throw invalidToken(`kid: no key of ${spec.issuer} has the token's kid`);
    const audience = audiences ?? (spec.audience === '' ? [] : [spec.audience]);
    // An issuer entry without an audience (a verifier-only config) accepts a token only for an audience asked for.
    if (audience.length === 0) throw invalidToken('aud: no audience is configured for this issuer');
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(token, lookup, {
        issuer: spec.issuer,
        audience: [...audience],
        algorithms: [...ALLOWED_ALGORITHMS],
        clockTolerance: LEEWAY_S,
        requiredClaims: ['exp'],
        currentDate: new Date(nowS * 1000),
      }));
    } catch (e) {
      throw invalidToken(failedCheck(e, audience));
    }
    // jose checks iat only against a maximum age: a token issued in the future is refused here.
    if (claims.iat !== undefined && claims.iat > nowS + LEEWAY_S) throw invalidToken('iat: the token was issued in the future');
    if (typeof claims.sub !== 'string' || claims.sub === '') throw invalidToken('sub: the token names no subject');
    return { spec, claims: claims, scopes: scopesOf(claims) };
  }
}

/** Which check a jose error reports, in words that never quote the token. */
function failedCheck(e: unknown, audiences: readonly string[]): string {
  if (e instanceof joseErrors.JWTExpired) return e.claim === 'exp' ? 'exp: the token has expired' : `${e.claim}: ${e.reason}`;
  if (e instanceof joseErrors.JWTClaimValidationFailed) {
    switch (e.claim) {
      case 'aud':
        return `aud: the token is not for ${audiences.length === 1 ? audiences[0] : `any of ${audiences.join(', ')}`}`;
      case 'nbf':
        return 'nbf: the token is not valid yet';
      case 'exp':
        return 'exp: the token has no valid expiry';
      case 'iss':
        return 'iss: the token is not from this issuer';
      default:
        return `${e.claim}: the claim is invalid (${e.reason})`;
    }
  }
  if (e instanceof joseErrors.JWSSignatureVerificationFailed) return 'signature: the signature does not verify';
  if (e instanceof joseErrors.JOSEAlgNotAllowed) return 'alg: the algorithm is not allowed';
  if (e instanceof joseErrors.JWKSNoMatchingKey || e instanceof joseErrors.JWKSMultipleMatchingKeys) return 'kid: no single key of the issuer fits the token';
  if (e instanceof joseErrors.JOSEError) return `the token is malformed (${e.code})`;
  return 'the token could not be verified';
}
