/**
 * The group commit over a backend held in memory: the rules both stores get from it (batching, stacking
 * versus running inside the transaction, the re-run after a fetch, failure fan-out, the listener's
 * write in the same batch, timeouts). The stores themselves are tested on LMDB and PostgreSQL.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ZERO_HASH } from '../../../src/ledger/record.js';
import { GroupCommit, type Backend, type BackendBatch } from '../../../src/store/machine/group-commit.js';
import { NeedRow, nodeKey, rowKey, type PendingRecord, type Writes } from '../../../src/store/machine/overlay.js';
import type { Table } from '../../../src/store/types.js';
import { WritError } from '../../../src/errors.js';

/** A store in memory: committed rows, nodes, size and head; commits counted; failures and stalls on demand. */
class MemoryBackend implements Backend<PendingRecord> {
  rows = new Map<string, string>();
  nodes = new Map<string, Buffer>();
  records: string[] = [];
  head = ZERO_HASH;
  commits: Array<{ records: number; labels: Array<string | undefined> }> = [];
  fetches: string[] = [];
  failNext = false;
  stall: Promise<void> | undefined;

  constructor(
    readonly stacks: boolean,
    /** Rows a transaction knows without fetching (a backend that stacks reads everything at once). */
    readonly fetchOnDemand = !stacks,
  ) {}

  begin(reads: Array<[Table, string]>): BackendBatch<PendingRecord> | Promise<BackendBatch<PendingRecord>> {
    const fetched = new Map<string, string | null>();
    const fetch = (table: Table, key: string): void => {
      this.fetches.push(key);
      fetched.set(rowKey(table, key), this.rows.get(rowKey(table, key)) ?? null);
    };
    for (const [t, k] of reads) fetch(t, k);
    const batch: BackendBatch<PendingRecord> = {
      size: this.records.length,
      head: this.head,
      base: {
        row: (table, key) => {
          if (!this.fetchOnDemand) return this.rows.get(rowKey(table, key)) ?? null;
          const v = fetched.get(rowKey(table, key));
          if (v === undefined) throw new NeedRow(table, key);
          return v;
        },
        node: (level, index) => {
          const n = this.nodes.get(nodeKey(level, index));
          if (!n) throw new Error(`node ${level}/${index} missing`);
          return n;
        },
      },
      fetch: async (need) => fetch(need.table!, need.key),
      commit: (w, end, labels) => (this.stall ? this.stall.then(() => this.#apply(w, end, labels)) : this.#apply(w, end, labels)),
    };
    return this.stacks ? batch : Promise.resolve(batch);
  }

  #apply(w: Writes<PendingRecord>, end: { size: number; head: string }, labels: Array<string | undefined>): void {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('disk on fire');
    }
    for (const r of w.records) this.records[r.seq] = r.text;
    for (const [k, n] of w.nodes) this.nodes.set(k, n.hash);
    for (const [k, r] of w.rows) {
      if (r.value === null) this.rows.delete(k);
      else this.rows.set(k, r.value);
    }
    this.head = end.head;
    this.commits.push({ records: w.records.length, labels });
  }

  pendingRecord(seq: number, text: string): PendingRecord {
    return { seq, text };
  }

  commitError(e: unknown): unknown {
    return new WritError('STORE_UNAVAILABLE', `store commit failed: ${(e as Error).message}`);
  }
}

const machine = (b: MemoryBackend, writeTimeoutMs = 5000) => new GroupCommit(b, { writeTimeoutMs });

