import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { EMPTY_ROOT, bytesToHash, hashToBytes, nodeHash } from '../../../src/ledger/merkle/hasher.js';
import { MerkleAccumulator } from '../../../src/ledger/merkle/compact-range.js';
import { consistencyNodes, consistencyProof } from '../../../src/ledger/merkle/consistency.js';
import { inclusionNodes, inclusionProof } from '../../../src/ledger/merkle/inclusion.js';
import { memoryReader, rootAt, rootNodes, subtreesCompletedBy, type SubtreeReader } from '../../../src/ledger/merkle/tree.js';
import { ProofError, verifyConsistency, verifyInclusion } from '../../../src/ledger/merkle/verify.js';
import { vectorLeaf } from '../ledger-vectors.js';

const golden = JSON.parse(readFileSync(new URL('../../../../vectors/golden/ledger.json', import.meta.url), 'utf8'));

// ---- A naive RFC 9162 §2.1 reference, straight from the text, over the whole leaf list. ----
const sha = (...parts: Uint8Array[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};
const largestPowerOfTwoBelow = (n: number) => 2 ** Math.floor(Math.log2(n - 1));
function refMth(d: Buffer[]): Buffer {
  if (d.length === 0) return sha();
  if (d.length === 1) return d[0]!; // leaves are already leaf hashes (record hashes)
  const k = largestPowerOfTwoBelow(d.length);
  return sha(Buffer.from([1]), refMth(d.slice(0, k)), refMth(d.slice(k)));
}
function refPath(m: number, d: Buffer[]): Buffer[] {
  if (d.length <= 1) return [];
  const k = largestPowerOfTwoBelow(d.length);
  return m < k ? [...refPath(m, d.slice(0, k)), refMth(d.slice(k))] : [...refPath(m - k, d.slice(k)), refMth(d.slice(0, k))];
}
function refSubproof(m: number, d: Buffer[], b: boolean): Buffer[] {
  const n = d.length;
  if (m === n) return b ? [] : [refMth(d)];
  const k = largestPowerOfTwoBelow(n);
  return m <= k ? [...refSubproof(m, d.slice(0, k), b), refMth(d.slice(k))] : [...refSubproof(m - k, d.slice(k), false), refMth(d.slice(0, k))];
}
const refProof = (m: number, d: Buffer[]) => refSubproof(m, d, true);

const leaves = (n: number) => Array.from({ length: n }, (_, i) => vectorLeaf(i));
const LEAVES = leaves(70);

/** Counts reads, so the tests can hold proofs to O(log n) reads. */
function counting(r: SubtreeReader): SubtreeReader & { reads: number } {
  const c = {
    reads: 0,
    subtree: (level: number, index: number) => {
      c.reads++;
      return r.subtree(level, index);
    },
  };
  return c;
}

test('golden merkle section: root of 5, inclusion of seq 2 in 5, consistency 3 → 5', () => {
  const lines = (golden.export_jsonl as string)
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const ls = lines.map((r) => hashToBytes(r.hash));
  const r = memoryReader(ls);
  assert.equal(bytesToHash(rootAt(5, r)), golden.merkle.root_size_5);
  assert.deepEqual(
    inclusionProof(2, 5, r).map((b) => b.toString('hex')),
    golden.merkle.inclusion_seq_2_size_5,
  );
  assert.deepEqual(
    consistencyProof(3, 5, r).map((b) => b.toString('hex')),
    golden.merkle.consistency_3_to_5,
  );
  // and the golden checkpoint (size 4) carries the root of the first 4
  assert.equal(bytesToHash(rootAt(4, r)), lines[4].root);
  const root5 = hashToBytes(golden.merkle.root_size_5);
  verifyInclusion(
    2,
    5,
    ls[2]!,
    golden.merkle.inclusion_seq_2_size_5.map((h: string) => Buffer.from(h, 'hex')),
    root5,
  );
  verifyConsistency(
    3,
    5,
    rootAt(3, r),
    root5,
    golden.merkle.consistency_3_to_5.map((h: string) => Buffer.from(h, 'hex')),
  );
});

test('hash text ↔ bytes, node hash and the empty root', () => {
  const h = `sha256:${'ab'.repeat(32)}`;
  assert.equal(bytesToHash(hashToBytes(h)), h);
  for (const bad of [`sha256:${'AB'.repeat(32)}`, `sha256:${'ab'.repeat(31)}`, `sha512:${'ab'.repeat(32)}`, 'ab'.repeat(32)])
    assert.throws(() => hashToBytes(bad), TypeError);
  assert.equal(EMPTY_ROOT.toString('hex'), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  assert.deepEqual(nodeHash(LEAVES[0]!, LEAVES[1]!), sha(Buffer.from([1]), LEAVES[0]!, LEAVES[1]!));
  assert.deepEqual(rootAt(0, memoryReader([])), EMPTY_ROOT);
});

test('roots, inclusion and consistency proofs equal the naive reference for every size up to 70', () => {
  const r = memoryReader(LEAVES);
  for (let n = 1; n <= LEAVES.length; n++) {
    const d = LEAVES.slice(0, n);
    const root = rootAt(n, r);
    assert.deepEqual(root, refMth(d), `root ${n}`);
    for (let i = 0; i < n; i++) {
      const proof = inclusionProof(i, n, r);
      assert.deepEqual(proof, refPath(i, d), `inclusion ${i} of ${n}`);
      verifyInclusion(i, n, d[i]!, proof, root);
    }
    for (let m = 1; m < n; m++) {
      const proof = consistencyProof(m, n, r);
      assert.deepEqual(proof, refProof(m, d), `consistency ${m} → ${n}`);
      verifyConsistency(m, n, rootAt(m, r), root, proof);
    }
    assert.deepEqual(consistencyProof(n, n, r), []);
    verifyConsistency(n, n, root, root, []);
    verifyConsistency(0, n, EMPTY_ROOT, root, []);
  }
});

test('proof verification rejects wrong leaves, roots, indexes, sizes and paths', () => {
  const r = memoryReader(LEAVES);
  fc.assert(
    fc.property(fc.integer({ min: 2, max: 70 }), fc.nat(), fc.nat(), (n, a, b) => {
      const i = a % n;
      const root = rootAt(n, r);
      const proof = inclusionProof(i, n, r);
      const other = LEAVES[(i + 1) % n]!;
      assert.throws(() => verifyInclusion(i, n, other, proof, root), ProofError);
      assert.throws(() => verifyInclusion(i, n, LEAVES[i]!, proof, rootAt(n - 1, r)), ProofError);
      assert.throws(() => verifyInclusion(n, n, LEAVES[i]!, proof, root), ProofError);
      assert.throws(() => verifyInclusion(i, n, LEAVES[i]!, [...proof, LEAVES[0]!], root), ProofError);
      if (proof.length > 0) {
        const flipped = proof.map((p, k) => (k === b % proof.length ? Buffer.from(p.map((x, j) => (j === 0 ? x ^ 1 : x))) : p));
        assert.throws(() => verifyInclusion(i, n, LEAVES[i]!, flipped, root), ProofError);
        assert.throws(() => verifyInclusion(i, n, LEAVES[i]!, proof.slice(1), root), ProofError);
      }
      const m = 1 + (b % (n - 1));
      const cproof = consistencyProof(m, n, r);
      verifyConsistency(m, n, rootAt(m, r), root, cproof);
      assert.throws(() => verifyConsistency(m, n, sha(Buffer.from('x')), root, cproof), ProofError);
      assert.throws(() => verifyConsistency(m, n, rootAt(m, r), sha(Buffer.from('x')), cproof), ProofError);
      assert.throws(() => verifyConsistency(m, n, rootAt(m, r), root, cproof.slice(0, -1)), ProofError);
      assert.throws(() => verifyConsistency(m, n, rootAt(m, r), root, [...cproof, LEAVES[0]!]), ProofError);
      assert.throws(() => verifyConsistency(n, m, root, rootAt(m, r), cproof), ProofError);
      return true;
    }),
    { numRuns: 300, seed: 9162 },
  );
  assert.throws(() => verifyConsistency(3, 5, rootAt(3, r), rootAt(5, r), []), ProofError);
  assert.throws(() => verifyConsistency(0, 5, rootAt(1, r), rootAt(5, r), []), ProofError);
});

test('subtreesCompletedBy builds, append by append, a store that serves every root and proof', () => {
  const store = new Map<string, Buffer>();
  const reader: SubtreeReader = {
    subtree(level, index) {
      const h = store.get(`${level}/${index}`);
      if (!h) throw new Error(`subtree ${level}/${index} not stored`);
      return h;
    },
  };
  for (let i = 0; i < LEAVES.length; i++) {
    const completed = subtreesCompletedBy(i, LEAVES[i]!, reader);
    // leaf i completes exactly one subtree per trailing 1-bit of i
    assert.equal(completed.length, Math.log2((i + 1) & -(i + 1)));
    store.set(`0/${i}`, LEAVES[i]!);
    for (const c of completed) store.set(`${c.level}/${c.index}`, c.hash);
    const d = LEAVES.slice(0, i + 1);
    assert.deepEqual(rootAt(i + 1, reader), refMth(d));
    assert.deepEqual(inclusionProof(0, i + 1, reader), refPath(0, d));
    if (i > 0) assert.deepEqual(consistencyProof(i, i + 1, reader), refProof(i, d));
  }
  const r = memoryReader(LEAVES);
  for (const [key, hash] of store) {
    const [level, index] = key.split('/').map(Number) as [number, number];
    assert.deepEqual(hash, r.subtree(level, index), `subtree ${key}`);
  }
});

test('the accumulator equals the reference root at every size, and its snapshots keep theirs', () => {
  const acc = new MerkleAccumulator();
  assert.deepEqual(acc.root(), EMPTY_ROOT);
  const states = [acc.state];
  for (let i = 0; i < LEAVES.length; i++) {
    acc.append(LEAVES[i]!);
    states.push(acc.state);
    assert.equal(acc.size, i + 1);
    assert.deepEqual(acc.root(), refMth(LEAVES.slice(0, i + 1)));
  }
  for (const s of states) assert.deepEqual(MerkleAccumulator.rootOf(s), refMth(LEAVES.slice(0, s.size)));
});

test('roots and proofs cost O(log n) subtree reads, also far beyond 2^32 leaves', () => {
  const r = memoryReader(leaves(4096));
  for (const n of [1, 2, 3, 5, 100, 1000, 4095, 4096]) {
    const bound = 2 * Math.ceil(Math.log2(n + 1)) + 2;
    const c = counting(r);
    rootAt(n, c);
    assert.ok(c.reads <= bound, `root ${n}: ${c.reads} reads`);
    for (const i of [0, Math.floor(n / 2), n - 1]) {
      const ci = counting(r);
      inclusionProof(i, n, ci);
      assert.ok(ci.reads <= 2 * bound, `inclusion ${i}/${n}: ${ci.reads} reads`);
    }
    for (const m of [1, Math.floor(n / 2), n - 1].filter((m) => m >= 1 && m < n)) {
      const cc = counting(r);
      consistencyProof(m, n, cc);
      assert.ok(cc.reads <= 2 * bound, `consistency ${m}/${n}: ${cc.reads} reads`);
    }
  }
  // A synthetic tree of 2^40 + 12345 equal leaves (so every stored subtree hash is known without
  // storing anything): answers must verify, and every read must name a complete subtree inside the
  // tree — exact positions, no 32-bit truncation.
  const big = 2 ** 40 + 12345;
  const byLevel: Buffer[] = [sha(Buffer.from('leaf'))];
  for (let l = 1; l <= 41; l++) byLevel.push(nodeHash(byLevel[l - 1]!, byLevel[l - 1]!));
  let maxEnd = 0;
  const synthetic = counting({
    subtree: (level, index) => {
      assert.ok(Number.isSafeInteger(index) && index >= 0);
      maxEnd = Math.max(maxEnd, (index + 1) * 2 ** level);
      return byLevel[level]!;
    },
  });
  const root = rootAt(big, synthetic);
  assert.ok(synthetic.reads <= 41);
  for (const index of [0, 2 ** 33 + 7, big - 1]) {
    const proof = inclusionProof(index, big, synthetic);
    // a leaf in the complete left 2^40 subtree needs 40 siblings there plus the right part
    if (index < 2 ** 40) assert.equal(proof.length, 41);
    else assert.ok(proof.length <= 1 + Math.ceil(Math.log2(12345)));
    verifyInclusion(index, big, byLevel[0]!, proof, root);
  }
  for (const m of [1, 2 ** 35 + 3, 2 ** 40, big - 1]) {
    const cproof = consistencyProof(m, big, synthetic);
    verifyConsistency(m, big, rootAt(m, synthetic), root, cproof);
  }
  assert.ok(maxEnd <= big, 'every read is a complete subtree inside the tree');
});

test('invalid proof requests throw RangeError', () => {
  const r = memoryReader(LEAVES);
  assert.throws(() => inclusionProof(5, 5, r), RangeError);
  assert.throws(() => inclusionProof(-1, 5, r), RangeError);
  assert.throws(() => consistencyProof(6, 5, r), RangeError);
  assert.throws(() => rootAt(1.5, r), RangeError);
  assert.throws(() => rootAt(71, r), RangeError); // the reader cannot serve an incomplete subtree
});

test('proof nodes are complete subtrees of the tree asked about, with at most one to fold (its right edge)', () => {
  for (let size = 1; size <= 70; size++) {
    const plans = [rootNodes(size)];
    for (let i = 0; i < size; i++) plans.push(inclusionNodes(i, size));
    for (let m = 0; m <= size; m++) plans.push(consistencyNodes(m, size));
    for (const plan of plans) {
      assert.equal(
        plan.widths.reduce((a, b) => a + b, 0),
        plan.ids.length,
      );
      for (const id of plan.ids) assert.ok((id.index + 1) * 2 ** id.level <= size, `(${id.level}, ${id.index}) within ${size}`);
    }
    for (const plan of plans.slice(1)) assert.ok(plan.widths.filter((w) => w > 1).length <= 1);
  }
  assert.deepEqual(rootNodes(0), { ids: [], widths: [] });
  assert.deepEqual(rootNodes(6), {
    ids: [
      { level: 2, index: 0 },
      { level: 1, index: 2 },
    ],
    widths: [2],
  });
  assert.deepEqual(inclusionNodes(0, 6), {
    ids: [
      { level: 0, index: 1 },
      { level: 1, index: 1 },
      { level: 1, index: 2 },
    ],
    widths: [1, 1, 1],
  });
  assert.deepEqual(inclusionNodes(0, 7), {
    ids: [
      { level: 0, index: 1 },
      { level: 1, index: 1 },
      { level: 1, index: 2 },
      { level: 0, index: 6 },
    ],
    widths: [1, 1, 2],
  });
});

test('a proof that does not verify throws a ProofError saying why', () => {
  const r = memoryReader(LEAVES.slice(0, 7));
  const root = rootAt(7, r);
  const proof = inclusionProof(2, 7, r);
  const reason = (f: () => void) => {
    try {
      f();
    } catch (e) {
      assert.ok(e instanceof ProofError, String(e));
      return e.reason;
    }
    return 'verified';
  };
  assert.equal(
    reason(() => verifyInclusion(2, 7, LEAVES[2]!, proof, root)),
    'verified',
  );
  assert.equal(
    reason(() => verifyInclusion(7, 7, LEAVES[2]!, proof, root)),
    'range',
  );
  assert.equal(
    reason(() => verifyInclusion(2, 7, LEAVES[2]!.subarray(1), proof, root)),
    'malformed',
  );
  assert.equal(
    reason(() => verifyInclusion(2, 7, LEAVES[2]!, [...proof, Buffer.alloc(31)], root)),
    'malformed',
  );
  assert.equal(
    reason(() => verifyInclusion(2, 7, LEAVES[2]!, proof.slice(1), root)),
    'length',
  );
  assert.equal(
    reason(() => verifyInclusion(2, 7, LEAVES[2]!, [...proof, root], root)),
    'length',
  );
  assert.equal(
    reason(() => verifyInclusion(2, 7, LEAVES[3]!, proof, root)),
    'root',
  );
  const cproof = consistencyProof(3, 7, r);
  assert.equal(
    reason(() => verifyConsistency(3, 7, rootAt(3, r), root, cproof)),
    'verified',
  );
  assert.equal(
    reason(() => verifyConsistency(7, 3, root, rootAt(3, r), cproof)),
    'range',
  );
  assert.equal(
    reason(() => verifyConsistency(3, 7, rootAt(3, r), root, [])),
    'length',
  );
  assert.equal(
    reason(() => verifyConsistency(7, 7, root, root, cproof)),
    'length',
  );
  assert.equal(
    reason(() => verifyConsistency(3, 7, rootAt(4, r), root, cproof)),
    'root',
  );
  assert.equal(
    reason(() => verifyConsistency(0, 0, EMPTY_ROOT, EMPTY_ROOT, [])),
    'verified',
  );
  assert.equal(
    reason(() => verifyConsistency(0, 0, root, root, [])),
    'verified',
  );
  assert.equal(
    reason(() => verifyConsistency(0, 7, root, root, [])),
    'root',
  );
});
