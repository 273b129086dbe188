/**
 * History, not only hashes (docs/protocol.md §17): each execution's records replayed through the §4
 * state machine, in seq order. A record the machine forbids — an outcome without an allowed `execute`
 * before it, a second terminal record, a reconcile of an execution that was neither `unknown` nor
 * `invoking`, an event after the outcome, a decision on a terminal or in-flight execution, an approval
 * of an execution not `proposed`, a second confirmation — is ILLEGAL_TRANSITION.
 *
 * Pure and incremental: `transitionFactsOf` reads the few members that matter from one record (on a
 * worker thread, in the parallel verifier) as one short string; `TransitionChecker.push` folds them in
 * seq order. Memory: one small entry per execution seen.
 */

/** What one line may read, by top-level member: its JCS token, or its value when a string. */
export interface MemberReader {
  token(name: string): string | undefined;
  string(name: string): string | undefined;
}

/** Kinds that move, or must find, an execution in a given state. */
const TRANSITION_KINDS = new Set(['decision', 'outcome', 'reconciliation', 'confirmation', 'event', 'approval']);

const SEP = '\u0000';

/**
 * The facts of one record the state machine reads, as one string (cheap to pass between threads), or
 * undefined when the record names no execution (policy, key, an AuthZEN decision…). The execution is
 * keyed by the JCS text of `actor` and the execution id, exactly as the store keys it.
 */
export function transitionFactsOf(kind: string, view: MemberReader): string | undefined {
  if (!TRANSITION_KINDS.has(kind)) return undefined;
  const executionId = view.string('execution_id');
  const actor = view.token('actor');
  if (executionId === undefined || actor === undefined) return undefined;
  const field = (name: string) => view.string(name) ?? '';
  return [kind, actor, executionId, field('phase'), field('decision'), field('state'), field('status'), field('confirmation')].join(SEP);
}

type State = 'proposed' | 'invoking' | 'committed' | 'rejected' | 'unknown' | 'reconciled';
interface Tracked {
  state: State;
  /** committed, reported by the tool, and not yet confirmed by the system of record. */
  confirmable: boolean;
}

const TERMINAL: ReadonlySet<State> = new Set(['committed', 'rejected', 'unknown', 'reconciled']);

export class TransitionChecker {
  readonly #executions = new Map<string, Tracked>();

  /** Folds in the next record's facts; returns why the machine forbids it, or undefined. */
  push(facts: string | undefined): string | undefined {
    if (facts === undefined) return undefined;
    const [kind, actor, executionId, phase, decision, recordedState, status, confirmation] = facts.split(SEP) as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    const key = `${actor}\n${executionId}`;
    const e = this.#executions.get(key);
    const name = `execution ${executionId} of ${actor}`;
    switch (kind) {
      case 'decision': {
        if (e !== undefined && TERMINAL.has(e.state)) return `a decision on ${name}, which is ${e.state}`;
        if (e?.state === 'invoking') return `a decision on ${name} while it is invoking`;
        // What the record says is checked; what it leaves out is read in its favour (a decision that names
        // no phase and no state, but allows, may have started the invocation an outcome then ends).
        const derived: State | undefined =
          phase === 'execute' || phase === 'propose' ? (phase === 'execute' && decision === 'allow' ? 'invoking' : 'proposed') : undefined;
        if (derived !== undefined && recordedState !== '' && recordedState !== derived)
          return `a ${phase} decision ${decision} that records state ${recordedState}, not ${derived}`;
        const next: State =
          derived ?? (recordedState === 'invoking' || recordedState === 'proposed' ? recordedState : decision === 'allow' ? 'invoking' : 'proposed');
        this.#executions.set(key, { state: next, confirmable: false });
        return undefined;
      }
      case 'approval':
        if (e?.state !== 'proposed') return `an approval of ${name}, which is ${e?.state ?? 'not reserved'}, not proposed`;
        return undefined;
      case 'event':
        if (e?.state !== 'invoking') return `an event of ${name}, which is ${e?.state ?? 'not reserved'}, not invoking`;
        return undefined;
      case 'outcome': {
        if (e?.state !== 'invoking') {
          return e !== undefined && TERMINAL.has(e.state)
            ? `a second terminal record for ${name} (already ${e.state})`
            : `an outcome for ${name} without an allowed execute before it`;
        }
        if (status !== 'committed' && status !== 'rejected' && status !== 'unknown') return `an outcome for ${name} with status ${JSON.stringify(status)}`;
        this.#executions.set(key, { state: status, confirmable: status === 'committed' && (confirmation === '' || confirmation === 'tool_reported') });
        return undefined;
      }
      case 'reconciliation':
        if (e?.state !== 'unknown' && e?.state !== 'invoking')
          return `a reconciliation of ${name}, which is ${e?.state ?? 'not reserved'}, neither unknown nor invoking`;
        this.#executions.set(key, { state: 'reconciled', confirmable: false });
        return undefined;
      case 'confirmation':
        if (e?.state !== 'committed' || !e.confirmable)
          return `a confirmation of ${name}, which is ${e?.state ?? 'not reserved'}${e?.state === 'committed' ? ' and already confirmed' : ''}`;
        this.#executions.set(key, { state: 'committed', confirmable: false });
        return undefined;
      default:
        return undefined;
    }
  }
}
