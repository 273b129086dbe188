/**
 * Policy replay (docs/protocol.md §12), the pure core: fed a ledger export's records in seq order, it
 * rebuilds the entity store and the superseded executions as they stood at each decision record,
 * re-decides the decision with the candidate policies through the same PolicyEngine the sidecar uses,
 * and reports the decisions that changed. No I/O: the CLI (src/cli/replay.ts) reads and prints.
 */
import type { PolicyEngine } from '../policy/engine.js';
import { EntityTimeline, UNDO_WINDOW, type EntityRecord } from './entity-timeline.js';
import { SupersededExecutions } from './executions.js';
import { recordInputOf, recordedDecisionOf, type RecordedDecision } from './request.js';
import { decisionChanged, errorTexts, type ReplayChange } from './diff.js';
import { isAuthzenDecision, type AuthzenDecider } from './authzen.js';

export interface ReplayOptions {
  /** Executions some decision of the export supersedes (see executions.ts); empty when none does. */
  supersedeTargets?: ReadonlySet<string>;
  /** Only decisions whose clock (`now`) is at or after this instant (ms since the epoch). */
  since?: number;
  /** Only decisions whose clock (`now`) is before this instant (ms since the epoch). */
  until?: number;
  undoWindow?: number;
  /** How to re-decide AuthZEN records (authzen.ts `authzenDecider`); without it they are counted as skipped. */
  authzen?: AuthzenDecider;
}

export interface ReplayCounts {
  replayed: number;
  changed: number;
  /** AuthZEN decisions not re-decided: no AuthZEN decider was given (see authzen.ts). */
  authzenSkipped: number;
  /** Decisions recorded after an entity change they had not seen (group commit): replayed before it. */
  earlierEntities: number;
  /** Decisions whose recorded entities_version was not reachable; replayed against the latest store. */
  inexactEntities: number;
  /** The seq of the first such decision. */
  firstInexactSeq?: number;
}

export class Replayer {
  readonly counts: ReplayCounts = { replayed: 0, changed: 0, authzenSkipped: 0, earlierEntities: 0, inexactEntities: 0 };
  private readonly entities: EntityTimeline;
  private readonly executions: SupersededExecutions;

  constructor(
    private readonly engine: PolicyEngine,
    private readonly options: ReplayOptions = {},
  ) {
    this.entities = new EntityTimeline(options.undoWindow ?? UNDO_WINDOW);
    this.executions = new SupersededExecutions(options.supersedeTargets ?? new Set());
  }

  /** The rebuilt entity store (tests). */
  get entityTimeline(): EntityTimeline {
    return this.entities;
  }

  /**
   * One record of the export, in seq order. Returns the change when it is a decision that the
   * candidate decides differently. Throws WritError INVALID_REQUEST on a decision it cannot rebuild.
   */
  push(record: Record<string, unknown>): ReplayChange | undefined {
    const kind = record.kind;
    if (kind === 'entity') {
      this.entities.apply(record as unknown as EntityRecord);
      return undefined;
    }
    if (kind !== 'decision') {
      this.executions.apply(record);
      return undefined;
    }
    try {
      return this.redecide(record);
    } finally {
      this.executions.apply(record);
    }
  }

  private inWindow(record: Record<string, unknown>): boolean {
    if (this.options.since === undefined && this.options.until === undefined) return true;
    const clock = Date.parse(typeof record.now === 'string' ? record.now : String(record.ts));
    if (this.options.since !== undefined && !(clock >= this.options.since)) return false;
    if (this.options.until !== undefined && !(clock < this.options.until)) return false;
    return true;
  }

  private entitiesFor(record: Record<string, unknown>) {
    const version = record.entities_version;
    const source = typeof version === 'string' ? this.entities.at(version) : undefined;
    if (source !== undefined) {
      if (version !== this.entities.version) this.counts.earlierEntities++;
      return source;
    }
    this.counts.inexactEntities++;
    this.counts.firstInexactSeq ??= record.seq as number;
    return this.entities.at(this.entities.version)!;
  }

  private redecide(record: Record<string, unknown>): ReplayChange | undefined {
    if (!this.inWindow(record)) return undefined;
    // A search page (docs/protocol.md §15) is no single decision to compare: it is not replayed.
    if (record.search !== undefined) return undefined;
    const recorded = recordedDecisionOf(record);
    let candidate: RecordedDecision;
    let errors: string[];
    const authzen = isAuthzenDecision(record);
    if (authzen) {
      if (this.options.authzen === undefined) {
        this.counts.authzenSkipped++;
        return undefined;
      }
      const outcome = this.options.authzen(record, this.entitiesFor(record));
      candidate = { decision: outcome.decision, reasons: outcome.reasons };
      errors = outcome.errors ?? [];
    } else {
      const input = recordInputOf(record, this.entitiesFor(record), this.executions.viewFor(record));
      const outcome = this.engine.evaluate(input);
      candidate = { decision: outcome.decision, reasons: outcome.reasons };
      errors = errorTexts(outcome.errors);
    }
    this.counts.replayed++;
    if (!decisionChanged(recorded, candidate)) return undefined;
    this.counts.changed++;
    return {
      seq: record.seq as number,
      execution_id: typeof record.execution_id === 'string' ? record.execution_id : null,
      recorded: { decision: recorded.decision, reasons: recorded.reasons },
      candidate,
      ...(authzen ? { about: authzenAbout(record) } : {}),
      ...(errors.length > 0 ? { candidateErrors: errors } : {}),
    };
  }
}

/** `authzen Type::"id" action Type::"id"`, what an AuthZEN decision (no execution id) was about. */
function authzenAbout(record: Record<string, unknown>): string {
  const uid = (v: unknown) => {
    const o = v as { type?: unknown; id?: unknown } | null;
    return o && typeof o.type === 'string' && typeof o.id === 'string' ? `${o.type}::${JSON.stringify(o.id)}` : '?';
  };
  const action = (record.action as { name?: unknown } | null)?.name;
  return `authzen ${uid(record.subject)} ${typeof action === 'string' ? JSON.stringify(action) : '?'} ${uid(record.resource)}`;
}
