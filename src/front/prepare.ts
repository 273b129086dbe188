/**
 * What an HTTP front does with a fresh decision before the write (front-thread.ts): admission,
 * evaluation against the policy set and entities it holds, and the decision record's canonical
 * members — everything of DecisionService.decide for an execution id not seen before, except the write that
 * DecisionService.commitPending does on the ledger writer. Kept apart from the thread so it can be tested
 * in-process against the sidecar itself.
 */
import { randomUUID } from 'node:crypto';
import type { AdmissionLimits } from '../binding/limits.js';
import type { Caller } from '../identity/caller.js';
import type { DecisionInput, DecisionOutcome, PolicyEngine } from '../policy/engine.js';
import type { EntitySource } from '../policy/entities.js';
import { stateAfterDecision } from '../executions/machine.js';
import { noPrior } from '../executions/prior.js';
import { presealMembers } from '../store/seal.js';
import {
  admitDecision,
  decisionRecordFields,
  decisionResponseOf,
  evaluationInputOf,
  pdpNow,
  type AdmittedDecision,
  type DecisionResponse,
  type PendingDecisionResult,
  type PendingDecision,
} from '../pdp/admission.js';

export interface FrontState {
  engine: PolicyEngine;
  entities: EntitySource;
  clockFile: string | null;
  /** The sidecar's admission limits (config admission_limits): a front admits no wider body than it would. */
  limits: AdmissionLimits;
  /** Where Cedar runs: the front's evaluator pool, or the engine in-process. */
  evaluate(engine: PolicyEngine, input: DecisionInput): DecisionOutcome | Promise<DecisionOutcome>;
}

export interface FrontDecision {
  admitted: AdmittedDecision;
  outcome: DecisionOutcome;
  decisionId: string;
  state: string;
  policyVersion: string;
  entitiesVersion: string;
  /** What the ledger writer commits. */
  ask: PendingDecision;
}

/**
 * Prepares a decision for the writer, or undefined when only the sidecar can decide it (a `supersedes`
 * reads another execution's state). Throws what admission throws; the caller then lets the sidecar
 * decide the text, so the refusal is the sidecar's own.
 */
export async function prepareDecision(front: FrontState, caller: Caller, text: string, startedAt: number): Promise<FrontDecision | undefined> {
  const admitted = admitDecision(caller, text, front.limits);
  if (typeof admitted.envelope.supersedes === 'string') return undefined;
  const now = pdpNow(front.clockFile);
  const { actor, server, tool, envelope, phase, bound } = admitted;
  const subject = envelope.subject;
  const { engine, entities } = front;
  // A fresh execution has no approvals; were this id not fresh, the writer decides it again. Nor, as far
  // as the front knows, other executions of this call: the writer checks that where a policy counts them.
  const outcome = await front.evaluate(engine, evaluationInputOf(admitted, { now, approvals: [], prior: noPrior(), entities }));
  const decisionId = randomUUID();
  const state = stateAfterDecision(phase, outcome.decision);
  const policyVersion = engine.policyVersion;
  const entitiesVersion = entities.version;
  const fields = decisionRecordFields(admitted, { decisionId, outcome, views: [], policyVersion, entitiesVersion, now, state });
  const { parts } = presealMembers(fields);
  const ask: PendingDecision = {
    caller,
    text,
    key: admitted.key,
    actor,
    executionId: admitted.executionId,
    phase,
    server,
    tool,
    subject,
    binding: bound.binding,
    envDigest: admitted.envDigest,
    decision: outcome.decision,
    state,
    policyVersion,
    entitiesVersion,
    parts: [...parts],
    startedAt,
    readsPrior: engine.readsPrior(server, tool),
    now: now.toISOString(),
    approverGroups: outcome.obligations.map((o) => o.approver_group),
    taskId: envelope.task_id,
    ...(admitted.traceId !== undefined ? { traceId: admitted.traceId } : {}),
  };
  return { admitted, outcome, decisionId, state, policyVersion, entitiesVersion, ask };
}

/** The answer to a prepared decision, once the writer has committed it (or decided it again). */
export function frontDecisionAnswer(prepared: FrontDecision, commit: PendingDecisionResult): DecisionResponse {
  if ('response' in commit) return commit.response;
  const { admitted, decisionId, outcome, policyVersion, entitiesVersion, state } = prepared;
  return decisionResponseOf(admitted, { decisionId, outcome, policyVersion, entitiesVersion, state }, commit.record);
}
