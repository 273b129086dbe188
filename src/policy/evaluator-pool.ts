/**
 * Cedar evaluation on worker threads, so a decision's largest CPU cost (cedar-wasm converting and
 * evaluating the request) runs beside the event loop that parses HTTP, admits arguments and writes
 * the ledger, instead of on it.
 *
 * Every answer is the answer PolicyEngine.evaluate gives in-process: the thread runs the same engine on
 * the same policy bundle, and the caller's entity slice (the same roots the engine slices from) is
 * shipped with the request. Fail closed and never lost: if a thread dies or stops answering, every
 * decision it held is decided in-process instead, and the thread is replaced (a bounded number of
 * times; after that the pool evaluates in-process only).
 */
import { Worker } from 'node:worker_threads';
import type { DecisionInput, DecisionOutcome, PolicyEngine, CedarCall, RequestInput } from './engine.js';
import type { EntityJson } from './entities.js';
import type { PolicyBundle } from './load.js';
import * as log from '../log/log.js';
import { WritError } from '../errors.js';

/** What a thread is asked to evaluate. */
export type EvaluationWork =
  /** A decision without approvals, as its exact Cedar inputs (PolicyEngine.evaluateCall): the common case … */
  | { call: CedarCall }
  /** … an MCP decision with approvals (PolicyEngine.evaluate, on the shipped slice) … */
  | { input: Omit<DecisionInput, 'entities'>; entities: EntityJson[] }
  /** … or a direct Cedar request (PolicyEngine.evaluateRequest; its request entities are already in the slice). */
  | { request: Omit<RequestInput, 'entities' | 'requestEntities'>; entities: EntityJson[] };

export type EvaluationJob = { id: number; engineId: string } & EvaluationWork;

/**
 * Decisions travel in batches: everything asked in one turn of the event loop is one message, and its
 * answers come back as one message, so a busy sidecar pays one cross-thread wake-up per turn rather
 * than two per decision.
 */
export type EvaluatorRequest =
  | { type: 'load'; engineId: string; bundle: PolicyBundle }
  | { type: 'unload'; engineId: string }
  | { type: 'evaluate'; batch: EvaluationJob[] };

export type EvaluatorReply = Array<{ id: number; outcome: DecisionOutcome }>;

interface Pending {
  /** The same decision in-process (when the thread fails). */
  redo: () => DecisionOutcome;
  sentAt: number;
  resolve: (outcome: DecisionOutcome) => void;
  reject: (e: unknown) => void;
  /** Refused at its deadline: still on the thread (it counts as the thread's work), answered to nobody. */
  expired?: true;
}

interface Thread {
  worker: Worker;
  pending: Map<number, Pending>;
  /** Engine ids this thread has been sent. */
  loaded: Set<string>;
  /** Decisions asked this turn, sent together at the end of it. */
  outbox: EvaluationJob[];
}

/** A thread that holds a decision this long is presumed wedged: it is replaced and its work redone. */
const STALL_MS = 10_000;
const MAX_RESTARTS = 10;
const KEEP_ENGINES = 4;
const THREAD_SCRIPT = new URL('./evaluator-thread.js', import.meta.url);

export class EvaluatorPool {
  private readonly threads: Thread[] = [];
  private nextId = 0;
  private restarts = 0;
  private closed = false;
  /** The engines decisions may name, newest last (sent to threads on first use and to replacements). */
  private readonly engines = new Map<string, { engine: PolicyEngine; bundle: PolicyBundle }>();
  private readonly watchdog: NodeJS.Timeout | undefined;

  private readonly deadlineMs: number;

  /**
   * `threads` = 0 evaluates in-process (the pool is then a pass-through). `deadlineMs`: a decision a thread
   * has not answered that long after it was sent is refused with EVALUATION_TIMEOUT (fail closed), so
   * one expensive request cannot hold its caller's answer — or, redone in-process, the event loop —
   * for the STALL_MS a thread gets before it is presumed wedged. (In-process evaluation cannot be cut.)
   */
  constructor(threads: number, opts: { deadlineMs?: number } = {}) {
    this.deadlineMs = opts.deadlineMs ?? Infinity;
    for (let i = 0; i < threads; i++) this.threads.push(this.spawn());
    if (threads > 0) {
      // Checked often enough that a deadline is overrun by at most a quarter of itself.
      this.watchdog = setInterval(() => this.replaceStalled(), Math.max(25, Math.min(1000, this.deadlineMs / 4)));
      this.watchdog.unref();
    }
  }

