/**
 * What a verified token may do (docs/protocol.md §13): its scopes become writ roles through its issuer's
 * `roles`, each with the entity it acts as taken from a claim; a delegated identity token names the end
 * user (requester) and the agent acting for them (actor). Pure.
 */
import type { Uid } from '../util/uid.js';
import { uidFromClaim, type Delegation, type GrantedRole } from './issuers.js';
import { invalidToken, recordIdentityOf, type RecordIdentity, type VerifiedToken } from './verify.js';

/** One role a verified identity holds, as the routes see a caller. */
export interface GrantedCaller {
  role: GrantedRole;
  actor?: Uid;
  principal?: Uid;
  delegated?: Delegation;
  identity: RecordIdentity;
}

/**
 * The roles a token's scopes grant, in the order of its issuer's `roles`; none when no scope maps
 * (the route then answers 403 FORBIDDEN_ROLE). A role whose entity claim the token lacks is a 401: the
 * IdP issued a scope without the claim it needs, and writ must not guess the entity.
 */
export function grantedCallers(v: VerifiedToken): GrantedCaller[] {
  const identity = recordIdentityOf(v.claims);
  const scopes = new Set(v.scopes);
  const callers: GrantedCaller[] = [];
  for (const [scope, grant] of Object.entries(v.spec.roles)) {
    if (!scopes.has(scope)) continue;
    const caller: GrantedCaller = { role: grant.role, identity };
    for (const member of ['actor', 'principal'] as const) {
      const from = grant[member];
      if (from === undefined) continue;
      const uid = uidFromClaim(v.claims, from);
      if (uid === undefined) throw invalidToken(`${from.claim}: scope ${scope} takes the ${member} from this claim, which the token lacks`);
      caller[member] = uid;
    }
    if (grant.delegated) caller.delegated = grant.delegated;
    callers.push(caller);
  }
  return callers;
}

/** Who a delegated request is for: the end user (`sub`) and the agent acting for them. */
export interface DelegatedIdentity {
  requester: Uid;
  actor: Uid;
  identity: RecordIdentity;
}

/**
 * RFC 8693: `act.sub` names the party acting for the subject; without it the OAuth client the token was
 * issued to (`client_id`, RFC 9068), else the authorized party (`azp`). Typed by the issuer's
 * `identity_types`.
 */
export function delegatedIdentityOf(v: VerifiedToken): DelegatedIdentity {
  const c = v.claims;
  const act = c.act as Record<string, unknown> | undefined;
  const actorId =
    act && typeof act === 'object' && typeof act.sub === 'string' && act.sub !== ''
      ? act.sub
      : typeof c.client_id === 'string' && c.client_id !== ''
        ? c.client_id
        : typeof c.azp === 'string' && c.azp !== ''
          ? c.azp
          : undefined;
  if (actorId === undefined) throw invalidToken('act: the identity token names no actor (act.sub, client_id or azp)');
  const types = v.spec.identity_types;
  return { requester: { type: types.requester, id: c.sub as string }, actor: { type: types.actor, id: actorId }, identity: recordIdentityOf(c) };
}
