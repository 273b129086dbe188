/** RFC 9162 proof verification. Pure. */
import { EMPTY_ROOT, nodeHash } from './hasher.js';
import { isPowerOfTwo } from './tree.js';

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