for (const stacks of [true, false]) {
  const mode = stacks ? 'stacked batches' : 'callbacks inside the transaction';

  test(`${mode}: writes that arrive together share one commit, in the order of the calls`, async () => {
    const b = new MemoryBackend(stacks);
    const m = machine(b);
    const seqs = await Promise.all([1, 2, 3].map((n) => m.write((tx) => tx.append({ kind: 'k', n }).seq, { label: `w${n}` })));
    assert.deepEqual(seqs, [0, 1, 2]);
    assert.deepEqual(b.commits, [{ records: 3, labels: ['w1', 'w2', 'w3'] }]);
    assert.deepEqual(m.stats(), { commits: 1, writes: 3, failedCommits: 0 });
    assert.equal(JSON.parse(b.records[2]!).prev, JSON.parse(b.records[1]!).hash);
  });

  test(`${mode}: a callback that throws drops only its own writes`, async () => {
    const b = new MemoryBackend(stacks);
    const m = machine(b);
    const results = await Promise.allSettled([
      m.write((tx) => tx.put('meta', 'a', 1)),
      m.write((tx) => {
        tx.put('meta', 'b', 2);
        throw new Error('no');
      }),
      m.write((tx) => tx.put('meta', 'c', tx.get<number>('meta', 'a')! + 2)),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.deepEqual([...b.rows.keys()].sort(), [rowKey('meta', 'a'), rowKey('meta', 'c')]);
    assert.equal(b.rows.get(rowKey('meta', 'c')), '3');
  });

  test(`${mode}: a failed commit rejects its writes with STORE_UNAVAILABLE; the next write commits`, async () => {
    const b = new MemoryBackend(stacks);
    const m = machine(b);
    b.failNext = true;
    await assert.rejects(
      m.write((tx) => tx.append({ kind: 'lost' })),
      (e: unknown) => e instanceof WritError && e.code === 'STORE_UNAVAILABLE' && /disk on fire/.test(e.message),
    );
    assert.equal(m.stats().failedCommits, 1);
    assert.equal(await m.write((tx) => tx.append({ kind: 'kept' }).seq), 0);
    assert.equal(b.records.length, 1);
  });

  test(`${mode}: a listener's write follows the write that appended, in the same batch`, async () => {
    const b = new MemoryBackend(stacks);
    const m = machine(b);
    const seen: number[] = [];
    let follow: Promise<number> | undefined;
    m.onWritten((size) => {
      seen.push(size);
      if (size === 2 && !follow) follow = m.write((tx) => tx.append({ kind: 'checkpoint' }).seq, { label: 'cp' });
    });
    const writes = [1, 2, 3].map((n) => m.write((tx) => tx.append({ kind: 'k', n }).seq, { label: `w${n}` }));
    await Promise.all(writes);
    assert.equal(await follow, 2, 'right behind the write that reached size 2');
    assert.deepEqual(
      b.commits.flatMap((c) => c.labels),
      ['w1', 'w2', 'cp', 'w3'],
    );
    assert.equal(b.commits.length, 1);
    assert.deepEqual(seen, [1, 2, 3, 4]);
  });

  test(`${mode}: a write not durable within the timeout rejects with STORE_UNAVAILABLE`, async () => {
    const b = new MemoryBackend(stacks);
    const m = machine(b, 50);
    let release!: () => void;
    b.stall = new Promise<void>((resolve) => {
      release = resolve;
    });
    await assert.rejects(
      m.write((tx) => tx.append({ kind: 'slow' })),
      (e: unknown) => e instanceof WritError && e.code === 'STORE_UNAVAILABLE' && /timed out/.test(e.message),
    );
    release();
    b.stall = undefined;
    await m.close();
  });
}

test('callbacks inside the transaction: a row not fetched yet is fetched, and the callback runs again', async () => {
  const b = new MemoryBackend(false);
  b.rows.set(rowKey('entities', 'x'), '41');
  b.rows.set(rowKey('entities', 'y'), '1');
  const m = machine(b);
  let runs = 0;
  const sum = await m.write(
    (tx) => {
      runs++;
      const s = tx.get<number>('entities', 'x')! + tx.get<number>('entities', 'y')!;
      tx.put('entities', 'sum', s);
      return s;
    },
    { reads: [['entities', 'x']] },
  );
  assert.equal(sum, 42);
  assert.equal(runs, 2, 'x came with the batch, y made it run again');
  assert.deepEqual(b.fetches, ['x', 'y']);
  assert.equal(b.rows.get(rowKey('entities', 'sum')), '42');
});

test('stacked batches: a callback runs in write() over the writes not yet durable', async () => {
  const b = new MemoryBackend(true);
  const m = machine(b);
  let ran = false;
  const first = m.write((tx) => tx.put('meta', 'n', 1));
  const second = m.write((tx) => {
    ran = true;
    return tx.get<number>('meta', 'n');
  });
  assert.equal(ran, true, 'before any commit');
  assert.equal(b.commits.length, 0);
  await first;
  assert.equal(await second, 1);
});

test('stacked batches: when a commit fails, the batch built on top of it fails too', async () => {
  const b = new MemoryBackend(true);
  const m = machine(b);
  let release!: () => void;
  b.stall = new Promise<void>((resolve) => {
    release = resolve;
  });
  b.failNext = true;
  const first = m.write((tx) => tx.append({ kind: 'a' }));
  // The first batch is being committed (stalled) once the event loop turns; the second stacks on it.
  await new Promise((resolve) => setImmediate(resolve));
  const second = m.write((tx) => tx.append({ kind: 'b' }));
  release();
  await assert.rejects(first, /disk on fire/);
  await assert.rejects(second, /disk on fire/);
  b.stall = undefined;
  assert.equal(await m.write((tx) => tx.append({ kind: 'c' }).seq), 0, 'the head falls back to what committed');
});
