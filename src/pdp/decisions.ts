/**
 * MCP decisions (docs/protocol.md §4): admit (binding) → validate envelope → evaluate Cedar on a snapshot
 * → reserve/transition + ledger in one durable write (pdp/commit.ts) → answer. Refusals of §4 are
 * ledgered as `refusal` before they are answered.
 */
import { randomUUID } from 'node:crypto';
import { WritError } from '../errors.js';
import {
  admitDecision,
  decisionIndexFields,
  decisionRecordFields,
  decisionResponseOf,
  evaluationInputOf,
  executionKey,
  withPriorMember,
  type AdmittedDecision,
  type DecisionResponse,
  type PendingDecisionResult,
  type PendingDecision,
} from './admission.js';
import { checkDecisionAllowed, stateAfterDecision, takeSupersedeSlot, type Execution, type Resolution } from '../executions/machine.js';
import { countsOf, priorCountsKey, priorSeen, putExecution, samePrior, withApprovalGroups, type Prior } from '../executions/prior.js';
import { approvalView, invalidReason, type Approval, type ApprovalView } from '../approvals/approvals.js';
import type { ValidApproval } from '../policy/engine.js';
import type { Table } from '../store/types.js';
import { ENTITIES_VERSION_KEY } from '../entities/entity-cache.js';
import { commitWithRevalidation, type Proposal } from './commit.js';
import * as metrics from '../metrics/metrics.js';
import type { Caller } from '../identity/caller.js';
import { uidKey, type Uid } from '../util/uid.js';
import { presealMembers } from '../store/seal.js';
import type { PdpCore } from './core.js';

/** Decisions, direct or prepared by an HTTP front (src/front/). */
export class DecisionService {
  constructor(private readonly core: PdpCore) {}

  async decide(caller: Caller, text: string): Promise<DecisionResponse> {
    // performance.now(), not hrtime.bigint(): no BigInt per request, and Node 20's V8 was seen to abort
    // ("Deoptimizer … unreachable code") in hot code timed with BigInt (also noted in bench/decide.mjs).
    const started = performance.now();
    // 1. Admission: lossless parse of the raw text; then the envelope schema; then the arguments.
    const admitted = admitDecision(caller, text, this.core.config.admission_limits);
    return commitWithRevalidation(this.core, () => this.decisionProposal(admitted, started), { holdEntities: true });
  }

  /**
   * Commits a decision an HTTP front thread prepared (src/front/): one durable write that reserves the
   * execution and appends the record the front built, if everything the front assumed still holds
   * under the write — no execution under the key (so no approvals and no snapshot to check), the policy
   * set and the entities it evaluated against. Otherwise the request is decided here again from
   * scratch, exactly as if it had come straight to decide().
   */
  async commitPending(p: PendingDecision): Promise<PendingDecisionResult> {
    const started = p.startedAt - performance.timeOrigin;
    let admitted: AdmittedDecision | undefined;
    return commitWithRevalidation(
      this.core,
      async (attempt): Promise<Proposal<Written, PendingDecisionResult>> => {
        if (attempt === 0 && p.policyVersion === this.core.engine.policyVersion && p.entitiesVersion === this.core.entities.version)
          return this.pendingProposal(p);
        admitted ??= admitDecision(p.caller, p.text, this.core.config.admission_limits);
        const direct = await this.decisionProposal(admitted, started);
        return { ...direct, answer: (written) => ({ response: direct.answer(written) }) };
      },
      { holdEntities: true },
    );
  }

