/**
 * A delegated pep's decision (docs/protocol.md §13): the request carries the end user's access token as
 * `identity_token`; the caller the decision is made for is the pep with the requester and actor that
 * token names, and the token's identity is what the records name. The shells (the sidecar's route and
 * the HTTP fronts) resolve it before admission, so one admission sees the verified identity wherever the
 * request came in.
 */
import { WritError } from '../errors.js';
import type { Caller } from './caller.js';
import { delegatedIdentityOf } from './grants.js';
import type { JwtVerifier } from './verify.js';

/** The caller a decision is made for: `caller` itself unless it is delegated. */
export async function delegatedCaller(caller: Caller, text: string, jwt: JwtVerifier | undefined): Promise<Caller> {
  if (caller.delegated === undefined) return caller;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    // Admission refuses the text (INVALID_JSON, a BINDING_* code) before anything is decided.
    return caller;
  }
  const token = body !== null && typeof body === 'object' ? (body as { identity_token?: unknown }).identity_token : undefined;
  if (typeof token !== 'string' || token === '') {
    throw new WritError('UNAUTHENTICATED', "a delegated pep sends the end user's access token as identity_token", { path: '/identity_token' });
  }
  if (jwt === undefined)
    throw new WritError('UNAUTHENTICATED', 'identity_token cannot be verified: no jwt_issuers are configured', { path: '/identity_token' });
  const d = delegatedIdentityOf(await jwt.verify(token, caller.delegated.audiences));
  const { delegated: _d, ...pep } = caller;
  return { ...pep, actor: d.actor, requester: d.requester, identity: d.identity };
}
