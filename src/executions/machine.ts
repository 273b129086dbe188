/**
 * The execution state machine of docs/protocol.md §4, as pure functions over an Execution value.
 *
 *   proposed ──execute+allow──▶ invoking ──outcome──▶ committed | rejected | unknown
 *                                                     unknown ──reconcile──▶ reconciled
 *
 * Nothing expires. `unknown` is terminal for decisions and outcomes; only reconcile moves it.
 * Every function either returns the next Execution or throws the contract's WritError.
 */
import { WritError } from '../errors.js';
import type { Uid } from '../util/uid.js';

export type ExecutionState = 'proposed' | 'invoking' | 'committed' | 'rejected' | 'unknown' | 'reconciled';
export type Decision = 'allow' | 'deny' | 'approval_required';
export type OutcomeStatus = 'committed' | 'rejected' | 'unknown';
export type Resolution = 'committed' | 'absent';
export type Confirmation = 'tool_reported' | 'system_of_record';

export interface Execution {
  execution_id: string;
  actor: Uid;
  state: ExecutionState;
  binding: string;
  envelope_digest: string;
  subject: Uid;
  server: string;
  tool: string;
  supersedes?: string;
  superseded_by?: string;
  resolution?: Resolution;
  /** Set while `proposed` when the latest decision allowed: it then counts as `proposed_allowed` (prior.ts). */
  allowed?: true;
  /** When the execution entered its current state (ISO time, the PDP clock): the reconciliation queue's `since`. */
  since?: string;
  /** While `proposed` with a latest decision of approval_required: its approver groups and that record's seq. */
  pending?: { groups: string[]; seq: number };
  /** Every approver group any of its decisions required (an approver of one may read it, §17). */
  approval_groups?: string[];
  /** How its `committed` outcome was confirmed: by the tool (the default), or by the system of record. */
  confirmation?: Confirmation;
  /** Approval ids given for this execution, in the order they were given. */
  approvals: string[];
  /** Every ledger seq that names this execution. */
  records: number[];
  /** Bumped by every change that can alter a decision (state, approvals, supersede slot), so a decision
   *  evaluated against an older revision is evaluated again instead of being committed. */
  rev?: number;
}

/** Terminal for decisions and outcomes: no request may move these (reconcile aside, for `unknown`). */
export function isTerminal(state: ExecutionState): boolean {
  return state === 'committed' || state === 'rejected' || state === 'unknown' || state === 'reconciled';
}

export interface DecisionAttempt {
  phase: 'propose' | 'execute';
  binding: string;
  envelope_digest: string;
}

/**
 * May a decision request proceed on this (existing) execution? Order matters and is part of the
 * contract's reading: a terminal execution answers EXECUTION_TERMINAL to any retry, whatever it carries;
 * then the binding must match; then an in-flight invocation refuses another request.
 */
export function checkDecisionAllowed(existing: Execution, attempt: DecisionAttempt): void {
  if (isTerminal(existing.state)) {
    throw new WritError('EXECUTION_TERMINAL', `execution ${existing.execution_id} is ${existing.state}`);
  }
  if (existing.binding !== attempt.binding || existing.envelope_digest !== attempt.envelope_digest) {
    throw new WritError('EXECUTION_CONFLICT', `execution ${existing.execution_id} was reserved for another binding or envelope`);
  }
  if (existing.state === 'invoking') {
    throw new WritError('EXECUTION_IN_FLIGHT', `execution ${existing.execution_id} is being invoked`);
  }
}

/** The state after a decision: only an allowed execute moves proposed → invoking. */
export function stateAfterDecision(phase: 'propose' | 'execute', decision: Decision): ExecutionState {
  return phase === 'execute' && decision === 'allow' ? 'invoking' : 'proposed';
}

export function applyOutcome(e: Execution, status: OutcomeStatus, confirmation: Confirmation = 'tool_reported'): Execution {
  if (isTerminal(e.state)) throw new WritError('EXECUTION_TERMINAL', `execution ${e.execution_id} is ${e.state}`);
  if (e.state !== 'invoking') throw new WritError('EXECUTION_NOT_INVOKING', `execution ${e.execution_id} is ${e.state}, not invoking`);
  const next: Execution = { ...e, state: status };
  if (status === 'committed') next.confirmation = confirmation;
  return next;
}

/**
 * Reconcile (§4, §17): from `unknown`; or from `invoking` once it has been invoking for `stuckAfterS`
 * seconds by the PDP clock — a PEP that crashed mid-call no longer holds the only way out. An execution
 * without a recorded `since` (written before it was kept) is never taken for stuck.
 */
export function applyReconcile(e: Execution, resolution: Resolution, stuck?: { now: Date; stuckAfterS: number }): Execution {
  if (e.state === 'unknown') return { ...e, state: 'reconciled', resolution };
  if (isTerminal(e.state))
    throw new WritError('EXECUTION_TERMINAL', `execution ${e.execution_id} is ${e.state}; only unknown or stuck invoking executions can be reconciled`);
  if (e.state === 'invoking' && stuck !== undefined && e.since !== undefined && Date.parse(e.since) + stuck.stuckAfterS * 1000 <= stuck.now.getTime()) {
    return { ...e, state: 'reconciled', resolution };
  }
  const detail = e.state === 'invoking' ? `invoking since ${e.since ?? 'an unrecorded time'}, not yet for stuck_after_s` : e.state;
  throw new WritError('EXECUTION_NOT_UNKNOWN', `execution ${e.execution_id} is ${detail}; only unknown or stuck invoking executions can be reconciled`);
}

/** A later confirmation by the system of record (§17): only of a `committed` outcome the tool reported, once. */
export function applyConfirmation(e: Execution): Execution {
  if (e.state !== 'committed' || (e.confirmation ?? 'tool_reported') !== 'tool_reported') {
    const why = e.state !== 'committed' ? `is ${e.state}` : 'is already confirmed by the system of record';
    throw new WritError('EXECUTION_NOT_CONFIRMABLE', `execution ${e.execution_id} ${why}; only a committed outcome the tool reported can be confirmed`);
  }
  return { ...e, confirmation: 'system_of_record' };
}

/** Tool events (§17) are sealed only while the tool runs. */
export function checkEventsAllowed(e: Execution): void {
  if (e.state !== 'invoking') throw new WritError('EXECUTION_NOT_INVOKING', `execution ${e.execution_id} is ${e.state}; events are taken only while invoking`);
}

/**
 * Taking the supersede slot of `target` for `byExecutionId` (same actor, checked by the caller's key).
 * A slot already held by this same execution is fine (a retry of the superseding request).
 */
export function takeSupersedeSlot(target: Execution | undefined, byExecutionId: string, targetId: string): Execution {
  if (!target) throw new WritError('EXECUTION_NOT_FOUND', `execution ${targetId} does not exist for this actor`);
  if (target.superseded_by !== undefined && target.superseded_by !== byExecutionId) {
    throw new WritError('EXECUTION_SUPERSEDED', `execution ${targetId} is already superseded by ${target.superseded_by}`);
  }
  return { ...target, superseded_by: byExecutionId };
}
