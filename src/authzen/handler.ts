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
import { WritError, isWritError } from '../errors.js';
import type { Caller } from '../identity/caller.js';
import type { DecisionOutcome } from '../policy/engine.js';
import type { Sidecar } from '../server/sidecar.js';
import * as metrics from '../metrics/metrics.js';
import { StaleEntities } from '../entities/entity-store.js';
import { admitAuthzen, evaluateItems, requestInputOf, type AuthzenEvaluation, type AuthzenRequest, type PreparedAuthzen } from './request.js';
import { AUTHZEN_RECORD_INDEX_FIELDS, presealAuthzenRecords, presealAuthzenSearchRecord, type PresealedAuthzenRecord } from './records.js';
import { candidatesOf, parseSearchRequest, searchPage, type SearchKind, type SearchPage } from './search.js';

export interface AuthzenDecision {
  decision: boolean;
  context: { decision_id: string; reasons: string[]; obligations?: DecisionOutcome['obligations'] };
}

export type AuthzenAnswer = AuthzenDecision | { evaluations: AuthzenDecision[] };

/** Evaluations of one request again and again while the entities keep moving under it, before giving up. */
const MAX_ATTEMPTS = 20;

/** The answer's entry for one outcome. */
function decisionOf(outcome: DecisionOutcome, decisionId: string): AuthzenDecision {
  const context: AuthzenDecision['context'] = { decision_id: decisionId, reasons: outcome.reasons };
  if (outcome.decision === 'approval_required') context.obligations = outcome.obligations;
  return { decision: outcome.decision === 'allow', context };
}

/** The answer: one decision (the single route, or a batch without items), or `{ evaluations }`. */
function answerOf(single: boolean, decisions: AuthzenDecision[]): AuthzenAnswer {
  return single ? decisions[0]! : { evaluations: decisions };
}

export class AuthzenService {
  constructor(private readonly sidecar: Sidecar) {}

  /** POST /access/v1/evaluation (`batch` false) and /access/v1/evaluations (`batch` true). */
  async evaluate(caller: Caller, text: string, batch: boolean): Promise<AuthzenAnswer> {
    const request = admitAuthzen(caller, text, batch, this.sidecar.config.admission_limits);
    return answerOf(request.single, await this.decideAndRecord(caller, request));
  }

  /**
   * Records what a front evaluated and sealed (PreparedAuthzen) and answers it — the same records and
   * answer as evaluate() gives — unless the policy set or entities moved since: then evaluate() itself.
   * The front admitted the text for this caller; the sidecar admits it again only to evaluate it.
   */
  async recordPrepared(caller: Caller, text: string, batch: boolean, p: PreparedAuthzen): Promise<AuthzenAnswer> {
    const sidecar = this.sidecar;
    if (p.policyVersion !== sidecar.engine.policyVersion || p.entitiesVersion !== sidecar.entities.version || p.outcomes.length !== p.records.length) {
      return this.evaluate(caller, text, batch);
    }
    try {
      return answerOf(p.single, await this.commit(p.outcomes, p.records, p.entitiesVersion));
    } catch (e) {
      if (!(e instanceof StaleEntities)) throw e;
      await sidecar.entities.settle();
      if (sidecar.entities.version === p.entitiesVersion) await sidecar.entities.reload();
      return this.evaluate(caller, text, batch);
    }
  }

  private async decideAndRecord(caller: Caller, request: AuthzenRequest): Promise<AuthzenDecision[]> {
    return this.recordEvaluated(async (engine, entitiesVersion, now) => {
      const sidecar = this.sidecar;
      const decide = (e: AuthzenEvaluation) => sidecar.evaluator.decideRequest(engine, requestInputOf(e, sidecar.entities));
      const outcomes = await evaluateItems(request, decide);
      const evaluated = { policyVersion: engine.policyVersion, entitiesVersion, now: now.toISOString() };
      const records = presealAuthzenRecords(request, outcomes, caller, evaluated);
      return {
        records,
        answer: () => {
          for (const outcome of outcomes) metrics.authzenEvaluationsTotal.inc({ decision: outcome.decision });
          return outcomes.map((outcome, i) => decisionOf(outcome, records[i]!.decisionId));
        },
      };
    });
  }

