/**
 * Who a request comes from, as the domain sees it: the authenticated caller (a static token, a JWT or a
 * client certificate; src/http/auth.ts authenticates) and what every record written on its request says
 * of it (docs/protocol.md §17).
 */
import type { Role } from '../config/config.js';
import type { Uid } from '../util/uid.js';
import type { Delegation } from './issuers.js';
import type { RecordIdentity } from './verify.js';

export interface Caller {
  role: Role;
  actor?: Uid;
  principal?: Uid;
  /** A verified identity (JWT or client certificate, docs/protocol.md §13): named by every record it causes. */
  identity?: RecordIdentity;
  /** A pep that speaks for many users: each decision carries the end user's `identity_token`. */
  delegated?: Delegation;
  /** The requester a delegated decision's identity token names (set per request, src/identity/delegation.ts). */
  requester?: Uid;
  /** Who the caller is, for the records it causes (docs/protocol.md §17): a static token entry's `name`,
   *  else `sha256:` + the first 16 hex of the presented credential's SHA-256 (the token, or the client
   *  certificate) — a handle that never reveals it. */
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

/** What every record written on a caller's request says of it: `caller` (§17) and, for a verified identity, `identity` (§13). */
export function callerFields(caller: Caller): { caller: RecordCaller; identity?: RecordIdentity } {
  return { caller: recordCaller(caller), ...identityFields(caller) };
}

/**
 * The `identity` member of a record written on this caller's request (docs/protocol.md §13): present
 * only for a verified identity (a JWT or a client certificate), spread into the record's fields.
 */
export function identityFields(caller: Caller): { identity?: RecordIdentity } {
  return caller.identity === undefined ? {} : { identity: caller.identity };
}
