/**
 * Tool visibility (docs/protocol.md §15): may some call of a tool be allowed, or need approval, for this
 * actor, requester and subject, whatever its arguments and the rest of the context? Answered by Cedar's
 * partial evaluation with every other context member unknown.
 *
 * A tool is hidden only when that is certain: Cedar's partial answer is a definite `deny` for every
 * context the call could bring, and again with the `@requires_approval` forbids left out (an approval
 * could lift those). Optional context members (`execute_after`, `approver`, …) may be absent or present;
 * a policy can test that with `has`, and a forbid that reads an absent member errors and does not apply,
 * so every combination of the optional members the policies name is evaluated. Anything else — a
 * residual that depends on the unknowns, a Cedar failure — keeps the tool listed. Hiding is a courtesy
 * to the agent, never a decision: a call of a hidden tool is decided as any call.
 */

/** Context members a writ decision always carries, besides requester, server, tool and phase. */
const ALWAYS_UNKNOWN = ['task_id', 'purpose', 'binding', 'arguments', 'evidence_refs', 'now', 'approvals'] as const;
/** Context members a decision may or may not carry (§2, §17). */
export const OPTIONAL_CONTEXT_MEMBERS = ['execute_after', 'authoritative_event', 'approver', 'supersedes', 'prior'] as const;

const unknown = (name: string) => ({ __extn: { fn: 'unknown', arg: `context.${name}` } });

/**
 * The contexts to evaluate a tool's visibility on: requester, server, tool and phase known (`execute`,
 * the phase a call runs under), every other member unknown; one context per combination of the
 * optional members that `mentioned` says some policy names (a member no policy names changes nothing).
 */
export function visibilityContexts(
  requester: { type: string; id: string },
  server: string,
  tool: string,
  mentioned: (member: string) => boolean,
): Array<Record<string, unknown>> {
  const base: Record<string, unknown> = { requester: { __entity: { type: requester.type, id: requester.id } }, server, tool, phase: 'execute' };
  for (const name of ALWAYS_UNKNOWN) base[name] = unknown(name);
  let contexts = [base];
  for (const name of OPTIONAL_CONTEXT_MEMBERS) {
    if (!mentioned(name)) continue;
    contexts = contexts.flatMap((c) => [c, { ...c, [name]: unknown(name) }]);
  }
  return contexts;
}

/** Whether policy text names a context member (a conservative test: any identifier or string of that name). */
export function namesMember(policyTexts: Iterable<string>, member: string): boolean {
  const re = new RegExp(`(^|[^A-Za-z0-9_])${member}([^A-Za-z0-9_]|$)`);
  for (const text of policyTexts) if (re.test(text)) return true;
  return false;
}
