/** What counts as a changed decision in a replay (docs/protocol.md §12): the decision, or its reasons as a set. Pure. */
import type { RecordedDecision } from './request.js';

export function sameReasonSet(a: readonly string[], b: readonly string[]): boolean {
  const left = new Set(a);
  const right = new Set(b);
  if (left.size !== right.size) return false;
  for (const r of left) if (!right.has(r)) return false;
  return true;
}

export function decisionChanged(recorded: RecordedDecision, candidate: RecordedDecision): boolean {
  return recorded.decision !== candidate.decision || !sameReasonSet(recorded.reasons, candidate.reasons);
}

/** One changed decision, as `--json` prints it. */
export interface ReplayChange {
  seq: number;
  execution_id: string | null;
  recorded: RecordedDecision;
  candidate: RecordedDecision;
}

function reasonList(reasons: readonly string[]): string {
  return reasons.length === 0 ? '(none)' : reasons.join(', ');
}

/** The human form of one change: a headline and both reason lists. */
export function changeLines(change: ReplayChange): string[] {
  return [
    `seq ${change.seq} ${change.execution_id ?? '(no execution id)'}: ${change.recorded.decision} → ${change.candidate.decision}`,
    `  recorded reasons:  ${reasonList(change.recorded.reasons)}`,
    `  candidate reasons: ${reasonList(change.candidate.reasons)}`,
  ];
}

export function summaryLine(replayed: number, changed: number): string {
  return `${replayed} replayed, ${changed} changed`;
}
