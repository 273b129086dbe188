/**
 * Bearer-token authentication. Tokens are compared as SHA-256 digests with timingSafeEqual, so neither
 * plain nor hashed configured tokens leak through timing; every configured token is compared, always.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { WritError } from '../errors.js';
import type { Role, TokenSpec } from '../config/config.js';
import type { Uid } from '../util/uid.js';

export interface Caller {
  role: Role;
  actor?: Uid;
  principal?: Uid;
}

interface Entry {
  digest: Buffer;
  caller: Caller;
}

export class TokenTable {
  private readonly entries: Entry[];

  constructor(specs: TokenSpec[]) {
    this.entries = specs.map((s) => {
      const digest = s.token !== undefined ? createHash('sha256').update(s.token, 'utf8').digest() : Buffer.from(s.token_sha256!, 'hex');
      const caller: Caller = { role: s.role };
      if (s.actor) caller.actor = s.actor;
      if (s.principal) caller.principal = s.principal;
      return { digest, caller };
    });
  }

  /** The caller of an `Authorization` header value; 401 UNAUTHENTICATED when absent or unknown. */
  authenticate(header: string | undefined): Caller {
    const m = header ? /^Bearer[ ]+(\S+)\s*$/i.exec(header) : null;
    if (!m) throw new WritError('UNAUTHENTICATED', 'a bearer token is required');
    const presented = createHash('sha256').update(m[1]!, 'utf8').digest();
    let found: Caller | undefined;
    for (const e of this.entries) {
      if (timingSafeEqual(presented, e.digest) && !found) found = e.caller;
    }
    if (!found) throw new WritError('UNAUTHENTICATED', 'unknown bearer token');
    return found;
  }
}

/** 403 FORBIDDEN_ROLE unless the caller holds one of the route's roles. */
export function requireRole(caller: Caller, roles: readonly Role[]): void {
  if (!roles.includes(caller.role)) {
    throw new WritError('FORBIDDEN_ROLE', `this route admits the role(s) ${roles.join(', ')}, not ${caller.role}`);
  }
}
