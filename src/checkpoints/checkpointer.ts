/**
 * Signed checkpoints (docs/protocol.md §6): a `checkpoint` record `{size, root, key_id, signature}` covers
 * seqs 0..size-1, where size is the seq the checkpoint itself gets; root and signature are computed
 * inside the same write transaction, so no record can slip between them. Written every `everyRecords`
 * records — right after the write that reaches them, in the same batch or transaction (the store's
 * onWritten; `maybeCheckpoint`, called after each answer, for a store without it) — every `everyMs`
 * — never when nothing was appended since the last checkpoint — and on `stop` (SIGTERM), always. Each one is also appended as its JCS line to
 * `<witnessDir>/checkpoints.jsonl` when a witness dir is set.
 *
 * On a shared store (replicas) each checkpoint also writes `meta/checkpoint_end` (its seq + 1) in its
 * transaction, and every checkpoint write reads it under the store's write lock: whichever replica
 * writes first covers the new records, the others find nothing new, so checkpoints are written by one
 * replica at a time and never twice for the same range; and `meta/checkpoint_at` (when it was written)
 * keeps the `every_ms` timers of N replicas to one checkpoint per interval between them. A replica whose key `writ keys rotate` has
 * retired meanwhile (the `ledger_key` meta row, read in the same transaction) writes none: it says so
 * once and leaves checkpoints to replicas started with the new key.
 */
import { checkpointPayload, signPayload } from '../ledger/signing.js';
import type { LedgerRecord } from '../ledger/record.js';
import { appendWitness } from './witness.js';
import { isCurrentDeploymentKey, LEDGER_KEY_READ, type SigningKey } from './keys.js';
import type { LedgerStore } from '../store/types.js';
import * as metrics from '../metrics/metrics.js';
import * as log from '../log/log.js';

export interface CheckpointerOptions {
  key: SigningKey;
  everyRecords?: number;
  everyMs?: number;
  witnessDir?: string | null;
  /** Where background checkpoint failures are reported (default: a line on stderr). */
  onError?: (e: unknown) => void;
  /** Called with each checkpoint once it is durable (witness submission, docs/protocol.md §16); must not throw. */
  onCheckpoint?: (record: LedgerRecord) => void;
  /** Reported once when a rotation has retired this key on a shared store (default: a line on stderr). */
  onRetired?: (keyId: string, ledgerKeyId: string) => void;
}

export interface Checkpointer {
  /** Writes a checkpoint now unless nothing is new since the last one. */
  checkpointNow(): Promise<LedgerRecord | undefined>;
  /** Call after each write: starts a checkpoint once `everyRecords` records are new. */
  maybeCheckpoint(): void;
  /** Stops the timer and writes a final checkpoint covering everything. */
  stop(): Promise<void>;
}

export { WITNESS_FILE } from './witness.js';

/** The meta row of a shared store naming the ledger size right after the latest checkpoint. */
const CHECKPOINT_END_KEY = 'checkpoint_end';
/**
 * The meta row of a shared store holding when (ms since the epoch, the writer's clock) the latest
 * checkpoint was written: a replica's `every_ms` timer writes none while another replica's is younger
 * than `every_ms`, so N replicas write one timed checkpoint per interval, not N.
 */
const CHECKPOINT_AT_KEY = 'checkpoint_at';