  get size(): number {
    return this.threads.length;
  }

  /** Makes `engine` (built from `bundle`) available to the threads; call before deciding with it. */
  register(engine: PolicyEngine, bundle: PolicyBundle): void {
    // A reload: new decisions use the new engine, so the older engines' memos are dropped now rather
    // than held until those engines age out.
    for (const { engine: older } of this.engines.values()) older.memo?.clear();
    this.engines.set(engine.engineId, { engine, bundle });
    // The newest few only (decisions still in flight during a reload may name the previous ones);
    // threads drop exactly what the pool drops, so a thread holds every engine the pool sends to it.
    while (this.engines.size > KEEP_ENGINES) {
      const oldest = this.engines.keys().next().value!;
      this.engines.delete(oldest);
      for (const t of this.threads) {
        if (!t.loaded.delete(oldest)) continue;
        this.send(t); // decisions already queued for it go first
        t.worker.postMessage({ type: 'unload', engineId: oldest } satisfies EvaluatorRequest);
      }
    }
  }

  evaluate(engine: PolicyEngine, input: DecisionInput): Promise<DecisionOutcome> | DecisionOutcome {
    const thread = this.leastBusy();
    if (thread === undefined || !this.engines.has(engine.engineId)) return engine.evaluate(input);
    let work: EvaluationWork;
    let memoKey: string | undefined;
    const entitiesVersion = engine.memo === undefined ? '' : input.entities.version;
    try {
      let workOf: () => EvaluationWork;
      let residual: (() => DecisionOutcome | undefined) | undefined;
      if (input.approvals.length === 0 && engine.memo !== undefined) {
        // The key needs the narrowed context anyway: the Cedar inputs are built here once, with it, and
        // the thread only evaluates them. (Without a memo the thread builds them: off this event loop.)
        const planned = engine.planCall(input);
        memoKey = planned.memoKey;
        residual = planned.residual;
        workOf = () => ({ call: planned.call() });
      } else {
        memoKey = engine.memoKeyOf(input);
        workOf = () => {
          const { entities: source, ...portable } = input;
          return { input: portable, entities: engine.decisionEntities({ ...input, entities: source }) };
        };
      }
      // The memo lives here, on the event loop, before dispatch: a repeated decision is answered
      // without crossing to a thread at all (and without cutting an entity slice).
      const hit = memoHit(engine, memoKey, entitiesVersion);
      if (hit !== undefined) return hit;
      // Only context strings or datetimes are new (a task id, the clock) and Cedar has reduced the rest: the
      // residual program answers here too (residual.ts), again without a hop.
      const reduced = residual?.();
      if (reduced !== undefined) {
        if (memoKey !== undefined) engine.memo!.set(memoKey, entitiesVersion, reduced);
        return reduced;
      }
      work = workOf();
    } catch {
      return engine.evaluate(input); // the engine turns the malformed request into its deny
    }
    return kept(
      engine,
      memoKey,
      entitiesVersion,
      this.dispatch(thread, engine, () => engine.evaluate(input), work),
    );
  }

  /** PolicyEngine.evaluateRequest on a thread (in-process when there is none), with the same fail-over. */
  evaluateRequest(engine: PolicyEngine, input: RequestInput): Promise<DecisionOutcome> | DecisionOutcome {
    const thread = this.leastBusy();
    if (thread === undefined || !this.engines.has(engine.engineId)) return engine.evaluateRequest(input);
    let entities: EntityJson[];
    let memoKey: string | undefined;
    const entitiesVersion = input.entities.version;
    try {
      // As for evaluate(): the memo answers a repeated question here, before any hop to a thread.
      memoKey = engine.requestMemoKeyOf(input);
      const hit = memoHit(engine, memoKey, entitiesVersion);
      if (hit !== undefined) return hit;
      entities = engine.requestEntities(input);
    } catch {
      return engine.evaluateRequest(input);
    }
    const { entities: _source, requestEntities: _own, ...portable } = input;
    return kept(
      engine,
      memoKey,
      entitiesVersion,
      this.dispatch(thread, engine, () => engine.evaluateRequest(input), { request: portable, entities }),
    );
  }

