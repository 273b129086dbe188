/**
 * RFC 9162 proof verification. Pure. A proof that does not verify throws a ProofError saying why;
 * callers that answer a client map it to their own code (`writ verify`: ROOT_MISMATCH; the witness:
 * 422).
 */
import { EMPTY_ROOT, nodeHash } from './hasher.js';
import { isPowerOfTwo } from './tree.js';

/**
 * Why a proof does not verify:
 * - `range`: the index or sizes are not a leaf of the tree, or not an older and a newer size;
 * - `malformed`: a leaf, root or proof element is not a 32-byte hash;
 * - `length`: the proof has more or fewer elements than the sizes call for;
 * - `root`: the proof is well formed, but leads to another root.
 */
export type ProofFailure = 'range' | 'malformed' | 'length' | 'root';

export class ProofError extends Error {
  override readonly name = 'ProofError';
  constructor(
    readonly reason: ProofFailure,
    message: string,
  ) {
    super(message);
  }
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);
}

function requireHashes(what: string, hashes: readonly Uint8Array[]): void {
  for (const h of hashes) if (h.length !== 32) throw new ProofError('malformed', `${what} is not a 32-byte hash`);
}

/**
 * Folds `path` (from `from`) over `seed` as RFC 9162 §2.1.3.2 / §2.1.4.2 step through the tree: fn is
 * the seed's last leaf index, sn the tree's. Answers the root it leads to, and in `left` (only when
 * asked: consistency) the root the left-hand children alone lead to. Throws `length` when the path
 * does not end at the root.
 */
function fold(fn: number, sn: number, seed: Uint8Array, path: readonly Uint8Array[], from: number, left?: { root: Uint8Array }): Uint8Array {
  let root: Uint8Array = seed;
  for (let i = from; i < path.length; i++) {
    const c = path[i]!;
    if (sn === 0) throw new ProofError('length', `the proof has ${path.length - i} element(s) too many`);
    if (fn % 2 === 1 || fn === sn) {
      if (left !== undefined) left.root = nodeHash(c, left.root);
      root = nodeHash(c, root);
      if (fn % 2 === 0) {
        do {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        } while (fn % 2 === 0 && fn !== 0);
      }
    } else {
      root = nodeHash(root, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  if (sn !== 0) throw new ProofError('length', 'the proof is too short for the tree size');
  return root;
}

/** RFC 9162 §2.1.3.2: `proof` shows `leaf` at `index` in the tree of `size` leaves with `root`, or this throws a ProofError. */
export function verifyInclusion(index: number, size: number, leaf: Uint8Array, proof: readonly Uint8Array[], root: Uint8Array): void {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) {
    throw new ProofError('range', `leaf ${index} is not in a tree of size ${size}`);
  }
  // Malformed input is refused before any hashing: with an empty proof the leaf IS the root, so two
  // equal byte strings of any length (even empty) would otherwise "prove" a size-1 tree.
  requireHashes('the leaf or root', [leaf, root]);
  requireHashes('a proof element', proof);
  if (!equalBytes(fold(index, size - 1, leaf, proof, 0), root))
    throw new ProofError('root', `the proof does not lead from leaf ${index} to the root of the tree of ${size}`);
}

/**
 * RFC 9162 §2.1.4.2: `proof` shows the tree of size m with rootM is a prefix of the tree of size n
 * with rootN, or this throws a ProofError.
 */
export function verifyConsistency(m: number, n: number, rootM: Uint8Array, rootN: Uint8Array, proof: readonly Uint8Array[]): void {
  if (!Number.isSafeInteger(m) || !Number.isSafeInteger(n) || m < 0 || m > n) throw new ProofError('range', `no consistency from size ${m} to size ${n}`);
  // Both roots must be SHA-256 values whatever the sizes: the m = 0 and m = n shortcuts below never
  // hash them, and would otherwise accept any byte string as the new root.
  requireHashes('a root', [rootM, rootN]);
  if (m === n || m === 0) {
    if (proof.length !== 0) throw new ProofError('length', `the consistency proof from size ${m} to ${n} must be empty`);
    if (!equalBytes(rootM, m === n ? rootN : EMPTY_ROOT))
      throw new ProofError('root', m === n ? 'trees of equal size have different roots' : 'the root of the empty tree is not the hash of nothing');
    return;
  }
  if (proof.length === 0) throw new ProofError('length', `the consistency proof from size ${m} to ${n} is empty`);
  requireHashes('a proof element', proof);
  // The old tree's root starts the path when it is complete (the proof omits it then).
  const path: readonly Uint8Array[] = isPowerOfTwo(m) ? [rootM, ...proof] : proof;
  let fn = m - 1;
  let sn = n - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  const left = { root: path[0]! };
  const root = fold(fn, sn, path[0]!, path, 1, left);
  if (!equalBytes(left.root, rootM)) throw new ProofError('root', `the proof does not lead to the root of the tree of ${m}`);
  if (!equalBytes(root, rootN)) throw new ProofError('root', `the proof does not lead to the root of the tree of ${n}`);
}
