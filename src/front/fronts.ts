/**
 * The sidecar's side of its HTTP front threads (front-thread.ts): starts them on the public
 * port, keeps their policy set and entities current, and answers their asks — commit a prepared
 * decision (DecisionService.commitPending) or decide a request text (DecisionService.decide), record or evaluate an
 * AuthZEN request (AuthzenService), run a call of the app the front serves on the sidecar's services
 * (backend-calls.ts) — after the durable write, in batches.
 *
 * Fronts are worker threads that listen with SO_REUSEPORT (`reusePort`, Node ≥ 22.12 / ≥ 23.1), or on
 * an older Node processes forked by node:cluster that share the port through the cluster's handle — except
 * a single front, which has the port to itself and is a thread on every Node (node-version.ts).
 */
import cluster from 'node:cluster';
import { fileURLToPath } from 'node:url';
import { WASM_INLINE_GUARD_FLAG, wasmInlineGuardNeeded } from '../policy/wasm-inline-guard.js';
import { Worker } from 'node:worker_threads';
import { isWritError, WritError } from '../errors.js';
import type { TokenSpec } from '../config/config.js';
import type { JwtIssuerSpec } from '../identity/issuers.js';
import type { JSONWebKeySet } from 'jose';
import type { PdpCore } from '../pdp/core.js';
import type { DecisionService } from '../pdp/decisions.js';
import * as metrics from '../metrics/metrics.js';
import { addTally, emptyTally, type EvaluationTally } from '../policy/memo.js';
import { frontsAreThreads } from './node-version.js';
import { probePort } from './probe-port.js';
import type { FrontAsk, FrontStart, FromFront, SidecarAnswer, ToFront } from './protocol.js';
import { answerCall, type WriterBackend } from './backend-calls.js';
import type { PendingDecisionResult } from '../pdp/admission.js';
import { AUTHZEN_EVALUATION_PATH, AUTHZEN_EVALUATIONS_PATH } from '../authzen/request.js';
import { countAnswer, countRefusal } from '../http/answer-metrics.js';
import { fairnessOf } from '../http/fairness.js';
import * as log from '../log/log.js';
import type { TlsMaterial } from '../http/tls.js';

const THREAD_SCRIPT = new URL('./front-thread.js', import.meta.url);
const MAX_RESTARTS = 10;
const CLOSE_WAIT_MS = 15_000;

/**
 * The refusal an ask is answered with. `counted`: the refusal is counted here, once, as the HTTP layer's
 * onError counts the refusals it answers — except a call of the app on a front, whose onError counts it.
 */
function errorAnswer(id: number, e: unknown, counted: boolean): SidecarAnswer {
  if (isWritError(e)) {
    if (counted) countRefusal(e);
    return { id, error: { status: e.status, body: e.toBody() } };
  }
  log.error(`writ: unexpected error on a front's ask: ${(e as Error)?.stack ?? String(e)}`);
  const refusal = new WritError('STORE_UNAVAILABLE', 'the sidecar could not complete the request', { status: 503 });
  if (counted) countRefusal(refusal, { logged: true });
  return { id, error: { status: 503, body: refusal.toBody() } };
}

/** A front thread or process, as the sidecar talks to it. */
interface FrontLink {
  send(m: ToFront): void;
  onMessage(listener: (m: FromFront) => void): void;
  onExit(listener: () => void): void;
  stop(): Promise<void>;
}

/** A worker thread that listens with SO_REUSEPORT beside the others. */
function threadFront(start: FrontStart): FrontLink {
  const worker = new Worker(THREAD_SCRIPT, { workerData: start });
  worker.on('error', (e) => log.error(`writ: HTTP front thread failed: ${e.stack ?? e}`));
  return {
    send: (m) => worker.postMessage(m),
    onMessage: (l) => worker.on('message', l),
    onExit: (l) => worker.on('exit', l),
    stop: async () => void (await worker.terminate()),
  };
}

let clusterSetUp = false;
/**
 * A process forked by node:cluster, for a Node without SO_REUSEPORT (Node 20, 22 before 22.12): it
 * listens on the port through the cluster's shared handle (the sidecar's process accepts and hands out
 * connections, round-robin), and talks to the sidecar over IPC with structured-clone serialization.
 */
