/**
 * The ledger's Merkle tree read through stored complete subtrees (docs/protocol.md §6). Pure.
 *
 * Everything here reads stored *complete* subtrees through a SubtreeReader: a tree of size n splits
 * into at most ⌈log2 n⌉+1 complete subtrees, so roots and proofs cost O(log n) reads whatever n is.
 * Sizes and indexes are plain numbers; the arithmetic avoids 32-bit bitwise operators so it stays
 * exact up to 2^53.
 */
import { EMPTY_ROOT, nodeHash } from './hasher.js';

/**
 * Reader of stored complete-subtree hashes: the hash of leaves [index·2^level, (index+1)·2^level),
 * level 0 = the leaf itself. Only called for subtrees that are complete within the tree size asked.
 */
export interface SubtreeReader {
  subtree(level: number, index: number): Buffer;
}

export function assertSize(name: string, n: number): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${name} must be a non-negative safe integer, got ${n}`);
}

/** Largest power of two strictly less than n (n ≥ 2). */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

export function isPowerOfTwo(n: number): boolean {
  return n > 0 && Number.isInteger(Math.log2(n)) && 2 ** Math.log2(n) === n;
}

/**
 * MTH of leaves [start, end) where start is aligned to the largest power of two below the range
 * length (true of every range RFC 9162's recursive split produces). The left part of each split is a
 * complete subtree read directly; only the right edge recurses, so this is O(log n) reads.
 */
export function rangeHash(start: number, end: number, r: SubtreeReader): Buffer {
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