  /**
   * A decision on a snapshot of the execution, its approvals, the prior counts, the entities and the
   * clock; committed (reserve / transition and ledger, atomically and durably) while that snapshot
   * still holds. Refusals of §4 are ledgered before they are answered.
   */
  private async decisionProposal(admitted: AdmittedDecision, started: number): Promise<Proposal<Written, DecisionResponse>> {
    const { envelope, actor, executionId, phase, server, tool, bound, envDigest, key } = admitted;
    // A refused request that named an execution to supersede says which (the loser of a supersede race
    // is otherwise a refusal of an id that never existed).
    const refusalFields = {
      actor,
      execution_id: executionId,
      phase,
      binding: bound.binding,
      envelope_digest: envDigest,
      caller: admitted.caller,
      ...(admitted.identity ? { identity: admitted.identity } : {}),
      ...(typeof envelope.supersedes === 'string' ? { supersedes: envelope.supersedes } : {}),
    };
    const countsKey = priorCountsKey(actor, bound.binding);
    const [snapshot, priorRow] = await Promise.all([this.core.store.get<Execution>('executions', key), this.core.store.get<Prior>('meta', countsKey)]);
    if (snapshot) {
      try {
        checkDecisionAllowed(snapshot, { phase, binding: bound.binding, envelope_digest: envDigest });
      } catch (e) {
        throw await this.core.refuse(e, key, refusalFields);
      }
    }
    const now = this.core.now();
    let supersedes: { execution_id: string; state: string; resolution?: Resolution } | undefined;
    // The revision of the retried execution whose state the policy sees: the write checks it.
    let supersedesRev = -1;
    let superseded: Execution | undefined;
    const supersedesId = typeof envelope.supersedes === 'string' ? envelope.supersedes : undefined;
    const supersedesKey = supersedesId === undefined ? undefined : executionKey(actor, supersedesId);
    if (supersedesId !== undefined) {
      const target = await this.core.store.get<Execution>('executions', supersedesKey!);
      try {
        takeSupersedeSlot(target, executionId, supersedesId);
      } catch (e) {
        throw await this.core.refuse(e, key, refusalFields);
      }
      superseded = target;
      supersedesRev = target!.rev ?? -1;
      supersedes = { execution_id: target!.execution_id, state: target!.state };
      if (target!.resolution) supersedes.resolution = target!.resolution;
    }
    const subject: Uid = envelope.subject;
    const { valid, views, subjectDigest: approvalsSubjectDigest } = await this.approvalsFor(snapshot, now, bound.binding, envDigest, subject);
    const engine = this.core.engine;
    const entitiesVersion = this.core.entities.version;
    const prior = priorSeen(priorRow, bound.binding, snapshot, superseded);
    // Only counts a policy can observe must still hold at the write (many fresh ids for one call that
    // no policy counts are not evaluated again in turn).
    const readsPrior = engine.readsPrior(server, tool);
    const outcome = await this.core.evaluator.evaluate(
      engine,
      evaluationInputOf(admitted, { now, approvals: valid, supersedes, prior, entities: this.core.entities }),
    );
    const decisionId = randomUUID();
    // The execution as the write reads it (stillValid reads it once for the write).
    let current: Execution | undefined;
    return {
      entitiesVersion,
      stillValid: (tx) => {
        current = tx.get<Execution>('executions', key);
        if ((current?.rev ?? -1) !== (snapshot?.rev ?? -1)) return false;
        // The approvals were judged against the subject's record as it was then: a change since (even
        // one undone, which leaves the entities version as it was) makes them stale.
        if (approvalsSubjectDigest !== undefined && this.core.entities.approvalDigestIn(tx, uidKey(subject)) !== approvalsSubjectDigest) return false;
        // Another execution of this call moved (a second id for one consequence ran): evaluate again.
        if (readsPrior && !samePrior(tx.get<Prior>('meta', countsKey), priorRow)) return false;
        // The retried execution moved (an outcome, a reconciliation, an approval) after the policy saw
        // its state: evaluate again, so no retry is allowed on a state it no longer has.
        const seen = supersedesKey === undefined ? undefined : tx.get<Execution>('executions', supersedesKey);
        return seen === undefined || (seen.rev ?? -1) === supersedesRev;
      },
      write: (tx) => {
        if (current) checkDecisionAllowed(current, { phase, binding: bound.binding, envelope_digest: envDigest });
        if (supersedesId !== undefined) {
          const seen = tx.get<Execution>('executions', supersedesKey!);
          const target = takeSupersedeSlot(seen, executionId, supersedesId);
          if (target.superseded_by !== undefined) putExecution(tx, supersedesKey!, seen, { ...target, rev: (target.rev ?? 0) + 1 }, now);
        }
        const state = stateAfterDecision(phase, outcome.decision);
        const fields = decisionRecordFields(admitted, { decisionId, outcome, views, policyVersion: engine.policyVersion, entitiesVersion, now, state, prior });
        const rec = tx.append(decisionIndexFields({ ...admitted, taskId: envelope.task_id }), presealMembers(fields));
        const next: Execution = current
          ? // A decision that leaves the state as it was changes nothing another decision reads (the records
            // list is not policy input): its revision stays, so concurrent decisions on one execution (many
            // proposes, an execute that denies) are all committed, not evaluated again in turn.
            { ...current, state, records: [...current.records, rec.seq], rev: state === current.state ? (current.rev ?? 0) : (current.rev ?? 0) + 1 }
          : {
              execution_id: executionId,
              actor,
              state,
              binding: bound.binding,
              envelope_digest: envDigest,
              subject,
              server,
              tool,
              ...(supersedesId !== undefined ? { supersedes: supersedesId } : {}),
              approvals: [],
              records: [rec.seq],
              rev: 0,
            };
        if (state === 'proposed' && outcome.decision === 'allow') next.allowed = true;
        else delete next.allowed;
        putExecution(
          tx,
          key,
          current,
          withApprovalGroups(
            next,
            outcome.decision,
            outcome.obligations.map((o) => o.approver_group),
            rec.seq,
          ),
          now,
        );
        return { seq: rec.seq, hash: rec.hash, state };
      },
      label: snapshot ? 'decision' : 'reserve',
      reads: decisionReads(key, countsKey, supersedesKey),
      answer: (written) => {
        // The write checked that the execution is still the snapshot's (same rev), so it left snapshot.state.
        this.core.moveExecutionState(snapshot?.state, written.state);
        metrics.decisionsTotal.inc({ decision: outcome.decision });
        metrics.decisionLatency.observe((performance.now() - started) / 1e3);
        return decisionResponseOf(admitted, { decisionId, outcome, policyVersion: engine.policyVersion, entitiesVersion, state: written.state }, written);
      },
      // Refused, and the refusal ledgered like any other (§4).
      failed: (e) => this.core.refuse(e, key, refusalFields),
      keepsMoving: () => this.core.refuse(new WritError('EXECUTION_IN_FLIGHT', 'the execution keeps changing; retry later'), key, refusalFields),
    };
  }

