/**
 * The decision core (see PdpCore). Every durable effect goes through LedgerStore.write, which resolves only
 * after the commit is fsync'd, so an answer is never sent for something that could still be lost.
 */
import { isWritError } from '../errors.js';
import { pdpNow } from './admission.js';
import type { Execution } from '../executions/machine.js';
import { putExecution } from '../executions/prior.js';
import { PolicyEngine } from '../policy/engine.js';
import { EvaluatorPool } from '../policy/evaluator-pool.js';
import type { PolicyBundle } from '../policy/load.js';
import type { LedgerStore } from '../store/types.js';
import { EntityCache } from '../entities/entity-cache.js';
import { storeFailure } from './commit.js';
import type { WritConfig } from '../config/config.js';

/** Codes of §4 that are ledgered as `refusal` records before they are answered. */
const LEDGERED_REFUSALS = new Set([
  'EXECUTION_CONFLICT',
  'EXECUTION_IN_FLIGHT',
  'EXECUTION_TERMINAL',
  'EXECUTION_SUPERSEDED',
  'EXECUTION_NOT_FOUND',
  'EXECUTION_NOT_INVOKING',
  'EXECUTION_NOT_UNKNOWN',
  'EXECUTION_NOT_CONFIRMABLE',
  // An approval given for a state the execution is not in (or for no execution) is evidence too: the
  // auditor sees who tried to approve what, and why it did not count.
  'APPROVAL_STALE',
]);

/**
 * The decision core: what every PDP service shares and nothing else owns — the policy set and engine in
 * force, the evaluator threads, the trusted entities, the store and the clock. The services
 * (decisions, executions, approvals, entities, policy reload) and AuthZEN work through it.
 */
export class PdpCore {
  engine: PolicyEngine;
  /** Where decisions are evaluated: Cedar on worker threads, or in-process (config.evaluator_threads). */
  readonly evaluator: EvaluatorPool;
  bundle: PolicyBundle;
  readonly entities: EntityCache;
  /**
   * Executions by state, for the metrics gauge: counted from the store once (countExecutionStates, at
   * start), then moved by every committed transition. Re-reading and parsing the whole executions
   * table for each scrape would be O(executions): seconds of a blocked event loop once a sidecar has
   * seen a million executions.
   */
  readonly executionStates: Record<string, number> = { proposed: 0, invoking: 0, committed: 0, rejected: 0, unknown: 0, reconciled: 0 };

  constructor(
    readonly config: WritConfig,
    readonly store: LedgerStore,
    bundle: PolicyBundle,
  ) {
    this.bundle = bundle;
    this.engine = new PolicyEngine(bundle, { memoSize: config.decision_memo_size });
    this.evaluator = new EvaluatorPool(config.evaluator_threads, { deadlineMs: config.evaluation_deadline_ms });
    this.evaluator.register(this.engine, bundle);
    this.entities = new EntityCache(store);
  }

  private readonly policyListeners: Array<(bundle: PolicyBundle) => void> = [];

  /** Calls `listener` with every policy set that comes into force by a reload. */
  onPolicyChange(listener: (bundle: PolicyBundle) => void): void {
    this.policyListeners.push(listener);
  }

  /** Stops the evaluator threads (decisions still in them are finished in-process). */
  async close(): Promise<void> {
    await this.evaluator.close();
  }

  /** Puts a policy set that loaded into force: evaluated from now on, and told to the listeners. */
  inForce(bundle: PolicyBundle, engine: PolicyEngine): void {
    this.evaluator.register(engine, bundle);
    this.bundle = bundle;
    this.engine = engine;
    for (const l of this.policyListeners) l(bundle);
  }

  /** Counts the executions by state from the store (once, at start; later transitions keep it current). */
  async countExecutionStates(): Promise<void> {
    for (const k of Object.keys(this.executionStates)) this.executionStates[k] = 0;
    const count = (e: Execution) => (this.executionStates[e.state] = (this.executionStates[e.state] ?? 0) + 1);
    const all = this.store.entries<Execution>('executions');
    // LMDB iterates synchronously (no microtask per execution when there are millions of them).
    if (Symbol.asyncIterator in all) for await (const [, e] of all) count(e);
    else for (const [, e] of all) count(e);
  }

  moveExecutionState(from: string | undefined, to: string): void {
    if (from === to) return;
    if (from !== undefined) this.executionStates[from] = (this.executionStates[from] ?? 0) - 1;
    this.executionStates[to] = (this.executionStates[to] ?? 0) + 1;
  }

  /** The PDP clock; `clock_file` (tests only) pins it. */
  now(): Date {
    return pdpNow(this.config.clock_file);
  }

  /**
   * Ledgers a §4 refusal (kind `refusal`) and returns the error to answer with. Errors that are not
   * state-machine refusals pass through unchanged; store failures become STORE_UNAVAILABLE.
   */
  async refuse(e: unknown, key: string | undefined, fields: Record<string, unknown>): Promise<unknown> {
    if (!isWritError(e)) return storeFailure(e);
    if (!LEDGERED_REFUSALS.has(e.code)) return e;
    // Counted once, by the HTTP layer that answers it (src/http/error-shape.ts onError), like every refusal.
    try {
      await this.store.write(
        (tx) => {
          const rec = tx.append({ kind: 'refusal', code: e.code, message: e.message, ...fields });
          const current = key ? tx.get<Execution>('executions', key) : undefined;
          if (current && key) putExecution(tx, key, current, { ...current, records: [...current.records, rec.seq] }, this.now());
        },
        { label: 'refusal' },
      );
    } catch (storeError) {
      return storeFailure(storeError);
    }
    return e;
  }
}
