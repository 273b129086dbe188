/**
 * The state of superseded executions over a ledger export, so a replayed decision whose envelope
 * `supersedes` another execution sees that execution as it stood (docs/protocol.md §2, §4).
 *
 * Tracking every execution of a long export would grow without bound, so replay first scans the
 * export for the executions that some decision supersedes (`supersedeTargetOf`, a cheap byte search
 * and a parse of the few matching lines) and then tracks only those.
 */
import { uidFromJson } from '../policy/entities.js';
import { uidKey } from '../util/uid.js';
import type { SupersededView } from './request.js';

/** The key of an execution: (actor, execution_id), as the sidecar keys it. */
export function executionKeyOf(actor: unknown, executionId: unknown): string | undefined {
  const uid = uidFromJson(actor);
  if (typeof uid === 'string' || typeof executionId !== 'string') return undefined;
  return `${uidKey(uid)}\n${executionId}`;
}

/** The byte pattern of a decision that supersedes something (JCS has no whitespace). */
export const SUPERSEDES_MARK = '"supersedes":"';

/** The key of the execution a decision record supersedes, if it supersedes one. */
export function supersedeTargetOf(record: Record<string, unknown>): string | undefined {
  if (record.kind !== 'decision') return undefined;
  const envelope = record.envelope as Record<string, unknown> | undefined;
  if (!envelope || typeof envelope.supersedes !== 'string') return undefined;
  return executionKeyOf(record.actor, envelope.supersedes);
}

export class SupersededExecutions {
  private readonly states = new Map<string, SupersededView>();

  constructor(private readonly targets: ReadonlySet<string>) {}

  /** Follows one record (seq order): decisions, outcomes and reconciliations move an execution's state. */
  apply(record: Record<string, unknown>): void {
    const kind = record.kind;
    if (kind !== 'decision' && kind !== 'outcome' && kind !== 'reconciliation') return;
    if (this.targets.size === 0) return;
    const key = executionKeyOf(record.actor, record.execution_id);
    if (key === undefined || !this.targets.has(key)) return;
    const executionId = record.execution_id as string;
    if (kind === 'decision' && typeof record.state === 'string') this.states.set(key, { execution_id: executionId, state: record.state });
    else if (kind === 'outcome' && typeof record.status === 'string') this.states.set(key, { execution_id: executionId, state: record.status });
    else if (kind === 'reconciliation' && (record.resolution === 'committed' || record.resolution === 'absent')) {
      this.states.set(key, { execution_id: executionId, state: 'reconciled', resolution: record.resolution });
    }
  }

  /** The superseded execution of this decision record as it stands now (before the record is applied). */
  viewFor(record: Record<string, unknown>): SupersededView | undefined {
    const key = supersedeTargetOf(record);
    return key === undefined ? undefined : this.states.get(key);
  }
}
