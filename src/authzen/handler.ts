/**
 * The AuthZEN PDP (docs/protocol.md §10) over the decision core's engine, evaluator threads, entity store and
 * ledger: parse and admit (request.ts) → who may ask → evaluate each item (in order, stopping where
 * a short-circuit semantic says so) → one ledger record per evaluation, every record of a request in
 * one durable store write (group commit) → answer.
 *
 * The answer is sent only after its records are durable. If the trusted entities changed between
 * evaluation and the write, the request is evaluated again (as MCP decisions are), so a record never
 * names an entities_version older than an entity change recorded before it.
 */
import { WritError } from '../errors.js';
import type { Caller } from '../identity/caller.js';
import type { DecisionOutcome } from '../policy/engine.js';
import type { PdpCore } from '../pdp/core.js';
import * as metrics from '../metrics/metrics.js';
import { commitWithRevalidation } from '../pdp/commit.js';
import type { WriteTx } from '../store/types.js';
import { admitAuthzen, evaluateItems, requestInputOf, type AuthzenEvaluation, type AuthzenRequest, type PendingAuthzen } from './request.js';
import { AUTHZEN_RECORD_INDEX_FIELDS, presealAuthzenRecords, presealAuthzenSearchRecord, type PresealedAuthzenRecord } from './records.js';
import { candidatesOf, parseSearchRequest, searchJudgeOf, searchPage, type SearchKind, type SearchPage } from './search.js';

export interface AuthzenDecision {
  decision: boolean;
  context: { decision_id: string; reasons: string[]; obligations?: DecisionOutcome['obligations'] };
}

export type AuthzenAnswer = AuthzenDecision | { evaluations: AuthzenDecision[] };

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
  constructor(private readonly core: PdpCore) {}

  /** POST /access/v1/evaluation (`batch` false) and /access/v1/evaluations (`batch` true). */
  async evaluate(caller: Caller, text: string, batch: boolean): Promise<AuthzenAnswer> {
    const request = admitAuthzen(caller, text, batch, this.core.config.admission_limits);
    return answerOf(request.single, await this.decideAndRecord(caller, request));
  }

  /**
   * Records what a front evaluated and sealed (PendingAuthzen) and answers it — the same records and
   * answer as evaluate() gives — unless the policy set or entities moved since: then it is evaluated here.
   * The front admitted the text for this caller; the sidecar admits it again only to evaluate it.
   */
  async recordPending(caller: Caller, text: string, batch: boolean, p: PendingAuthzen): Promise<AuthzenAnswer> {
    const core = this.core;
    let request: AuthzenRequest | undefined;
    const prepared = p.outcomes.length === p.records.length ? { ...p, answer: () => answerOf(p.single, this.answers(p.outcomes, p.records)) } : undefined;
    return this.recordEvaluated(async (engine, entitiesVersion, now) => {
      request ??= admitAuthzen(caller, text, batch, core.config.admission_limits);
      const single = request.single;
      const evaluated = await this.evaluateRequest(caller, request, engine, entitiesVersion, now);
      return { records: evaluated.records, answer: () => answerOf(single, evaluated.answer()) };
    }, prepared);
  }

  private async decideAndRecord(caller: Caller, request: AuthzenRequest): Promise<AuthzenDecision[]> {
    return this.recordEvaluated((engine, entitiesVersion, now) => this.evaluateRequest(caller, request, engine, entitiesVersion, now));
  }

  /** Evaluates a request's items and preseals their records; the answer counts them once they are durable. */
  private async evaluateRequest(
    caller: Caller,
    request: AuthzenRequest,
    engine: PdpCore['engine'],
    entitiesVersion: string,
    now: Date,
  ): Promise<{ records: PresealedAuthzenRecord[]; answer: () => AuthzenDecision[] }> {
    const core = this.core;
    const evaluate = (e: AuthzenEvaluation) => core.evaluator.evaluateRequest(engine, requestInputOf(e, core.entities));
    const outcomes = await evaluateItems(request, evaluate);
    const records = presealAuthzenRecords(request, outcomes, caller, { policyVersion: engine.policyVersion, entitiesVersion, now: now.toISOString() });
    return { records, answer: () => this.answers(outcomes, records) };
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
      const core = this.core;
      const candidates = candidatesOf(request, core.entities.all(), engine.actionNames());
      const page = await searchPage(
        request,
        candidates,
        (e) => core.evaluator.evaluateRequest(engine, requestInputOf(e, core.entities)),
        searchJudgeOf(request, engine, core.entities),
      );
      const record = presealAuthzenSearchRecord(request, page, caller, { policyVersion: engine.policyVersion, entitiesVersion, now: now.toISOString() });
      return { records: [record], answer: () => ({ results: page.results, page: { next_token: page.next_token } }) };
    });
  }

  /**
   * Evaluates with the policy set, entities and clock in force and commits the records in one durable
   * write (group commit), evaluating again while the entities move in between (pdp/commit.ts), so a
   * record never names an entities_version older than an entity change recorded before it. `prepared`:
   * what a front evaluated, committed first while the policy set and entities it read are in force.
   */
  private recordEvaluated<T>(
    run: (engine: PdpCore['engine'], entitiesVersion: string, now: Date) => Promise<{ records: PresealedAuthzenRecord[]; answer: () => T }>,
    prepared?: { policyVersion: string; entitiesVersion: string; records: PresealedAuthzenRecord[]; answer: () => T },
  ): Promise<T> {
    const core = this.core;
    return commitWithRevalidation(
      core,
      async (attempt) => {
        let entitiesVersion: string;
        let evaluated: { records: PresealedAuthzenRecord[]; answer: () => T };
        if (attempt === 0 && prepared && prepared.policyVersion === core.engine.policyVersion && prepared.entitiesVersion === core.entities.version) {
          ({ entitiesVersion } = prepared);
          evaluated = prepared;
        } else {
          // On a shared (PostgreSQL) store another replica may have moved the entities: start from the
          // stored version, and the write re-checks it under the store's lock (docs/protocol.md §9).
          await core.entities.refresh();
          entitiesVersion = core.entities.version;
          evaluated = await run(core.engine, entitiesVersion, core.now());
        }
        const { records, answer } = evaluated;
        return {
          entitiesVersion,
          write: (tx: WriteTx) => {
            for (const r of records) tx.append(AUTHZEN_RECORD_INDEX_FIELDS, r);
          },
          label: 'authzen',
          answer,
        };
      },
      { holdEntities: true },
    );
  }

  /** The answers to a request's outcomes, once recorded (outcome i is answered with record i's decision id). */
  private answers(outcomes: DecisionOutcome[], records: PresealedAuthzenRecord[]): AuthzenDecision[] {
    for (const outcome of outcomes) metrics.authzenEvaluationsTotal.inc({ decision: outcome.decision });
    return outcomes.map((outcome, i) => decisionOf(outcome, records[i]!.decisionId));
  }
}