export function startCheckpointer(store: LedgerStore, o: CheckpointerOptions): Checkpointer {
  const everyRecords = o.everyRecords ?? 1000;
  const onError = o.onError ?? ((e: unknown) => log.error(`writ: checkpoint failed: ${(e as Error)?.message ?? String(e)}`));
  const latest = store.latestCheckpoint();
  // The ledger size right after the last checkpoint: nothing is new while the size stays there.
  let coveredEnd = 0;
  const known = (last: LedgerRecord | undefined) => {
    coveredEnd = last ? last.seq + 1 : 0;
  };
  // LMDB answers at once; a shared store answers later (every write waits for it).
  let ready: Promise<unknown> = Promise.resolve();
  if (latest instanceof Promise) ready = latest.then(known);
  else known(latest);
  const onRetired =
    o.onRetired ??
    ((keyId: string, ledgerKeyId: string) =>
      log.warn(
        `writ: signing key ${keyId} was rotated out (the ledger's key is now ${ledgerKeyId}): this replica writes no more checkpoints; restart it with ` +
          `the new key file`,
      ));
  let chain: Promise<unknown> = Promise.resolve();
  let inFlight = 0;
  let stopped = false;
  /** This replica's key was rotated out: only a restart (with the new key) brings its checkpoints back. */
  let retiredReported = false;

  /**
   * The checkpoint write: its callback (root and signature inside the transaction) and, once durable,
   * the witness line. `final`: the SIGTERM checkpoint (docs/protocol.md §1), written even when the last
   * record is a checkpoint; otherwise one is written only when `atLeast` records are new. The callback
   * runs as soon as this is called (no await before it), which the cadence below relies on.
   */
  const writeNow = async (final: boolean, atLeast = 1, timed = false): Promise<LedgerRecord | undefined> => {
    let retiredFor: string | undefined;
    const before = coveredEnd;
    const record = await store
      .write(
        (tx) => {
          retiredFor = undefined;
          const size = tx.size();
          if (store.shared) {
            const end = tx.get<number>('meta', CHECKPOINT_END_KEY) ?? 0;
            if (end > coveredEnd) coveredEnd = end;
          }
          if (size === 0 || (!final && size - coveredEnd < atLeast)) return undefined;
          if (timed && store.shared && o.everyMs) {
            const at = tx.get<number>('meta', CHECKPOINT_AT_KEY);
            if (at !== undefined && Date.now() - at < o.everyMs) return undefined;
          }
          // `writ keys rotate` ran while this replica kept serving: its key is no longer the ledger's, and
          // a checkpoint signed by a retired key is what a rotation exists to prevent.
          const key = isCurrentDeploymentKey(store, tx, o.key);
          if (!key.current) {
            retiredFor = key.ledgerKeyId;
            return undefined;
          }
          const root = tx.root();
          const signature = signPayload(o.key.privateKey, checkpointPayload({ key_id: o.key.key_id, root, size }));
          if (store.shared) {
            tx.put('meta', CHECKPOINT_END_KEY, size + 1);
            tx.put('meta', CHECKPOINT_AT_KEY, Date.now());
          }
          // Covered from now on for the cadence (a write in the same batch counts from here).
          coveredEnd = size + 1;
          return tx.append({ kind: 'checkpoint', size, root, key_id: o.key.key_id, signature }).record;
        },
        { label: 'checkpoint', reads: [['meta', CHECKPOINT_END_KEY], ['meta', CHECKPOINT_AT_KEY], LEDGER_KEY_READ] },
      )
      .catch((e) => {
        // Not written: the records it would have covered count again.
        coveredEnd = Math.min(coveredEnd, before);
        throw e;
      });
    if (retiredFor !== undefined && !retiredReported) {
      retiredReported = true; // once: the timer would otherwise repeat it every few seconds
      metrics.signingKeyRetired.set(1);
      onRetired(o.key.key_id, retiredFor);
    }
    if (record) {
      metrics.checkpointsWritten.inc();
      coveredEnd = Math.max(coveredEnd, record.seq + 1); // a later one may already be written
      if (o.witnessDir) appendWitness(o.witnessDir, record);
      o.onCheckpoint?.(record);
    }
    return record;
  };

  const write = async (final: boolean, timed: boolean): Promise<LedgerRecord | undefined> => {
    await ready;
    return writeNow(final, 1, timed);
  };

  // One checkpoint at a time, in order (witness lines stay in seq order). `timed`: by the every_ms timer.
  const checkpointNow = (final = false, timed = false): Promise<LedgerRecord | undefined> => {
    inFlight++;
    const p = chain.then(() => write(final, timed));
    chain = p.catch(() => undefined).finally(() => inFlight--);
    return p;
  };

  // `every_records` exactly: the checkpoint's write follows the write that reaches the cadence at once,
  // in the same batch (LMDB) or transaction (PostgreSQL), before any other — group commit would otherwise
  // carry a whole batch past it. On a shared store `coveredEnd` may lag what another replica covered:
  // the checkpoint's callback then reads the newer `checkpoint_end` under the write lock and writes nothing.
  let inline = false;
  /** The ledger size an inline checkpoint was last tried at: one try per size (a retired key writes none). */
  let triedAt = -1;
  const inlineCadence = store.onWritten !== undefined;
  if (inlineCadence) {
    store.onWritten!((pendingSize) => {
      if (inline || stopped || retiredReported || pendingSize === triedAt || pendingSize - coveredEnd < everyRecords) return;
      triedAt = pendingSize;
      inline = true;
      try {
        // At least `everyRecords` new as the store sees it under its write lock (another replica's
        // checkpoint may have covered some of them since).
        writeNow(false, everyRecords).catch(onError);
      } finally {
        inline = false;
      }
    });
  }

  const timer =
    o.everyMs && o.everyMs > 0
      ? setInterval(() => {
          if (inFlight === 0 && !retiredReported && store.knownSize() !== coveredEnd) checkpointNow(false, true).catch(onError);
        }, o.everyMs)
      : undefined;
  timer?.unref();

  return {
    checkpointNow: () => checkpointNow(),
    maybeCheckpoint() {
      // A store with onWritten keeps the cadence by its writes themselves (above).
      if (inlineCadence || stopped || inFlight > 0 || retiredReported) return;
      if (store.knownSize() - coveredEnd >= everyRecords) checkpointNow().catch(onError);
    },
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      await chain;
      // Always one: a stop leaves a checkpoint as the ledger's last record, whatever came before — unless
      // a rotation retired this replica's key, which must sign nothing more: say so, since the SIGTERM
      // line promised a final checkpoint.
      const last = await checkpointNow(true);
      if (!last && retiredReported) {
        log.warn(`writ: no final checkpoint from this replica: its signing key ${o.key.key_id} was rotated out; replicas started with the new key write them`);
      }
    },
  };
}
