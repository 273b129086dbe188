// Commit with revalidation (src/pdp/commit.ts) against the real LMDB store and entity store: a decision
// commits while what it read holds, is decided again when it moved, and gives up with one code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbStore } from '../../src/store/lmdb/lmdb-store.js';
import { EntityCache } from '../../src/entities/entity-cache.js';
import { commitWithRevalidation, MAX_ATTEMPTS, type Proposal } from '../../src/pdp/commit.js';
import { WritError } from '../../src/errors.js';

async function openCore(t: { after(fn: () => Promise<void> | void): void }): Promise<{ store: LmdbStore; entities: EntityCache }> {
  const dir = mkdtempSync(join(tmpdir(), 'writ-pdp-commit-'));
  const store = await LmdbStore.open({ dataDir: join(dir, 'data') });
  const entities = new EntityCache(store);
  await entities.reload();
  t.after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { store, entities };
}

/** A proposal that appends one record naming `attempt`, valid when `valid(attempt)`. */
function proposal(
  attempt: number,
  entitiesVersion: string | undefined,
  valid: (attempt: number) => boolean,
): Proposal<number, { attempt: number; seq: number }> {
  return {
    ...(entitiesVersion === undefined ? {} : { entitiesVersion }),
    stillValid: () => valid(attempt),
    write: (tx) => tx.append({ kind: 'test', attempt }).seq,
    label: 'test',
    answer: (seq) => ({ attempt, seq }),
  };
}

test('a proposal still valid under the write is committed on the first attempt and answered once durable', async (t) => {
  const core = await openCore(t);
  const answer = await commitWithRevalidation(core, async (attempt) => proposal(attempt, core.entities.version, () => true), { holdEntities: true });
  assert.equal(answer.attempt, 0);
  assert.equal((await core.store.getRecord(answer.seq))?.kind, 'test');
});

test('a snapshot that moved is decided again: only the attempt that held is written', async (t) => {
  const core = await openCore(t);
  const before = core.store.knownSize();
  const answer = await commitWithRevalidation(core, async (attempt) => proposal(attempt, core.entities.version, (a) => a >= 3), { holdEntities: true });
  assert.equal(answer.attempt, 3);
  assert.equal(core.store.knownSize(), before + 1);
});

test("a snapshot that keeps moving ends in the proposal's own answer; without one, in 503 STORE_UNAVAILABLE", async (t) => {
  const core = await openCore(t);
  let proposals = 0;
  await assert.rejects(
    commitWithRevalidation(
      core,
      async (attempt) => {
        proposals++;
        return { ...proposal(attempt, core.entities.version, () => false), keepsMoving: () => new WritError('EXECUTION_IN_FLIGHT', 'moving') };
      },
      { holdEntities: true },
    ),
    (e: WritError) => e.code === 'EXECUTION_IN_FLIGHT',
  );
  assert.equal(proposals, MAX_ATTEMPTS + 1);
  await assert.rejects(
    commitWithRevalidation(core, async (attempt) => proposal(attempt, undefined, () => false), { holdEntities: false }),
    (e: WritError) => e.code === 'STORE_UNAVAILABLE',
  );
});

test('entities that keep changing between the decision and the write end in 503 STORE_UNAVAILABLE, nothing written', async (t) => {
  const core = await openCore(t);
  const before = core.store.knownSize();
  await assert.rejects(
    // The version decided on is never the one in force: as if an entity change landed every time.
    commitWithRevalidation(core, async (attempt) => proposal(attempt, `stale-${attempt}`, () => true), { holdEntities: true }),
    (e: WritError) => e.code === 'STORE_UNAVAILABLE' && /entities keep changing/.test(e.message),
  );
  // The attempts' settle writes append nothing.
  assert.equal(core.store.knownSize(), before);
});

test('an entity change staged by this process is waited for, and the decision made again on the entities after it', async (t) => {
  const core = await openCore(t);
  const versions: string[] = [];
  let change: Promise<void> | undefined;
  const answer = await commitWithRevalidation(
    core,
    async (attempt) => {
      versions.push(core.entities.version);
      // The first attempt's write queues behind an entity change staged meanwhile (group commit).
      if (attempt === 0) {
        change = core.store
          .write(
            (tx) => {
              const staged = core.entities.stage(tx, [{ entity: { uid: { type: 'User', id: 'u1' }, attrs: {}, parents: [] } }], 'api');
              return staged;
            },
            { label: 'entity' },
          )
          .then((staged) => staged.commit());
      }
      return proposal(attempt, versions.at(-1), () => true);
    },
    { holdEntities: true },
  );
  await change;
  assert.equal(answer.attempt, 1);
  assert.notEqual(versions[0], versions[1]);
  assert.equal(versions[1], core.entities.version);
});

test("a write failure is answered by the proposal's `failed`, by default 503 STORE_UNAVAILABLE", async (t) => {
  const core = await openCore(t);
  const failing = (attempt: number): Proposal<number, number> => ({
    write: () => {
      throw new Error('disk on fire');
    },
    label: 'test',
    answer: () => attempt,
  });
  await assert.rejects(
    commitWithRevalidation(core, async (a) => failing(a), { holdEntities: false }),
    (e: WritError) => e.code === 'STORE_UNAVAILABLE' && /disk on fire/.test(e.message),
  );
  await assert.rejects(
    commitWithRevalidation(core, async (a) => ({ ...failing(a), failed: () => new WritError('APPROVAL_STALE', 'refused') }), { holdEntities: false }),
    (e: WritError) => e.code === 'APPROVAL_STALE',
  );
});
