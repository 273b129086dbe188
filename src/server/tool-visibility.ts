/**
 * POST /v1/tools/visible (docs/protocol.md §15): which of a server's tools the caller's actor could be
 * allowed, or need approval, to call for the envelope's requester and subject — answered by the policy
 * engine's partial evaluation (PolicyEngine.mayBeCalled), cached per policy version, entities version
 * and identities. Nothing is ledgered: the answer decides nothing, and a call of a hidden tool is still
 * decided (and recorded) as any call.
 */
import { WritError } from '../errors.js';
import { parseLossless, toPlain } from '../binding/index.js';
import type { Caller } from '../identity/caller.js';
import type { EntitySource } from '../policy/entities.js';
import type { PolicyEngine } from '../policy/engine.js';
import { validateToolsVisibleRequest } from '../schemas/validate.js';
import { checkDelegatedIdentity, fillDelegatedIdentity } from '../pdp/admission.js';
import { sameUid } from '../util/uid.js';

export interface ToolsVisibleAnswer {
  visible: string[];
  policy_version: string;
}

export function visibleTools(engine: PolicyEngine, entities: EntitySource, caller: Caller, text: string): ToolsVisibleAnswer {
  let body: unknown;
  try {
    body = toPlain(parseLossless(text));
  } catch (e) {
    if (e instanceof WritError) throw e;
    throw new WritError('INVALID_JSON', 'the body is not JSON');
  }
  // A delegated pep (writ gateway, docs/protocol.md §13) sends its client's identity_token, which the
  // route has verified into `caller`: the envelope's requester and actor are that token's, as in a decision.
  const delegated = caller.requester !== undefined;
  const members = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  if (delegated) {
    if (members !== undefined) delete members.identity_token;
    fillDelegatedIdentity(body, caller);
  } else if (members?.identity_token !== undefined) {
    throw new WritError('INVALID_REQUEST', 'identity_token is sent only by a delegated pep (docs/protocol.md §13)', { path: '/identity_token' });
  }
  validateToolsVisibleRequest(body);
  const { envelope, server } = body;
  if (delegated) checkDelegatedIdentity(envelope, caller);
  if (!sameUid(envelope.actor, caller.actor!)) {
    throw new WritError('ACTOR_MISMATCH', 'envelope.actor is not the actor bound to this token', { path: '/envelope/actor' });
  }
  const visible: string[] = [];
  for (const tool of new Set(body.tools)) {
    if (engine.mayBeCalled({ actor: envelope.actor, requester: envelope.requester, subject: envelope.subject, server, tool, entities })) visible.push(tool);
  }
  return { visible, policy_version: engine.policyVersion };
}
