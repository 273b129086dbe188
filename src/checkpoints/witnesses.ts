/**
 * Submitting checkpoints to C2SP tlog-witnesses (docs/protocol.md §16, `witnesses: [{url, vkey}]`). Each
 * new checkpoint goes to `<url>/add-checkpoint` with the consistency proof from the size the witness last
 * cosigned; its 409 names that size and the submission is made again from there; any other failure is
 * retried with exponential backoff (1 s doubling to 60 s) until it succeeds or a newer checkpoint takes
 * its place. The cosignature lines that verify under the witness's vkey are added to the served note.
 * All of it runs beside the decision path: a witness that is down or refuses never delays a decision.
 */
import type { LedgerRecord } from '../ledger/record.js';
import * as log from '../log/log.js';
import * as metrics from '../metrics/metrics.js';
import type { LedgerStore } from '../store/types.js';
import { parseNote, parseVkey, verifyNote, type VerifierKey } from '../transparency/note.js';
import type { WitnessSpec } from '../config/config.js';
import type { CheckpointNotes } from './notes.js';

const REQUEST_TIMEOUT_MS = 10_000;
const FIRST_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 60_000;
/** 409s answered in a row for one checkpoint before it counts as a failure (the witness's size keeps moving). */
const MAX_CONFLICTS = 3;

export interface WitnessSubmitter {
  /** Submits this checkpoint to every witness (a newer one replaces one still waiting). */
  submit(record: LedgerRecord): void;
  /** Resolves once every witness has no submission in flight or waiting (tests, bench). */
  idle(): Promise<void>;
  stop(): void;
}

class WitnessClient {
  readonly key: VerifierKey;
  /** The size this witness last cosigned, as far as this process knows (its 409 corrects it). */
  cosignedSize = 0;
  #pending: LedgerRecord | undefined;
  #running: Promise<void> | undefined;
  #failures = 0;
  #wake: (() => void) | undefined;
  #stopped = false;

  constructor(
    readonly spec: WitnessSpec,
    readonly store: LedgerStore,
    readonly notes: CheckpointNotes,
  ) {
    this.key = parseVkey(spec.vkey);
  }

  submit(record: LedgerRecord): void {
    if (this.#pending && Number(this.#pending.size) >= Number(record.size)) return;
    this.#pending = record;
    this.#running ??= this.#run().finally(() => (this.#running = undefined));
  }

  idle(): Promise<void> {
    return this.#running ?? Promise.resolve();
  }

  stop(): void {
    this.#stopped = true;
    this.#wake?.();
  }

  async #run(): Promise<void> {
    while (this.#pending && !this.#stopped) {
      const record = this.#pending;
      try {
        await this.#submitOnce(record);
        if (this.#failures > 0) log.notice(`writ: witness ${this.spec.url} cosigns again (size ${this.cosignedSize})`);
        this.#failures = 0;
        if (this.#pending === record) this.#pending = undefined;
      } catch (e) {
        this.#failures++;
        // Said once per streak, not every retry.
        if (this.#failures === 1)
          log.warn(`writ: witness ${this.spec.url} did not cosign checkpoint ${String(record.size)}: ${(e as Error).message}; retrying with backoff`);
        const delay = Math.min(FIRST_BACKOFF_MS * 2 ** (this.#failures - 1), MAX_BACKOFF_MS);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, delay * (0.75 + Math.random() / 2));
          timer.unref();
          // A newer checkpoint waits out the backoff (then goes instead of the older one); a stop does not.
          this.#wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.#wake = undefined;
      }
    }
  }

  async #submitOnce(record: LedgerRecord): Promise<void> {
    const size = Number(record.size);
    const text = this.notes.textOf(record);
    const note = this.notes.signed(text);
    for (let conflicts = 0; ; ) {
      if (this.cosignedSize > size) return; // it already cosigned a larger tree: nothing to add
      const old = this.cosignedSize;
      const proof = old > 0 && old < size ? await this.store.consistencyProof(old, size) : [];
      const body = `old ${old}\n${proof.map((h) => `${Buffer.from(h, 'hex').toString('base64')}\n`).join('')}\n${note}`;
      let res: Response;
      try {
        res = await fetch(`${this.spec.url}/add-checkpoint`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'text/plain; charset=utf-8' },
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
      } catch (e) {
        metrics.witnessSubmissions.inc({ witness: this.spec.url, result: 'unreachable' });
        throw new Error(`unreachable (${(e as Error).message})`, { cause: e });
      }
      const answer = await res.text();
      if (res.status === 200) {
        await this.#keep(text, size, answer);
        metrics.witnessSubmissions.inc({ witness: this.spec.url, result: 'cosigned' });
        this.cosignedSize = size;
        metrics.witnessCosignedSize.set({ witness: this.spec.url }, size);
        return;
      }
      if (res.status === 409 && /^(0|[1-9][0-9]{0,15})\n$/.test(answer)) {
        metrics.witnessSubmissions.inc({ witness: this.spec.url, result: 'conflict' });
        const theirs = Number(answer);
        if (theirs === old) {
          // The same old size refused: it holds another tree of that size — a fork, or another log under our origin.
          throw new Error(`it holds a different tree of size ${theirs} for ${this.notes.origin}: check for a forked ledger or a second log with this origin`);
        }
        this.cosignedSize = theirs;
        if (++conflicts >= MAX_CONFLICTS) throw new Error(`it answered 409 ${MAX_CONFLICTS} times in a row`);
        continue;
      }
      metrics.witnessSubmissions.inc({ witness: this.spec.url, result: 'refused' });
      throw new Error(`it answered ${res.status}: ${answer.slice(0, 200).trim()}`);
    }
  }

  /** Keeps the answer's cosignature by this witness (it must verify; other lines are ignored). */
  async #keep(text: string, size: number, answer: string): Promise<void> {
    let line: string | undefined;
    try {
      // verifyNote refuses the whole answer if a line of this key fails, and needs one that verifies.
      verifyNote(`${text}\n${answer}`, [this.key]);
      line = parseNote(`${text}\n${answer}`).signatures.find((sig) => sig.name === this.key.name && sig.keyId === this.key.keyId)?.line;
    } catch (e) {
      throw new Error(`its answer holds no valid cosignature by ${this.key.vkey}: ${(e as Error).message}`, { cause: e });
    }
    if (line === undefined) throw new Error('its answer holds no cosignature');
    await this.notes.addCosignature(text, size, this.key.vkey, line);
  }
}

export function startWitnessSubmitter(store: LedgerStore, notes: CheckpointNotes, specs: WitnessSpec[]): WitnessSubmitter {
  const clients = specs.map((s) => new WitnessClient(s, store, notes));
  return {
    submit(record) {
      for (const c of clients) c.submit(record);
    },
    async idle() {
      await Promise.all(clients.map((c) => c.idle()));
    },
    stop() {
      for (const c of clients) c.stop();
    },
  };
}
