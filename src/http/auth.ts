/**
 * Bearer-token authentication. Tokens are compared as SHA-256 digests with timingSafeEqual, so neither
 * plain nor hashed configured tokens leak through timing; every configured token is compared, always.
 */
import { createHash, hash, timingSafeEqual } from 'node:crypto';
import { WritError } from '../errors.js';
import type { Role, TokenSpec } from '../config/config.js';
import { looksLikeJwt, type JwtVerifier } from '../identity/verify.js';
import { grantedCallers } from '../identity/grants.js';
import type { Caller } from '../identity/caller.js';

interface Entry {
  digest: Buffer;
  caller: Caller;
}

/** Authorization header values already authenticated, remembered up to this many (then forgotten). */
const KNOWN_HEADERS = 1024;

export class TokenTable {
  private readonly entries: Entry[];
  /**
   * Header values that authenticated, and their callers: a PEP sends the same header on every call,
   * and hashing it and comparing it against every token each time was ~2 % of a decision's CPU.
   * Only successes are kept (an attacker's guesses cannot fill it); a lookup by the presented value
   * tells its timing only to someone who already holds that token.
   */
  private readonly known = new Map<string, Caller>();

  constructor(specs: TokenSpec[]) {
    this.entries = specs.map((s) => {
      const digest = s.token !== undefined ? createHash('sha256').update(s.token, 'utf8').digest() : Buffer.from(s.token_sha256!, 'hex');
      const caller: Caller = { role: s.role, name: s.name ?? `sha256:${digest.toString('hex').slice(0, 16)}` };
      if (s.actor) caller.actor = s.actor;
      if (s.principal) caller.principal = s.principal;
      if (s.delegated) caller.delegated = s.delegated;
      return { digest, caller };
    });
  }

  /** The caller of an `Authorization` header value; 401 UNAUTHENTICATED when absent or unknown. */
  authenticate(header: string | undefined): Caller {
    const found = this.find(header);
    if (found === undefined) throw new WritError('UNAUTHENTICATED', bearerOf(header) === undefined ? 'a bearer token is required' : 'unknown bearer token');
    return found;
  }

  /** The configured caller of an `Authorization` header value, or undefined. */
  find(header: string | undefined): Caller | undefined {
    const remembered = header === undefined ? undefined : this.known.get(header);
    if (remembered !== undefined) return remembered;
    const token = bearerOf(header);
    if (token === undefined) return undefined;
    const presented = hash('sha256', token, 'buffer');
    let found: Caller | undefined;
    for (const e of this.entries) {
      if (timingSafeEqual(presented, e.digest) && !found) found = e.caller;
    }
    if (!found) return undefined;
    if (this.known.size >= KNOWN_HEADERS) this.known.clear();
    this.known.set(header!, found);
    return found;
  }
}

/** The token of a well-formed `Bearer` header value, else undefined. */
export function bearerOf(header: string | undefined): string | undefined {
  const m = header ? /^Bearer[ ]+(\S+)\s*$/i.exec(header) : null;
  return m ? m[1]! : undefined;
}

/**
 * Every credential writ accepts, in one place (docs/protocol.md §8, §13): static bearer tokens, JWT
 * access tokens of the configured issuers, client certificates. Answers every role the credential
 * holds (a JWT may hold several); `requireRole` then picks the one a route admits.
 */
export class Authenticator {
  constructor(
    readonly tokens: TokenTable,
    readonly jwt?: JwtVerifier,
  ) {}

  /**
   * `certificate`: the caller a verified client certificate names (src/http/client-certs.ts), when the
   * connection presented one. A bearer token, when sent, is what authenticates (a bad one is 401
   * even beside a good certificate).
   */
  async authenticate(header: string | undefined, certificate?: Caller): Promise<Caller[]> {
    const known = this.tokens.find(header);
    if (known !== undefined) return [known];
    if (header === undefined || header === '') {
      if (certificate !== undefined) return [certificate];
      throw new WritError('UNAUTHENTICATED', 'a bearer token is required');
    }
    const token = bearerOf(header);
    if (token === undefined) throw new WritError('UNAUTHENTICATED', 'a bearer token is required');
    if (this.jwt && looksLikeJwt(token)) {
      // Named in records (§17) by a digest prefix of the token, as a static token is.
      const name = `sha256:${createHash('sha256').update(token, 'utf8').digest('hex').slice(0, 16)}`;
      return grantedCallers(await this.jwt.verify(token)).map((g) => ({ ...g, name }));
    }
    throw new WritError('UNAUTHENTICATED', 'unknown bearer token');
  }

  /** The caller of a static token, synchronously (the fronts' fast path); undefined for anything else. */
  staticCaller(header: string | undefined): Caller | undefined {
    return this.tokens.find(header);
  }
}

/**
 * The caller as the route admits it: the first of its roles the route names; 403 FORBIDDEN_ROLE when
 * it holds none of them (a verified token whose scopes grant no role holds none at all).
 */
export function requireRole(callers: Caller | readonly Caller[], roles: readonly Role[]): Caller {
  const held: readonly Caller[] = Array.isArray(callers) ? callers : [callers as Caller];
  const admitted = held.find((c) => roles.includes(c.role));
  if (admitted !== undefined) return admitted;
  const holds = held.length === 0 ? 'the token grants no writ role' : `not ${held.map((c) => c.role).join(', ')}`;
  throw new WritError('FORBIDDEN_ROLE', `this route admits the role(s) ${roles.join(', ')}, ${holds}`);
}