function processFront(start: FrontStart): FrontLink {
  if (!clusterSetUp) {
    clusterSetUp = true;
    cluster.setupPrimary({
      exec: fileURLToPath(THREAD_SCRIPT),
      args: [],
      serialization: 'advanced',
      // The V8 flag cedar-wasm needs on this Node (src/policy/wasm-inline-guard.ts), before anything loads.
      execArgv: wasmInlineGuardNeeded() ? [WASM_INLINE_GUARD_FLAG] : [],
    });
  }
  const worker = cluster.fork();
  // Until the process has said hello and been sent its start data, what the sidecar sends it (entity
  // and policy updates made since `start` was taken) waits here, then follows the start data in order:
  // sent earlier, it would be lost (no listener yet) or taken for the start data itself.
  let waiting: ToFront[] | undefined = [];
  worker.once('message', () => {
    // its hello
    worker.send({ type: 'start', data: start });
    const held = waiting ?? [];
    waiting = undefined;
    for (const m of held) if (worker.isConnected()) worker.send(m);
  });
  worker.on('error', (e) => log.error(`writ: HTTP front process failed: ${e.stack ?? e}`));
  return {
    send: (m) => {
      if (waiting !== undefined) waiting.push(m);
      else if (worker.isConnected()) worker.send(m);
    },
    onMessage: (l) => worker.on('message', l),
    onExit: (l) => worker.on('exit', l),
    stop: () =>
      new Promise<void>((resolve) => {
        if (worker.isDead()) return resolve();
        worker.once('exit', () => resolve());
        worker.process.kill('SIGKILL'); // it has closed and answered everything (or is wedged); it ignores SIGTERM
      }),
  };
}

interface Front {
  link: FrontLink;
  index: number;
  outbox: SidecarAnswer[];
  /** Its decision-memo and residual counts, as of its latest batch of asks. */
  tally: EvaluationTally;
  /** Settles when it listens on the public port (or fails before). */
  listening: Promise<void>;
  closed?: () => void;
}

export interface FrontsOptions {
  count: number;
  host: string;
  port: number;
  /** TLS material for the public port (the fronts terminate TLS). */
  tls?: TlsMaterial;
  tokens: TokenSpec[];
  /** The config's `jwt_issuers`: each front verifies JWT callers itself (src/identity/). */
  jwtIssuers?: JwtIssuerSpec[];
  maxBodyBytes: number;
  /** Evaluator threads, shared out among the fronts (each front runs Cedar beside itself on its share). */
  evaluatorThreads: number;
  /** The decision core: the policy set and entities the fronts hold copies of. */
  core: PdpCore;
  /** Where a front's decisions are committed (or decided again). */
  decisions: DecisionService;
  /** After each answered ask (the checkpoint cadence). */
  afterAnswer: () => void;
  /** The services the app on each front calls (backend-calls.ts answerCall). */
  backend: WriterBackend;
  /** What the app on each front needs from the config and the sidecar (FrontStart.app). */
  app: FrontStart['app'];
  /** The sidecar's JWT key cache, which the fronts' verifiers draw on (src/identity/jwks-cache.ts RelayedKeys). */
  keySet?: (issuer: string, kid: string) => Promise<JSONWebKeySet>;
  /**
   * The port is held by the caller's listener (a replica's while it waited for its database), which
   * `release` closes. The fronts load first; then, when it `shares` the port (SO_REUSEPORT), they bind
   * beside it and it is released after — no moment without a listener — else it is released just
   * before they bind (a bind's time without one, not the fronts' whole start). No probe: it was held.
   */
  heldPort?: { shared: boolean; release: () => Promise<void> };
}

export class Fronts {
  private readonly fronts: Front[] = [];
  private restarts = 0;
  /** The counts of fronts that exited (and were replaced), so /metrics never goes backwards. */
  private readonly exited: EvaluationTally = emptyTally();
  private readonly dropTallySource: () => void;
  private closing = false;
  readonly port: number;

