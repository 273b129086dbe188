/**
 * Rebuilding the engine's input of one recorded MCP decision (docs/protocol.md §2, §12): the recorded
 * envelope, phase and binding; the Cedar view of the stored admitted arguments, recomputed by the
 * binding module exactly as the live path computes it; the PDP clock the record names (`now`); the
 * approvals the record lists as valid at that moment (the engine orders them earliest first, as live);
 * the superseded execution as it stood; and the entities as they stood (entity-timeline.ts). Pure.
 */
import { noPrior, PRIOR_BUCKETS, type Prior } from '../executions/prior.js';
import { WritError } from '../errors.js';
import { admitValue, cedarView, type LosslessValue } from '../binding/index.js';
import type { DecisionInput, ValidApproval } from '../policy/engine.js';
import type { EntitySource } from '../policy/entities.js';
import { uidFromJson } from '../policy/entities.js';
import type { Uid } from '../util/uid.js';

export type Decision = 'allow' | 'deny' | 'approval_required';

/** What a decision record says was decided. */
export interface RecordedDecision {
  decision: Decision;
  reasons: string[];
}

export interface SupersededView {
  execution_id: string;
  state: string;
  resolution?: 'committed' | 'absent';
}

function bad(seq: unknown, message: string): WritError {
  return new WritError('INVALID_REQUEST', `seq ${String(seq)}: ${message}`);
}

function uidField(record: Record<string, unknown>, value: unknown, field: string): Uid {
  const uid = uidFromJson(value);
  if (typeof uid === 'string') throw bad(record.seq, `${field}: ${uid}`);
  return uid;
}

function stringField(record: Record<string, unknown>, field: string): string {
  const value = record[field];
  if (typeof value !== 'string') throw bad(record.seq, `the decision record has no ${field}`);
  return value;
}

/** The decision and reasons a decision record holds. Throws WritError when it holds none. */
export function recordedDecisionOf(record: Record<string, unknown>): RecordedDecision {
  const decision = record.decision;
  if (decision !== 'allow' && decision !== 'deny' && decision !== 'approval_required') throw bad(record.seq, 'the decision record has no decision');
  const reasons = record.reasons;
  if (!Array.isArray(reasons) || !reasons.every((r) => typeof r === 'string')) throw bad(record.seq, 'the decision record has no reasons list');
  return { decision, reasons: reasons };
}

/** The approvals that were valid when the record was decided (the record keeps each one's validity). */
export function validApprovalsOf(record: Record<string, unknown>): ValidApproval[] {
  const views = record.approvals ?? [];
  if (!Array.isArray(views)) throw bad(record.seq, 'approvals: expected an array');
  const valid: ValidApproval[] = [];
  for (const view of views as Array<Record<string, unknown>>) {
    if (view === null || typeof view !== 'object') throw bad(record.seq, 'approvals: expected objects');
    if (view.valid !== true) continue;
    const { approval_id, approved_at, expires_at } = view;
    if (typeof approval_id !== 'string' || typeof approved_at !== 'string' || typeof expires_at !== 'string') {
      throw bad(record.seq, 'approvals: a valid approval lacks approval_id, approved_at or expires_at');
    }
    valid.push({ approval_id, approver: uidField(record, view.approver, 'approvals[].approver'), approved_at, expires_at });
  }
  return valid;
}

/**
 * The engine input of an MCP decision record. `supersedes` is the superseded execution as it stood
 * (the caller tracks it); `entities` the store as it stood. Throws WritError INVALID_REQUEST on a record
 * that cannot be re-decided (missing fields, arguments that would not be admitted today).
 */
function priorField(record: Record<string, unknown>): Prior {
  const p = record.prior;
  if (p === null || typeof p !== 'object' || Array.isArray(p)) throw bad(record.seq, 'prior: expected an object of counts');
  const prior = noPrior();
  for (const bucket of PRIOR_BUCKETS) {
    const n = (p as Record<string, unknown>)[bucket];
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw bad(record.seq, `prior.${bucket}: expected a whole number from 0`);
    prior[bucket] = n;
  }
  return prior;
}

/** The DecisionInput a recorded decision was evaluated with, rebuilt from its record for replay. */
export function recordInputOf(record: Record<string, unknown>, entities: EntitySource, supersedes: SupersededView | undefined): DecisionInput {
  const envelope = record.envelope;
  if (envelope === null || typeof envelope !== 'object' || Array.isArray(envelope)) throw bad(record.seq, 'the decision record has no envelope');
  const env = envelope as Record<string, unknown>;
  const phase = record.phase;
  if (phase !== 'propose' && phase !== 'execute') throw bad(record.seq, 'the decision record has no phase');
  const nowText = stringField(record, 'now');
  const now = new Date(nowText);
  if (Number.isNaN(now.getTime())) throw bad(record.seq, `now: not a time: ${nowText}`);
  const args = record.arguments;
  if (args === null || typeof args !== 'object' || Array.isArray(args)) throw bad(record.seq, 'the decision record has no arguments object');
  let cedarArguments;
  try {
    // The stored value is the admitted one (its JCS text); admitting it again refuses anything the
    // live path could not have produced (Cedar escape keys, depth) before it reaches Cedar.
    cedarArguments = cedarView(admitValue(args as LosslessValue, '/arguments'));
  } catch (e) {
    throw bad(record.seq, `stored arguments are not admissible: ${(e as Error).message}`);
  }
  const input: DecisionInput = {
    actor: uidField(record, record.actor, 'actor'),
    server: stringField(record, 'server'),
    tool: stringField(record, 'tool'),
    subject: uidField(record, env.subject, 'envelope.subject'),
    envelope: env,
    phase,
    binding: stringField(record, 'binding'),
    cedarArguments,
    now,
    approvals: validApprovalsOf(record),
    entities,
  };
  if (typeof env.supersedes === 'string') {
    if (supersedes === undefined) throw bad(record.seq, `the superseded execution ${env.supersedes} is not in the export`);
    input.supersedes = supersedes;
  }
  // The counts the live decision saw, as recorded (§17): replay does not count them again. A record
  // from before `prior` was recorded saw none.
  if (record.prior !== undefined) input.prior = priorField(record);
  return input;
}