  private dispatch(thread: Thread, engine: PolicyEngine, redo: () => DecisionOutcome, work: EvaluationWork): Promise<DecisionOutcome> {
    if (!thread.loaded.has(engine.engineId)) {
      thread.worker.postMessage({ type: 'load', engineId: engine.engineId, bundle: this.engines.get(engine.engineId)!.bundle } satisfies EvaluatorRequest);
      thread.loaded.add(engine.engineId);
    }
    const id = this.nextId++;
    return new Promise<DecisionOutcome>((resolve, reject) => {
      thread.pending.set(id, { redo, sentAt: Date.now(), resolve, reject });
      if (thread.outbox.push({ id, engineId: engine.engineId, ...work }) === 1) {
        setImmediate(() => this.send(thread));
      }
    });
  }

  private send(thread: Thread): void {
    const batch = thread.outbox;
    thread.outbox = [];
    // A thread retired since (its pending work was already redone in-process) gets nothing.
    if (batch.length === 0 || !this.threads.includes(thread)) return;
    thread.worker.postMessage({ type: 'evaluate', batch } satisfies EvaluatorRequest);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.watchdog) clearInterval(this.watchdog);
    const threads = this.threads.splice(0);
    for (const t of threads) this.failOver(t);
    await Promise.all(threads.map((t) => t.worker.terminate()));
  }

  private leastBusy(): Thread | undefined {
    let best: Thread | undefined;
    for (const t of this.threads) if (best === undefined || t.pending.size < best.pending.size) best = t;
    return best;
  }

  private spawn(): Thread {
    const worker = new Worker(THREAD_SCRIPT);
    worker.unref();
    const thread: Thread = { worker, pending: new Map(), loaded: new Set(), outbox: [] };
    worker.on('message', (reply: EvaluatorReply) => {
      for (const { id, outcome } of reply) {
        const p = thread.pending.get(id);
        if (p === undefined) continue;
        thread.pending.delete(id);
        p.resolve(outcome);
      }
    });
    worker.on('error', (e) => {
      log.error(`writ: evaluator thread failed (${e.message}); its decisions are evaluated in-process`);
      this.retire(thread);
    });
    worker.on('exit', () => this.retire(thread));
    return thread;
  }

  /** Decides everything the thread held in-process, drops it, and starts a replacement. */
  private retire(thread: Thread): void {
    this.failOver(thread);
    const index = this.threads.indexOf(thread);
    if (index < 0) return;
    this.threads.splice(index, 1);
    void thread.worker.terminate();
    if (!this.closed && this.restarts < MAX_RESTARTS) {
      this.restarts++;
      this.threads.push(this.spawn());
    }
  }

  private failOver(thread: Thread): void {
    const pending = [...thread.pending.values()];
    thread.pending.clear();
    thread.outbox = [];
    for (const p of pending) if (!p.expired) p.resolve(p.redo());
  }

  private replaceStalled(): void {
    const now = Date.now();
    for (const t of [...this.threads]) {
      for (const p of t.pending.values()) {
        if (!p.expired && now - p.sentAt > this.deadlineMs) {
          p.expired = true;
          p.reject(new WritError('EVALUATION_TIMEOUT', `policy evaluation did not finish within ${this.deadlineMs} ms; refused (nothing was decided)`));
        }
        if (now - p.sentAt > STALL_MS) {
          log.warn('writ: evaluator thread stopped answering; replacing it');
          this.retire(t);
          break;
        }
      }
    }
  }
}

/** The engine's memo answer for `key`, if it has one (no key: the input cannot be memoized, or the memo is off). */
function memoHit(engine: PolicyEngine, key: string | undefined, entitiesVersion: string): DecisionOutcome | undefined {
  return key === undefined ? undefined : engine.memo!.get(key, entitiesVersion);
}

/** A thread's answer, kept in the engine's memo under `key` as it arrives (nothing kept without a key). */
function kept(engine: PolicyEngine, key: string | undefined, entitiesVersion: string, answer: Promise<DecisionOutcome>): Promise<DecisionOutcome> {
  if (key === undefined) return answer;
  return answer.then((outcome) => {
    engine.memo!.set(key, entitiesVersion, outcome);
    return outcome;
  });
}