  private constructor(
    private readonly o: FrontsOptions,
    port: number,
  ) {
    this.port = port;
    this.dropTallySource = metrics.addEvaluationTallySource(() => this.fronts.reduce((sum, f) => addTally(sum, f.tally), { ...this.exited }));
  }

  static async start(o: FrontsOptions): Promise<Fronts> {
    const held = o.port !== 0 ? o.heldPort : undefined;
    if (!held) await o.heldPort?.release();
    const port = held ? o.port : await probePort(o.host, o.port);
    const fronts = new Fronts(o, port);
    const { core } = o;
    // The fronts hold the policy set and entities in force; the core tells them of every change.
    core.entities.onChange(() => fronts.broadcast({ type: 'entities', version: core.entities.version, list: core.entities.all() }));
    core.onPolicyChange((bundle) => fronts.broadcast({ type: 'policy', bundle }));
    try {
      await Promise.all(Array.from({ length: o.count }, (_, i) => fronts.spawn(i, held !== undefined)));
      if (held) {
        if (!held.shared) await held.release();
        await Promise.all(
          fronts.fronts.map((f) => {
            f.link.send({ type: 'listen' } satisfies ToFront);
            return f.listening;
          }),
        );
        if (held.shared) await held.release();
      }
    } catch (e) {
      await fronts.close();
      throw e;
    }
    return fronts;
  }

  private startData(index: number, holdListen: boolean): FrontStart {
    const { core } = this.o;
    const { count, evaluatorThreads } = this.o;
    return {
      evaluatorThreads: Math.floor(evaluatorThreads / count) + (index % count < evaluatorThreads % count ? 1 : 0),
      host: this.o.host,
      port: this.port,
      app: this.o.app,
      tokens: this.o.tokens,
      jwtIssuers: this.o.jwtIssuers ?? [],
      maxBodyBytes: this.o.maxBodyBytes,
      fairness: fairnessOf(core.config),
      ...(this.o.tls ? { tls: this.o.tls } : {}),
      clockFile: core.config.clock_file,
      memoSize: core.config.decision_memo_size,
      policy: core.bundle,
      entities: { version: core.entities.version, list: core.entities.all() },
      ...(holdListen ? { holdListen } : {}),
    };
  }

  /** Starts front `index`; resolves once it listens, or (`hold`) once it is loaded and waits for `listen`. */
  private spawn(index: number, hold = false): Promise<void> {
    const start = this.startData(index, hold);
    const link = frontsAreThreads(this.o.count) ? threadFront(start) : processFront(start);
    let listened!: () => void;
    let failed!: (e: Error) => void;
    const front: Front = {
      link,
      outbox: [],
      index,
      tally: emptyTally(),
      listening: new Promise<void>((resolve, reject) => {
        listened = resolve;
        failed = reject;
      }),
    };
    front.listening.catch(() => undefined); // awaited by start(), or in place of `ready`
    this.fronts.push(front);
    return new Promise((resolve, reject) => {
      let listening = false;
      const fail = (e: Error) => {
        failed(e);
        reject(e);
      };
      link.onMessage((m: FromFront) => {
        switch (m.type) {
          case 'ready':
            resolve();
            return;
          case 'listening':
            listening = true;
            listened();
            resolve();
            return;
          case 'failed':
            if (!listening) fail(new WritError('INVALID_REQUEST', `cannot listen on ${this.o.host}:${this.port}: ${m.message}`));
            return;
          case 'asks':
            front.tally = m.tally;
            for (const a of m.batch) this.answer(front, a);
            return;
          case 'refused':
            if (m.route !== undefined) countAnswer(m.route, m.status);
            countRefusal({ code: m.code, message: `by an HTTP front: ${m.message}` }, m.logged ? { logged: true } : {});
            return;
          case 'answered':
            countAnswer(m.route, m.status);
            return;
          case 'closed':
            front.closed?.();
            return;
        }
      });
      link.onExit(() => {
        const i = this.fronts.indexOf(front);
        if (i >= 0) this.fronts.splice(i, 1);
        addTally(this.exited, front.tally); // a replaced front's counts stay counted
        front.closed?.();
        if (!listening) fail(new WritError('STORE_UNAVAILABLE', 'an HTTP front thread exited before listening'));
        else if (!this.closing && this.restarts++ < MAX_RESTARTS) {
          // Its connections are gone with it; the port stays served by the others and by its replacement.
          this.spawn(front.index).catch((e) => log.error(`writ: HTTP front thread not replaced: ${(e as Error).message}`));
        }
      });
    });
  }

