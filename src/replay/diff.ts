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

/** One changed decision: `--json` prints exactly {seq, execution_id, recorded, candidate} (jsonChange). */
export interface ReplayChange {
  seq: number;
  execution_id: string | null;
  recorded: RecordedDecision;
  candidate: RecordedDecision;
  /** For the human form: what an AuthZEN decision was about (it has no execution id). */
  about?: string;
  /** For the human form: the candidate's evaluation errors (a deny from an error says why). */
  candidateErrors?: string[];
}

/** The contract's --json line for a change (docs/protocol.md §12), members in this order. */
export function jsonChange(change: ReplayChange): string {
  return JSON.stringify({ seq: change.seq, execution_id: change.execution_id, recorded: change.recorded, candidate: change.candidate });
}

/** Evaluation errors as one line each: `policy: message`. */
export function errorTexts(errors: ReadonlyArray<{ policy?: string; message: string }>): string[] {
  return errors.map((e) => (e.policy ? `${e.policy}: ${e.message}` : e.message));
}

function reasonList(reasons: readonly string[]): string {
  return reasons.length === 0 ? '(none)' : reasons.join(', ');
}

/** The human form of one change: a headline and both reason lists. */
export function changeLines(change: ReplayChange): string[] {
  const lines = [
    `seq ${change.seq} ${change.execution_id ?? change.about ?? '(no execution id)'}: ${change.recorded.decision} → ${change.candidate.decision}`,
    `  recorded reasons:  ${reasonList(change.recorded.reasons)}`,
    `  candidate reasons: ${reasonList(change.candidate.reasons)}`,
  ];
  if (change.candidateErrors?.length) lines.push(`  candidate errors:  ${change.candidateErrors.join('; ')}`);
  return lines;
}

export function summaryLine(replayed: number, changed: number): string {
  return `${replayed} replayed, ${changed} changed`;
}
