/**
 * The AuthZEN PDP (docs/protocol.md §10) over the sidecar's engine, evaluator threads, entity store and
 * ledger: parse and admit (request.ts) → who may ask → evaluate each item (in order, stopping where
 * a short-circuit semantic says so) → one ledger record per evaluation, every record of a request in
 * one durable store write (group commit) → answer.
 *
 * The answer is sent only after its records are durable. If the trusted entities changed between
 * evaluation and the write, the request is evaluated again (as MCP decisions are), so a record never
 * names an entities_version older than an entity change recorded before it.
 */
import { randomUUID } from 'node:crypto';
import { WritError, isWritError } from '../errors.js';
import type { Caller } from '../http/auth.js';
import type { DecisionOutcome } from '../policy/engine.js';
import type { Sidecar } from '../server/sidecar.js';
import * as metrics from '../metrics/metrics.js';
import { StaleEntities } from '../entities/entity-store.js';
import { admitAuthzen, evaluateItems, requestInputOf, type AuthzenEvaluation, type AuthzenRequest, type PreparedAuthzen } from './request.js';

export interface AuthzenDecision {
  decision: boolean;
  context: { decision_id: string; reasons: string[]; obligations?: DecisionOutcome['obligations'] };
}

export type AuthzenAnswer = AuthzenDecision | { evaluations: AuthzenDecision[] };

/** Thrown inside the write when the entities moved since evaluation: evaluate again. */

const MAX_ATTEMPTS = 20;

function answerOf(outcome: DecisionOutcome, decisionId: string): AuthzenDecision {
  const context: AuthzenDecision['context'] = { decision_id: decisionId, reasons: outcome.reasons };
  if (outcome.decision === 'approval_required') context.obligations = outcome.obligations;
  return { decision: outcome.decision === 'allow', context };
}

/** The ledger record of one evaluation (kind `decision`, `api: "authzen"`, no execution_id). */
function recordOf(
  e: AuthzenEvaluation, outcome: DecisionOutcome, decisionId: string, caller: Caller,
  versions: { policy_version: string; entities_version: string }, now: Date,
): { kind: string } & Record<string, unknown> {
  return {
    kind: 'decision',
    api: 'authzen',
    decision_id: decisionId,
    subject: e.subject,
    action: e.action,
    resource: e.resource,
    context: e.context,
    caller: caller.actor === undefined ? { role: caller.role } : { role: caller.role, actor: caller.actor },
    decision: outcome.decision,
    reasons: outcome.reasons,
    errors: outcome.errors,
    obligations: outcome.obligations,
    ...versions,
    now: now.toISOString(),
  };
}

/** What one request's items were evaluated with, and what came of them. */
interface Evaluated {
  outcomes: DecisionOutcome[];
  policyVersion: string;
  entitiesVersion: string;
  now: Date;
}

function answerTo(request: AuthzenRequest, decisions: AuthzenDecision[]): AuthzenAnswer {
  return request.single ? decisions[0]! : { evaluations: decisions };
}

export class AuthzenService {
  constructor(private readonly sidecar: Sidecar) {}

  /** POST /access/v1/evaluation (`batch` false) and /access/v1/evaluations (`batch` true). */
  async evaluate(caller: Caller, text: string, batch: boolean): Promise<AuthzenAnswer> {
    const request = admitAuthzen(caller, text, batch);
    return answerTo(request, await this.decideAndRecord(caller, request));
  }

  /**
   * Records what a front evaluated (PreparedAuthzen) and answers it — the same records and answer as
   * evaluate() gives, unless the policy set or entities moved since: then evaluate() itself.
   */
  async recordPrepared(caller: Caller, text: string, batch: boolean, p: PreparedAuthzen): Promise<AuthzenAnswer> {
    const sidecar = this.sidecar;
    const request = admitAuthzen(caller, text, batch);
    if (p.policyVersion !== sidecar.engine.policyVersion || p.entitiesVersion !== sidecar.entities.version || p.outcomes.length > request.evaluations.length) {
      return this.evaluate(caller, text, batch);
    }
    try {
      return answerTo(request, await this.record(caller, request, { ...p, now: new Date(p.now) }));
    } catch (e) {
      if (!(e instanceof StaleEntities)) throw e;
      if (sidecar.entities.version === p.entitiesVersion) await sidecar.entities.reload();
      return this.evaluate(caller, text, batch);
    }
  }

  private async decideAndRecord(caller: Caller, request: AuthzenRequest): Promise<AuthzenDecision[]> {
    const sidecar = this.sidecar;
    // On a shared (PostgreSQL) store another replica may have moved the entities: start from the
    // stored version, and the write below re-checks it under the store's lock (docs/protocol.md §9).
    await sidecar.entities.refresh();
    for (let attempt = 0; ; attempt++) {
      const engine = sidecar.engine;
      const entitiesVersion = sidecar.entities.version;
      const now = sidecar.now();
      const decide = (e: AuthzenEvaluation) => sidecar.evaluator.decideRequest(engine, requestInputOf(e, sidecar.entities));
      const outcomes = await evaluateItems(request, decide);
      try {
        return await this.record(caller, request, { outcomes, policyVersion: engine.policyVersion, entitiesVersion, now });
      } catch (e) {
        if (!(e instanceof StaleEntities)) throw e;
        if (attempt >= MAX_ATTEMPTS) throw new WritError('STORE_UNAVAILABLE', 'the entities keep changing; retry later');
        if (sidecar.entities.version === entitiesVersion) await sidecar.entities.reload();
      }
    }
  }

  /**
   * One ledger record per outcome, all in one durable write (group commit), and their answers. Throws
   * StaleEntities when the entities moved since the evaluation (the caller evaluates again), else a
   * WritError.
   */
  private async record(caller: Caller, request: AuthzenRequest, evaluated: Evaluated): Promise<AuthzenDecision[]> {
    const sidecar = this.sidecar;
    const { outcomes, entitiesVersion, now } = evaluated;
    const ids = outcomes.map(() => randomUUID());
    const versions = { policy_version: evaluated.policyVersion, entities_version: entitiesVersion };
    try {
      await sidecar.store.write((tx) => {
        if (sidecar.entities.version !== entitiesVersion) throw new StaleEntities();
        sidecar.entities.checkFresh(tx);
        outcomes.forEach((outcome, i) => tx.append(recordOf(request.evaluations[i]!, outcome, ids[i]!, caller, versions, now)));
      }, { label: 'authzen' });
    } catch (e) {
      if (e instanceof StaleEntities || isWritError(e)) throw e;
      throw new WritError('STORE_UNAVAILABLE', `the store could not complete the write: ${(e as Error)?.message ?? e}`, { cause: e });
    }
    for (const outcome of outcomes) metrics.authzenEvaluationsTotal.inc({ decision: outcome.decision });
    return outcomes.map((outcome, i) => answerOf(outcome, ids[i]!));
  }
}