  private answer(front: Front, a: FrontAsk): void {
    const { decisions } = this.o;
    if ('jwks' in a) {
      // Not a request of its own: a refusal is the front's to answer (or the sidecar's, passed the request).
      const keySet = this.o.keySet ?? (() => Promise.reject(new Error('no jwt_issuers are configured')));
      keySet(a.jwks.issuer, a.jwks.kid).then(
        (jwks) => this.reply(front, { id: a.id, ok: { jwks } }),
        (e) => this.reply(front, { id: a.id, error: { status: 503, body: new WritError('IDENTITY_UNAVAILABLE', (e as Error).message).toBody() } }),
      );
      return;
    }
    let work: Promise<PendingDecisionResult | { authzen: unknown } | { called: unknown }>;
    if ('pending' in a) work = decisions.commitPending(a.pending);
    else if ('call' in a) work = answerCall(this.o.backend, a.call).then((called) => ({ called }));
    else if ('decide' in a) work = decisions.decide(a.decide.caller, a.decide.text).then((response) => ({ response }));
    else {
      const { authzen } = this.o.backend;
      const { caller, text, batch, pending } = a.authzen;
      const answer = pending === undefined ? authzen.evaluate(caller, text, batch) : authzen.recordPending(caller, text, batch, pending);
      work = answer.then((authzen) => ({ authzen }));
    }
    // A call is counted by the app on the front that made it; the rest by the route the front took.
    const route = 'call' in a ? undefined : 'authzen' in a ? (a.authzen.batch ? AUTHZEN_EVALUATIONS_PATH : AUTHZEN_EVALUATION_PATH) : '/v1/decisions';
    work.then(
      (ok) => {
        if (route !== undefined) countAnswer(route, 200);
        this.reply(front, { id: a.id, ok });
      },
      (e) => {
        const answer = errorAnswer(a.id, e, route !== undefined);
        if (route !== undefined && 'error' in answer) countAnswer(route, answer.error.status);
        this.reply(front, answer);
      },
    );
  }

  /**
   * Answers travel to a front in one message per commit. The message goes out in a microtask, not at
   * the next turn of the event loop: the answers of one commit settle together and reach this method in
   * one drain of the microtask queue, and the next turn would first take (and seal) every ask that queued
   * during the commit's fsync — ≈ 0.3 ms that each answer would wait for no reason, with the front and
   * its clients idle meanwhile. An answer settled later (another kind of ask, an error) is one more message.
   */
  private reply(front: Front, answer: SidecarAnswer): void {
    if (front.outbox.length === 0) {
      queueMicrotask(() => {
        const batch = front.outbox;
        front.outbox = [];
        front.link.send({ type: 'answers', batch } satisfies ToFront);
      });
    }
    front.outbox.push(answer);
    this.o.afterAnswer();
  }

  private broadcast(m: ToFront): void {
    for (const f of this.fronts) f.link.send(m);
  }

  /** Stops accepting; in-flight requests are answered (the sidecar must still be running); threads end. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(
      this.fronts.map(
        (f) =>
          new Promise<void>((resolve) => {
            // A front cuts its last connections after 10 s; one that has not closed by 15 s is wedged
            // and is stopped regardless, so a shutdown always ends.
            const wedged = setTimeout(resolve, CLOSE_WAIT_MS);
            f.closed = () => {
              clearTimeout(wedged);
              resolve();
            };
            f.link.send({ type: 'close' } satisfies ToFront);
          }),
      ),
    );
    await Promise.all([...this.fronts].map((f) => f.link.stop()));
    this.dropTallySource();
  }
}
