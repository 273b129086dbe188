/**
 * The ledger records of AuthZEN evaluations (docs/protocol.md §10): one record per evaluation, kind
 * `decision`, `api: "authzen"`, no execution_id. Pure: built where the evaluation was made — on an HTTP
 * front (src/front/) or in the sidecar — and canonicalised there (presealMembers), so the one ledger
 * writer only joins, hashes and commits them.
 */
import { randomUUID } from 'node:crypto';
import { identityFields, recordCaller, type Caller } from '../identity/caller.js';
import type { DecisionOutcome } from '../policy/engine.js';
import { presealMembers } from '../store/seal.js';
import type { AuthzenEvaluation, AuthzenRequest } from './request.js';
import type { SearchPage, SearchRequest } from './search.js';

/** One evaluation's record, sealed as far as it can be before its place in the ledger is known. */
export interface PresealedAuthzenRecord {
  /** The record's `decision_id`, which the answer names too. */
  decisionId: string;
  /** presealMembers of the record (src/store/seal.ts). */
  parts: readonly string[];
}

/**
 * What a store indexes an AuthZEN record by (src/store/layout.ts indexTermsOf): its kind only — the
 * record has no top-level actor and no execution_id (the caller's actor sits under `caller`).
 */
export const AUTHZEN_RECORD_INDEX_FIELDS: { kind: string } & Record<string, unknown> = Object.freeze({ kind: 'decision', api: 'authzen' });

/** The ledger record of one evaluation. */
export function authzenRecordOf(
  e: AuthzenEvaluation,
  outcome: DecisionOutcome,
  decisionId: string,
  caller: Caller,
  versions: { policy_version: string; entities_version: string },
  now: string,
): { kind: string } & Record<string, unknown> {
  return {
    kind: 'decision',
    api: 'authzen',
    decision_id: decisionId,
    subject: e.subject,
    action: e.action,
    resource: e.resource,
    context: e.context,
    caller: caller.actor === undefined ? recordCaller(caller) : { ...recordCaller(caller), actor: caller.actor },
    decision: outcome.decision,
    reasons: outcome.reasons,
    errors: outcome.errors,
    obligations: outcome.obligations,
    ...versions,
    now,
    ...identityFields(caller),
  };
}

/** The presealed records of a request's outcomes (outcome i is of evaluation i), each with a fresh decision id. */
export function presealAuthzenRecords(
  request: AuthzenRequest,
  outcomes: DecisionOutcome[],
  caller: Caller,
  evaluated: { policyVersion: string; entitiesVersion: string; now: string },
): PresealedAuthzenRecord[] {
  const versions = { policy_version: evaluated.policyVersion, entities_version: evaluated.entitiesVersion };
  return outcomes.map((outcome, i) => {
    const decisionId = randomUUID();
    return { decisionId, parts: presealMembers(authzenRecordOf(request.evaluations[i]!, outcome, decisionId, caller, versions, evaluated.now)).parts };
  });
}

/**
 * The ledger record of one search page (docs/protocol.md §15): kind `decision`, `api: "authzen"`, the
 * request as sent under `search.query` and how many results the page returned.
 */
export function presealAuthzenSearchRecord(
  request: SearchRequest,
  page: SearchPage,
  caller: Caller,
  evaluated: { policyVersion: string; entitiesVersion: string; now: string },
): PresealedAuthzenRecord {
  const decisionId = randomUUID();
  const record = {
    kind: 'decision',
    api: 'authzen',
    decision_id: decisionId,
    search: { kind: request.kind, query: request.query },
    results: page.results.length,
    caller: caller.actor === undefined ? recordCaller(caller) : { ...recordCaller(caller), actor: caller.actor },
    policy_version: evaluated.policyVersion,
    entities_version: evaluated.entitiesVersion,
    now: evaluated.now,
    ...identityFields(caller),
  };
  return { decisionId, parts: presealMembers(record).parts };
}