  /** POST /access/v1/search/{subject,resource,action} (docs/protocol.md §15): one page, one ledger record. */
  async search(caller: Caller, text: string, kind: SearchKind): Promise<{ results: SearchPage['results']; page: { next_token: string } }> {
    const request = parseSearchRequest(text, kind);
    if (caller.role === 'pep') {
      // A pep token is bound to its actor: it searches only what that actor may do or reach.
      if (kind === 'subject') throw new WritError('FORBIDDEN_ROLE', 'a pep token may not search subjects (role evaluator)');
      const t = request.template.subject;
      if (caller.actor === undefined || t.type !== caller.actor.type || t.id !== caller.actor.id) {
        throw new WritError('ACTOR_MISMATCH', 'a pep token may search only with its own actor as subject', { path: '/subject' });
      }
    }
    return this.recordEvaluated(async (engine, entitiesVersion, now) => {
      const sidecar = this.sidecar;
      const candidates = candidatesOf(request, sidecar.entities.all(), engine.actionNames());
      const page = await searchPage(request, candidates, (e) => sidecar.evaluator.decideRequest(engine, requestInputOf(e, sidecar.entities)));
      const record = presealAuthzenSearchRecord(request, page, caller, { policyVersion: engine.policyVersion, entitiesVersion, now: now.toISOString() });
      return { records: [record], answer: () => ({ results: page.results, page: { next_token: page.next_token } }) };
    });
  }

  /**
   * Evaluates with the policy set, entities and clock in force and commits the records in one durable
   * write; evaluates again when the entities moved in between (as MCP decisions do), so a record never
   * names an entities_version older than an entity change recorded before it.
   */
  private async recordEvaluated<T>(
    run: (engine: Sidecar['engine'], entitiesVersion: string, now: Date) => Promise<{ records: PresealedAuthzenRecord[]; answer: () => T }>,
  ): Promise<T> {
    const sidecar = this.sidecar;
    // On a shared (PostgreSQL) store another replica may have moved the entities: start from the
    // stored version, and the write below re-checks it under the store's lock (docs/protocol.md §9).
    await sidecar.entities.refresh();
    // Entity changes are held off once they have beaten this request's write twice (EntityStore.hold()).
    return sidecar.entities.withHoldOnDemand(async (holdEntities) => {
      for (let attempt = 0; ; attempt++) {
        const entitiesVersion = sidecar.entities.version;
        const { records, answer } = await run(sidecar.engine, entitiesVersion, sidecar.now());
        try {
          await this.commitRecords(records, entitiesVersion);
          return answer();
        } catch (e) {
          if (!(e instanceof StaleEntities)) throw e;
          if (attempt >= MAX_ATTEMPTS) throw new WritError('STORE_UNAVAILABLE', 'the entities keep changing; retry later');
          if (attempt >= 1) holdEntities();
          await sidecar.entities.settle();
          if (sidecar.entities.version === entitiesVersion) await sidecar.entities.reload();
        }
      }
    });
  }

  /** The records of a request, all in one durable write (group commit). Throws StaleEntities when the entities moved since the evaluation, else a WritError. */
  private async commitRecords(records: PresealedAuthzenRecord[], entitiesVersion: string): Promise<void> {
    const sidecar = this.sidecar;
    try {
      await sidecar.store.write((tx) => {
        // An entity change staged ahead of this write (group commit) would be recorded before these
        // records while they were evaluated without it: evaluate again once it is in force.
        if (sidecar.entities.version !== entitiesVersion || !sidecar.entities.settled) throw new StaleEntities();
        sidecar.entities.checkFresh(tx);
        for (const r of records) tx.append(AUTHZEN_RECORD_INDEX_FIELDS, r);
      }, { label: 'authzen' });
    } catch (e) {
      if (e instanceof StaleEntities || isWritError(e)) throw e;
      throw new WritError('STORE_UNAVAILABLE', `the store could not complete the write: ${(e as Error)?.message ?? e}`, { cause: e });
    }
  }

  /** commitRecords of a request's outcomes, and their answers (outcome i is answered with record i's decision id). */
  private async commit(outcomes: DecisionOutcome[], records: PresealedAuthzenRecord[], entitiesVersion: string): Promise<AuthzenDecision[]> {
    await this.commitRecords(records, entitiesVersion);
    for (const outcome of outcomes) metrics.authzenEvaluationsTotal.inc({ decision: outcome.decision });
    return outcomes.map((outcome, i) => decisionOf(outcome, records[i]!.decisionId));
  }
}
