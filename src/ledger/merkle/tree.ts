/**
 * The ledger's Merkle tree read through stored complete subtrees (docs/protocol.md §6). Pure.
 *
 * Everything here is built from stored *complete* subtrees, named by NodeId: a tree of size n splits
 * into at most ⌈log2 n⌉+1 complete subtrees, so roots and proofs cost O(log n) nodes whatever n is,
 * listed first (ProofNodes) so that a store fetches them in one read, then combined.
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

/** A stored complete subtree: the hash of leaves [index·2^level, (index+1)·2^level); level 0 is a leaf. */
export interface NodeId {
  readonly level: number;
  readonly index: number;
}

/**
 * The stored nodes a proof or root is built from, and how: element i of the result folds the next
 * widths[i] hashes of `ids` (left to right in the tree) from the right, MTH = H(c0, H(c1, …)). A width
 * above 1 stands for a subtree that is not complete in the tree asked about (its right edge); RFC 9162's
 * split produces at most one per proof. A store fetches all of `ids` in one read, then calls combine.
 */
export interface ProofNodes {
  readonly ids: readonly NodeId[];
  readonly widths: readonly number[];
}

/**
 * Appends the complete subtrees covering leaves [start, end), left to right, where start is aligned
 * to the largest power of two below the range length (true of every range RFC 9162's recursive split
 * produces): O(log n) of them.
 */
export function rangeNodes(start: number, end: number, out: NodeId[]): void {
  let s = start;
  let len = end - start;
  while (len > 0) {
    if (isPowerOfTwo(len)) {
      out.push({ level: Math.log2(len), index: s / len });
      return;
    }
    const k = splitPoint(len);
    out.push({ level: Math.log2(k), index: s / k });
    s += k;
    len -= k;
  }
}

/** The ProofNodes of a list of ranges, each range one element of the result. */
export function nodesOfGroups(groups: readonly NodeId[][]): ProofNodes {
  const ids: NodeId[] = [];
  const widths: number[] = [];
  for (const g of groups) {
    for (const id of g) ids.push(id);
    widths.push(g.length);
  }
  return { ids, widths };
}

/** Folds fetched hashes (one per id, in order) into the elements `nodes` describes. */
export function combine(nodes: ProofNodes, hashes: readonly Buffer[]): Buffer[] {
  if (hashes.length !== nodes.ids.length) throw new RangeError(`${hashes.length} node hashes for ${nodes.ids.length} nodes`);
  const out: Buffer[] = [];
  let at = 0;
  for (const width of nodes.widths) {
    let acc = hashes[at + width - 1]!;
    for (let i = at + width - 2; i >= at; i--) acc = nodeHash(hashes[i]!, acc);
    out.push(acc);
    at += width;
  }
  return out;
}

/** Reads `ids` one by one through a reader (synchronous stores, tests). */
export function readNodes(r: SubtreeReader, ids: readonly NodeId[]): Buffer[] {
  return ids.map((id) => r.subtree(id.level, id.index));
}

/** Refuses a run of subtrees of height `level` that is not complete within a tree of `size` leaves. */
export function checkSubtreeRange(level: number, from: number, count: number, size: number): void {
  const ok = Number.isSafeInteger(level) && level >= 0 && level <= 53 && Number.isSafeInteger(from) && from >= 0 && Number.isSafeInteger(count) && count >= 0;
  if (!ok || (from + count) * 2 ** level > size)
    throw new RangeError(`subtrees ${from}..${from + count - 1} of height ${level} are not complete in a tree of ${size}`);
}

/** The nodes whose fold is the root of the tree of the first `size` leaves (none for the empty tree). */
export function rootNodes(size: number): ProofNodes {
  assertSize('size', size);
  const ids: NodeId[] = [];
  rangeNodes(0, size, ids);
  return { ids, widths: size === 0 ? [] : [ids.length] };
}

/** The root given the hashes of rootNodes(size)'s ids. */
export function rootFrom(nodes: ProofNodes, hashes: readonly Buffer[]): Buffer {
  return nodes.widths.length === 0 ? EMPTY_ROOT : combine(nodes, hashes)[0]!;
}

/** Root of the tree of the first `size` leaves. O(log n) reads. */
export function rootAt(size: number, r: SubtreeReader): Buffer {
  const nodes = rootNodes(size);
  return rootFrom(nodes, readNodes(r, nodes.ids));
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
