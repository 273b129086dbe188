/**
 * RFC 9162 §2.1 Merkle tree over ledger records (docs/protocol.md §6). Pure.
 *
 * Leaves are the record hashes exactly as stored (a record hash is already the RFC 9162 leaf hash
 * SHA-256(0x00 ‖ JCS(record))), so the tree hash of a single leaf is the leaf itself. Interior nodes
 * are SHA-256(0x01 ‖ left ‖ right).
 *
 * Everything here reads stored *complete* subtrees through a SubtreeReader: a tree of size n splits
 * into at most ⌈log2 n⌉+1 complete subtrees, so roots and proofs cost O(log n) reads whatever n is.
 * Sizes and indexes are plain numbers; the arithmetic avoids 32-bit bitwise operators so it stays
 * exact up to 2^53.
 */
import { createHash, hash } from 'node:crypto';

const NODE_PREFIX = Buffer.from([0x01]);
const HASH_TAG = 'sha256:';

/** 'sha256:<hex>' → 32 raw bytes. Throws on anything else. */
export function hashToBytes(tagged: string): Buffer {
  if (typeof tagged !== 'string' || tagged.length !== 71 || !tagged.startsWith(HASH_TAG) || !/^[0-9a-f]{64}$/.test(tagged.slice(7))) {
    throw new TypeError(`not a sha256:<64 lower-case hex> hash: ${String(tagged).slice(0, 80)}`);
  }
  return Buffer.from(tagged.slice(7), 'hex');
}

/** 32 raw bytes → 'sha256:<hex>'. */
export function bytesToHash(b: Uint8Array): string {
  return HASH_TAG + Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
}

// One reusable input buffer for 32-byte children: a one-shot hash of it is about twice as fast as a
// Hash object with three updates, and the verifier hashes one node per record on average.
const nodeInput = Buffer.alloc(65);
nodeInput[0] = 0x01;

/** SHA-256(0x01 ‖ left ‖ right). */
export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  if (left.length !== 32 || right.length !== 32) return createHash('sha256').update(NODE_PREFIX).update(left).update(right).digest();
  nodeInput.set(left, 1);
  nodeInput.set(right, 33);
  return hash('sha256', nodeInput, 'buffer');
}

/** SHA-256 of the empty string: RFC 9162 MTH of the empty list. */
export const EMPTY_ROOT: Buffer = createHash('sha256').digest();

/**
 * Reader of stored complete-subtree hashes: the hash of leaves [index·2^level, (index+1)·2^level),
 * level 0 = the leaf itself. Only called for subtrees that are complete within the tree size asked.
 */
export interface SubtreeReader {
  subtree(level: number, index: number): Buffer;
}