  /** A front's prepared decision (front/prepare.ts), committed while no execution holds its key. */
  private pendingProposal(p: PendingDecision): Proposal<Written, PendingDecisionResult> {
    const countsKey = priorCountsKey(p.actor, p.binding);
    let prior: Prior | undefined;
    return {
      entitiesVersion: p.entitiesVersion,
      stillValid: (tx) => {
        if (tx.get<Execution>('executions', p.key) !== undefined) return false;
        // The front evaluated with no other execution of this call: where a policy counts them, that must hold.
        prior = countsOf(tx.get<Prior>('meta', countsKey));
        return !p.readsPrior || samePrior(prior, undefined);
      },
      write: (tx) => {
        const rec = tx.append(decisionIndexFields(p), { parts: withPriorMember(p.parts, prior!) });
        const next: Execution = {
          execution_id: p.executionId,
          actor: p.actor,
          state: p.state as Execution['state'],
          binding: p.binding,
          envelope_digest: p.envDigest,
          subject: p.subject,
          server: p.server,
          tool: p.tool,
          approvals: [],
          records: [rec.seq],
          rev: 0,
          ...(p.state === 'proposed' && p.decision === 'allow' ? { allowed: true as const } : {}),
        };
        putExecution(tx, p.key, undefined, withApprovalGroups(next, p.decision, p.approverGroups, rec.seq), new Date(p.now));
        return { seq: rec.seq, hash: rec.hash, state: p.state };
      },
      label: 'reserve',
      reads: decisionReads(p.key, countsKey, undefined),
      answer: (written) => {
        this.core.moveExecutionState(undefined, p.state);
        metrics.decisionsTotal.inc({ decision: p.decision });
        metrics.decisionLatency.observe((performance.timeOrigin + performance.now() - p.startedAt) / 1e3);
        return { record: { seq: written.seq, hash: written.hash } };
      },
    };
  }

  /** Valid approvals for Cedar (earliest first) and the view of every approval, valid or not. */
  private async approvalsFor(
    exec: Execution | undefined,
    now: Date,
    binding: string,
    envDigest: string,
    subject: Uid,
  ): Promise<{ valid: ValidApproval[]; views: ApprovalView[]; subjectDigest?: string }> {
    const valid: ValidApproval[] = [];
    const views: ApprovalView[] = [];
    if (!exec || exec.approvals.length === 0) return { valid, views };
    const current = { binding, envelope_digest: envDigest, subjectDigest: await this.core.entities.approvalDigest(uidKey(subject)) };
    for (const id of exec.approvals) {
      const a = await this.core.store.get<Approval>('approvals', id);
      if (!a) continue;
      const reason = invalidReason(a, now, current);
      views.push(approvalView(a, reason));
      if (reason === undefined) valid.push({ approval_id: a.approval_id, approver: a.approver, approved_at: a.approved_at, expires_at: a.expires_at });
    }
    return { valid, views, subjectDigest: current.subjectDigest };
  }
}

/** What a decision's write returns: its record and the state it left the execution in. */
type Written = { seq: number; hash: string; state: string };

/** The rows a decision's write reads, fetched with its batch by a shared store. */
function decisionReads(key: string, countsKey: string, supersedesKey: string | undefined): Array<[Table, string]> {
  const reads: Array<[Table, string]> = [
    ['executions', key],
    ['meta', ENTITIES_VERSION_KEY],
    ['meta', countsKey],
  ];
  if (supersedesKey !== undefined) reads.push(['executions', supersedesKey]);
  return reads;
}
