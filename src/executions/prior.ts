/**
 * `context.prior` (docs/protocol.md §17): how many *other* executions of the same actor carry exactly
 * this call's binding, by the state they are in — so a policy can refuse to run a consequence again
 * under a fresh execution id.
 *
 * The counts are kept, not searched: one `meta` row per (actor, binding) holds the four counts, and
 * every write that moves an execution between buckets moves its count in the same transaction
 * (putExecution). A decision subtracts what its own execution and the one it supersedes contribute.
 * A `reconciled` execution whose resolution is `committed` counts as committed: the reconciler found
 * that the consequence happened, which is what a duplicate check asks.
 */
import type { WriteTx } from '../store/types.js';
import type { Execution } from './machine.js';
import { uidKey, type Uid } from '../util/uid.js';

export interface Prior {
  committed: number;
  unknown: number;
  invoking: number;
  proposed_allowed: number;
}
export type PriorBucket = keyof Prior;

export const PRIOR_BUCKETS: readonly PriorBucket[] = ['committed', 'unknown', 'invoking', 'proposed_allowed'];

export function noPrior(): Prior {
  return { committed: 0, unknown: 0, invoking: 0, proposed_allowed: 0 };
}

/** The bucket an execution counts in, if any. */
export function priorBucket(e: Pick<Execution, 'state' | 'resolution' | 'allowed'> | undefined): PriorBucket | undefined {
  if (e === undefined) return undefined;
  switch (e.state) {
    case 'committed':
      return 'committed';
    case 'reconciled':
      return e.resolution === 'committed' ? 'committed' : undefined;
    case 'unknown':
      return 'unknown';
    case 'invoking':
      return 'invoking';
    case 'proposed':
      return e.allowed === true ? 'proposed_allowed' : undefined;
    default:
      return undefined;
  }
}

/** The `meta` row holding the counts of one actor's executions of one binding. */
export function priorCountsKey(actor: Uid, binding: string): string {
  return `prior\n${uidKey(actor)}\n${binding}`;
}

/** The counts a stored row holds (none yet: all zero), as a fresh value. */
export function countsOf(row: Prior | undefined): Prior {
  return row === undefined ? noPrior() : { committed: row.committed, unknown: row.unknown, invoking: row.invoking, proposed_allowed: row.proposed_allowed };
}

export function samePrior(a: Prior | undefined, b: Prior | undefined): boolean {
  const x = countsOf(a);
  const y = countsOf(b);
  return PRIOR_BUCKETS.every((k) => x[k] === y[k]);
}

/**
 * What a decision on `self` (undefined for a fresh id) sees: the counts less its own execution and
 * the one it supersedes (when that one has the same binding).
 */
export function priorSeen(row: Prior | undefined, binding: string, self: Execution | undefined, superseded: Execution | undefined): Prior {
  const seen = countsOf(row);
  for (const e of [self, superseded]) {
    const bucket = e !== undefined && e.binding === binding ? priorBucket(e) : undefined;
    if (bucket !== undefined) seen[bucket] = Math.max(0, seen[bucket] - 1);
  }
  return seen;
}

/**
 * An execution after a decision recorded at `seq`: waiting for an approval (`pending`) while its latest
 * decision is approval_required, and readable by approvers of every group any decision required.
 */
export function withApprovalGroups(e: Execution, decision: string, groups: readonly string[], seq: number): Execution {
  const next: Execution = { ...e };
  if (decision === 'approval_required' && groups.length > 0 && e.state === 'proposed') next.pending = { groups: [...groups], seq };
  else delete next.pending;
  if (groups.length > 0) next.approval_groups = [...new Set([...(e.approval_groups ?? []), ...groups])];
  return next;
}

/** The `meta` rows of executions waiting for an approval (their latest decision approval_required). */
export const PENDING_PREFIX = 'pending\n';

/** States an execution waits in for someone else to end it: the reconciliation queue (§17). */
export const QUEUE_STATES = ['unknown', 'invoking'] as const;
export type QueueState = (typeof QUEUE_STATES)[number];

/** The `meta` row listing an execution in the reconciliation queue: by state, then oldest first. */
export function queueKey(state: QueueState, since: string, key: string): string {
  return `${queuePrefix(state)}${since}\n${key}`;
}
export function queuePrefix(state: QueueState): string {
  return `queue\n${state}\n`;
}
function queued(e: Execution | undefined): e is Execution & { state: QueueState; since: string } {
  return e !== undefined && e.since !== undefined && (QUEUE_STATES as readonly string[]).includes(e.state);
}

/**
 * Writes an execution row — the only way one is written — and keeps what is derived from the rows in
 * the same transaction: `since` (stamped when the state changes), the reconciliation queue's rows and
 * the prior counts, so neither can drift from the rows.
 */
export function putExecution(tx: WriteTx, key: string, before: Execution | undefined, after: Execution, now: Date): void {
  if (before?.state !== after.state) after = { ...after, since: now.toISOString() };
  if (after.state !== 'proposed' && after.pending !== undefined) {
    after = { ...after };
    delete after.pending;
  }
  tx.put('executions', key, after);
  // The approvers' list (§17): executions waiting for an approval, by execution key.
  if (before?.pending?.seq !== after.pending?.seq) {
    if (after.pending === undefined) tx.del('meta', `${PENDING_PREFIX}${key}`);
    else tx.put('meta', `${PENDING_PREFIX}${key}`, { actor: after.actor, execution_id: after.execution_id });
  }
  if (queued(before) && (before.state !== after.state || before.since !== after.since)) tx.del('meta', queueKey(before.state, before.since, key));
  if (queued(after) && (before?.state !== after.state || before.since !== after.since))
    tx.put('meta', queueKey(after.state, after.since, key), { actor: after.actor, execution_id: after.execution_id });
  const from = priorBucket(before);
  const to = priorBucket(after);
  if (from === to) return;
  const countsKey = priorCountsKey(after.actor, after.binding);
  const counts = countsOf(tx.get<Prior>('meta', countsKey));
  if (from !== undefined) counts[from] = Math.max(0, counts[from] - 1);
  if (to !== undefined) counts[to] += 1;
  tx.put('meta', countsKey, counts);
}