function assertSize(name: string, n: number): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${name} must be a non-negative safe integer, got ${n}`);
}

/** Largest power of two strictly less than n (n ≥ 2). */
function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && Number.isInteger(Math.log2(n)) && 2 ** Math.log2(n) === n;
}

/**
 * MTH of leaves [start, end) where start is aligned to the largest power of two below the range
 * length (true of every range RFC 9162's recursive split produces). The left part of each split is a
 * complete subtree read directly; only the right edge recurses, so this is O(log n) reads.
 */
function rangeHash(start: number, end: number, r: SubtreeReader): Buffer {
  const n = end - start;
  if (n <= 0) return EMPTY_ROOT;
  // Collect the complete subtrees left to right, then fold from the right: MTH = H(c0, H(c1, …)).
  const parts: Buffer[] = [];
  let s = start;
  let len = n;
  while (len > 0) {
    if (isPowerOfTwo(len)) {
      const level = Math.log2(len);
      parts.push(r.subtree(level, s / len));
      break;
    }
    const k = splitPoint(len);
    parts.push(r.subtree(Math.log2(k), s / k));
    s += k;
    len -= k;
  }
  let acc = parts[parts.length - 1]!;
  for (let i = parts.length - 2; i >= 0; i--) acc = nodeHash(parts[i]!, acc);
  return acc;
}

/** Refuses a run of subtrees of height `level` that is not complete within a tree of `size` leaves. */
export function checkSubtreeRange(level: number, from: number, count: number, size: number): void {
  const ok = Number.isSafeInteger(level) && level >= 0 && level <= 53 && Number.isSafeInteger(from) && from >= 0 && Number.isSafeInteger(count) && count >= 0;
  if (!ok || (from + count) * 2 ** level > size) throw new RangeError(`subtrees ${from}..${from + count - 1} of height ${level} are not complete in a tree of ${size}`);
}

/** Root of the tree of the first `size` leaves. O(log n) reads. */
export function rootAt(size: number, r: SubtreeReader): Buffer {
  assertSize('size', size);
  return rangeHash(0, size, r);
}

/** RFC 9162 §2.1.3 inclusion proof (audit path) of leaf `index` in the tree of `size` leaves. */
export function inclusionProof(index: number, size: number, r: SubtreeReader): Buffer[] {
  assertSize('size', size);
  assertSize('index', index);
  if (index >= size) throw new RangeError(`leaf ${index} is not in a tree of size ${size}`);
  // PATH(m, D[s:e]) = PATH(m, left) : MTH(right) or PATH(m-k, right) : MTH(left); the siblings are
  // found top-down and listed bottom-up.
  const topDown: Buffer[] = [];
  let start = 0;
  let end = size;
  let m = index;
  while (end - start > 1) {
    const k = splitPoint(end - start);
    if (m < k) {
      topDown.push(rangeHash(start + k, end, r));
      end = start + k;
    } else {
      topDown.push(rangeHash(start, start + k, r));
      start += k;
      m -= k;
    }
  }
  return topDown.reverse();
}

/** RFC 9162 §2.1.4 consistency proof between the trees of sizes m and n (0 ≤ m ≤ n). Empty when m is 0 or n. */
export function consistencyProof(m: number, n: number, r: SubtreeReader): Buffer[] {
  assertSize('m', m);
  assertSize('n', n);
  if (m > n) throw new RangeError(`cannot prove consistency from size ${m} to a smaller size ${n}`);
  if (m === 0 || m === n) return [];
  // SUBPROOF(m, D[s:e], b), unrolled: each step appends one sibling; the final step appends the
  // subtree of size m itself unless it is the whole old tree (b still true).
  const topDown: Buffer[] = [];
  let start = 0;
  let end = n;
  let mm = m;
  let wholeOldTree = true;
  for (;;) {
    const len = end - start;
    if (mm === len) {
      if (!wholeOldTree) topDown.push(rangeHash(start, end, r));
      break;
    }
    const k = splitPoint(len);
    if (mm <= k) {
      topDown.push(rangeHash(start + k, end, r));
      end = start + k;
    } else {
      topDown.push(rangeHash(start, start + k, r));
      start += k;
      mm -= k;
      wholeOldTree = false;
    }
  }
  return topDown.reverse();
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);
}

/** RFC 9162 §2.1.3.2: does `proof` show `leaf` at `index` in the tree of `size` leaves with `root`? */
export function verifyInclusion(index: number, size: number, leaf: Uint8Array, proof: Uint8Array[], root: Uint8Array): boolean {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return false;
  // Malformed input is refused before any hashing: with an empty proof the leaf IS the root, so two
  // equal byte strings of any length (even empty) would otherwise "prove" a size-1 tree.
  if (leaf.length !== 32 || root.length !== 32) return false;
  let fn = index;
  let sn = size - 1;
  let r: Uint8Array = leaf;
  for (const p of proof) {
    if (p.length !== 32) return false;
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        do {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        } while (fn % 2 === 0 && fn !== 0);
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && equalBytes(r, root);
}

/** RFC 9162 §2.1.4.2: does `proof` show the tree of size m with rootM is a prefix of the tree of size n with rootN? */
export function verifyConsistency(m: number, n: number, rootM: Uint8Array, rootN: Uint8Array, proof: Uint8Array[]): boolean {
  if (!Number.isSafeInteger(m) || !Number.isSafeInteger(n) || m < 0 || m > n) return false;
  // Both roots must be SHA-256 values whatever the sizes: the m = 0 and m = n shortcuts below never
  // hash them, and would otherwise accept any byte string as the new root.
  if (rootM.length !== 32 || rootN.length !== 32) return false;
  if (m === n) return proof.length === 0 && equalBytes(rootM, rootN);
  if (m === 0) return proof.length === 0 && equalBytes(rootM, EMPTY_ROOT);
  if (proof.length === 0) return false;
  if (proof.some((p) => p.length !== 32)) return false;
  const path: Uint8Array[] = isPowerOfTwo(m) ? [rootM, ...proof] : [...proof];
  let fn = m - 1;
  let sn = n - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr: Uint8Array = path[0]!;
  let sr: Uint8Array = path[0]!;
  for (let i = 1; i < path.length; i++) {
    const c = path[i]!;
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (fn % 2 === 0) {
        do {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        } while (fn % 2 === 0 && fn !== 0);
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && equalBytes(fr, rootM) && equalBytes(sr, rootN);
}

/**
 * Parent hashes to store when leaf `index` is appended: [{level, index, hash}] for every complete
 * subtree that the new leaf completes (level ≥ 1), computed from the leaf and stored siblings
 * (the left sibling at each level is read from `r`; the right one is the hash just computed).
 */
export function subtreesCompletedBy(index: number, leaf: Uint8Array, r: SubtreeReader): Array<{ level: number; index: number; hash: Buffer }> {
  assertSize('index', index);
  const out: Array<{ level: number; index: number; hash: Buffer }> = [];
  let right = Buffer.from(leaf.buffer, leaf.byteOffset, leaf.byteLength);
  let pos = index; // index of `right` at the current level
  let level = 0;
  while (pos % 2 === 1) {
    const left = r.subtree(level, pos - 1);
    right = nodeHash(left, right);
    level += 1;
    pos = (pos - 1) / 2;
    out.push({ level, index: pos, hash: right });
  }
  return out;
}

/** One node of an accumulator's persistent stack: a complete subtree and the stack below it. */
interface RangeNode<H> {
  readonly level: number;
  readonly hash: H;
  readonly below: RangeNode<H> | null;
}

/** An immutable snapshot of an accumulator (its compact range); cheap to keep. */
export interface AccumulatorState<H = Buffer> {
  readonly size: number;
  readonly top: RangeNode<H> | null;
}

/** Root of the tree a snapshot describes: fold the stack from the smallest subtree up. */
export function rootOfRange<H>(state: AccumulatorState<H>, combine: (left: H, right: H) => H, empty: H): H {
  let node = state.top;
  if (node === null) return empty;
  let acc = node.hash;
  for (node = node.below; node !== null; node = node.below) acc = combine(node.hash, acc);
  return acc;
}

/**
 * Streaming root accumulator (compact range, O(log n) memory), generic over how a hash is held
 * (Buffers here; hex text in the verifier, see verify-merkle.ts). The stack of complete subtrees is a
 * persistent linked list, so `state` snapshots share structure: a verifier can keep the last few
 * thousand sizes' states for checkpoints that trail their position.
 */
export class CompactRange<H> {
  #top: RangeNode<H> | null = null;
  #size = 0;

  constructor(
    private readonly combine: (left: H, right: H) => H,
    private readonly empty: H,
  ) {}

  append(leaf: H): void {
    let hash = leaf;
    let level = 0;
    let top = this.#top;
    while (top !== null && top.level === level) {
      hash = this.combine(top.hash, hash);
      level += 1;
      top = top.below;
    }
    this.#top = { level, hash, below: top };
    this.#size += 1;
  }

  get size(): number {
    return this.#size;
  }

  get state(): AccumulatorState<H> {
    return { size: this.#size, top: this.#top };
  }

  root(): H {
    return rootOfRange(this.state, this.combine, this.empty);
  }
}

/** The compact range over Buffer hashes (the store's integrity check, tests). */
export class MerkleAccumulator extends CompactRange<Buffer> {
  constructor() {
    super(nodeHash, EMPTY_ROOT);
  }

  override append(leaf: Uint8Array): void {
    super.append(Buffer.isBuffer(leaf) ? leaf : Buffer.from(leaf.buffer, leaf.byteOffset, leaf.byteLength));
  }

  static rootOf(state: AccumulatorState): Buffer {
    return rootOfRange(state, nodeHash, EMPTY_ROOT);
  }
}

/** In-memory reader over an array of leaves (for tests and small trees); memoises interior nodes. */
export function memoryReader(leaves: Uint8Array[]): SubtreeReader {
  const levels: Buffer[][] = [leaves.map((l) => Buffer.from(l.buffer, l.byteOffset, l.byteLength))];
  return {
    subtree(level: number, index: number): Buffer {
      const width = 2 ** level;
      if (!Number.isSafeInteger(index) || index < 0 || (index + 1) * width > levels[0]!.length) {
        throw new RangeError(`subtree (${level}, ${index}) is not complete over ${levels[0]!.length} leaves`);
      }
      for (let l = levels.length; l <= level; l++) {
        const below = levels[l - 1]!;
        const row: Buffer[] = [];
        for (let i = 0; i + 1 < below.length; i += 2) row.push(nodeHash(below[i]!, below[i + 1]!));
        levels.push(row);
      }
      return levels[level]![index]!;
    },
  };
}
