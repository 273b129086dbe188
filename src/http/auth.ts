/**
 * Bearer-token authentication. Tokens are compared as SHA-256 digests with timingSafeEqual, so neither
 * plain nor hashed configured tokens leak through timing; every configured token is compared, always.
 */
import { createHash, hash, timingSafeEqual } from 'node:crypto';
import { WritError } from '../errors.js';
import type { Role, TokenSpec } from '../config/config.js';
import type { Uid } from '../util/uid.js';

export interface Caller {
  role: Role;
  actor?: Uid;
  principal?: Uid;
  /** Who the token is, for the records it causes (docs/protocol.md §17): the token entry's `name`, else
   *  `sha256:` + the first 16 hex of the token's SHA-256 — a handle that never reveals the token. */
  name: string;
}

/** The `caller` member of every record written on a caller's request (docs/protocol.md §17). */
export interface RecordCaller {
  role: Role;
  name: string;
}

/** The one place a record's `caller` is derived from an authenticated caller. */
export function recordCaller(caller: Caller): RecordCaller {
  return { role: caller.role, name: caller.name };
}

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
      return { digest, caller };
    });
  }

  /** The caller of an `Authorization` header value; 401 UNAUTHENTICATED when absent or unknown. */
  authenticate(header: string | undefined): Caller {
    const remembered = header === undefined ? undefined : this.known.get(header);
    if (remembered !== undefined) return remembered;
    const m = header ? /^Bearer[ ]+(\S+)\s*$/i.exec(header) : null;
    if (!m) throw new WritError('UNAUTHENTICATED', 'a bearer token is required');
    const presented = hash('sha256', m[1]!, 'buffer');
    let found: Caller | undefined;
    for (const e of this.entries) {
      if (timingSafeEqual(presented, e.digest) && !found) found = e.caller;
    }
    if (!found) throw new WritError('UNAUTHENTICATED', 'unknown bearer token');
    if (this.known.size >= KNOWN_HEADERS) this.known.clear();
    this.known.set(header!, found);
    return found;
  }
}

/** 403 FORBIDDEN_ROLE unless the caller holds one of the route's roles. */
export function requireRole(caller: Caller, roles: readonly Role[]): void {
  if (!roles.includes(caller.role)) {
    throw new WritError('FORBIDDEN_ROLE', `this route admits the role(s) ${roles.join(', ')}, not ${caller.role}`);
  }
}
