/**
 * Commit with revalidation: the one optimistic write protocol of the PDP. Every path that writes
 * something it decided on a snapshot (an MCP decision, direct or prepared by an HTTP front; AuthZEN
 * evaluations and searches; approvals; entity changes) goes through `commitWithRevalidation`:
 *
 *   propose(attempt)  read a snapshot and decide on it (the policy set, entities and clock in force);
 *   under the store's write lock: are the entities still the ones decided on (entitiesVersion,
 *                     settled, and on a shared store the stored version)? is the rest of the snapshot
 *                     still true (stillValid)? then write;
 *   answer            once the write is durable.
 *
 * When something moved, the attempt is thrown away and the request decided again, at most
 * MAX_ATTEMPTS times. Out of attempts because the entities keep moving is 503 STORE_UNAVAILABLE on
 * every path (docs/protocol.md §8: a transient condition of the PDP, retryable, never a decision);
 * out of attempts because the path's own snapshot keeps moving is the path's to say (`keepsMoving`).
 */
import { WritError, isWritError } from '../errors.js';
import { EntitiesUnsettled, StaleEntities, type EntityCache } from '../entities/entity-cache.js';
import type { LedgerStore, Table, WriteTx } from '../store/types.js';

/** Decisions of one request again and again while what they read keeps moving, before giving up. */
export const MAX_ATTEMPTS = 20;

/** Waits for an entity change of this process to land, before giving up (each wait ends with one durable). */
const MAX_SETTLE_WAITS = 10_000;

/** What the commit needs of the decision core: the store it writes and the entities decisions read. */
export interface CommitCore {
  readonly store: LedgerStore;
  readonly entities: EntityCache;
}

/** One attempt's decision, made on a snapshot, and how to write it. */
export interface Proposal<W, R> {
  /**
   * The entities version the decision read: the write goes ahead only while it is still the version in
   * force and no entity change is landing. Undefined for a write that reads entities only under the
   * store's lock (it checks them itself, EntityCache.checkSettled).
   */
  entitiesVersion?: string;
  /** Under the store's lock: false when anything else the decision read has moved since (decide again). */
  stillValid?(tx: WriteTx): boolean;
  /** Under the store's lock, after the checks: the write itself. */
  write(tx: WriteTx): W;
  label: string;
  /** The rows the write reads, fetched with its batch by a shared store. */
  reads?: Array<[Table, string]>;
  /** The answer, once the write is durable. */
  answer(written: W): R;
  /** The error a failed write answers (default storeFailure), or a promise of it: it may ledger it first. */
  failed?(e: unknown): unknown;
  /** The error (or a promise of it) when `stillValid` kept failing until the attempts ran out (default: as the entities). */
  keepsMoving?(): unknown;
}

export interface CommitOptions {
  /**
   * Decisions and evaluations hold off new entity changes of this process once they have lost twice
   * (EntityCache.hold()), so a stream of admin updates cannot starve them; entity writers do not.
   */
  holdEntities: boolean;
}

/** Thrown inside a write when the entities of this process moved since the decision read them. */
class EntitiesMoved extends Error {}

/** Thrown inside a write when the rest of the snapshot a decision read moved since (stillValid). */
class SnapshotMoved extends Error {}

/** A store failure answered as 503 STORE_UNAVAILABLE (fail closed); a WritError passes unchanged. */
export function storeFailure(e: unknown): WritError {
  if (isWritError(e)) return e;
  return new WritError('STORE_UNAVAILABLE', `the store could not complete the write: ${(e as Error)?.message ?? e}`, { cause: e });
}

/** Decides with `propose` and commits it, deciding again while what it read moves (see the file's head). */
export function commitWithRevalidation<W, R>(core: CommitCore, propose: (attempt: number) => Promise<Proposal<W, R>>, opts: CommitOptions): Promise<R> {
  if (!opts.holdEntities) return attempts(core, propose, () => undefined);
  return core.entities.withHoldOnDemand((hold) => attempts(core, propose, hold));
}

async function attempts<W, R>(core: CommitCore, propose: (attempt: number) => Promise<Proposal<W, R>>, hold: () => void): Promise<R> {
  const { store, entities } = core;
  for (let attempt = 0, waits = 0; ; ) {
    const p = await propose(attempt);
    let written: W;
    try {
      written = await store.write(
        (tx) => {
          // An entity change staged ahead of this write (group commit) would be recorded before it while
          // the decision was made without it: decide again once the change is in force.
          if (p.entitiesVersion !== undefined && (entities.version !== p.entitiesVersion || !entities.settled)) throw new EntitiesMoved();
          // Another replica moved the entities (shared store; read under the store's lock).
          entities.checkFresh(tx);
          if (p.stillValid && !p.stillValid(tx)) throw new SnapshotMoved();
          return p.write(tx);
        },
        { label: p.label, ...(p.reads ? { reads: p.reads } : {}) },
      );
    } catch (e) {
      // An entity change of this process still landing (embedded store): wait for it, then run again.
      // Each wait ends with some change durable, so this makes progress; the bound only stops a runaway.
      if (e instanceof EntitiesUnsettled && ++waits < MAX_SETTLE_WAITS) {
        await entities.settle();
        continue;
      }
      if (!(e instanceof EntitiesMoved || e instanceof SnapshotMoved || e instanceof StaleEntities)) throw await (p.failed ?? storeFailure)(e);
      if (attempt >= MAX_ATTEMPTS) {
        if (e instanceof SnapshotMoved && p.keepsMoving) throw await p.keepsMoving();
        throw new WritError('STORE_UNAVAILABLE', 'the entities keep changing; retry later');
      }
      if (attempt >= 1) hold();
      attempt++;
      if (e instanceof StaleEntities) {
        await entities.reload();
        continue;
      }
      // The snapshot reads only durable state; the write saw it moved by a write not yet durable. Decide
      // again once that is durable, so the next snapshot sees it (an execute then meets `invoking` and is
      // refused), not in a tight loop that runs out of attempts first.
      await entities.settle();
      await store.write(() => undefined, { label: 'settle' }).catch(() => undefined);
      continue;
    }
    return p.answer(written);
  }
}
