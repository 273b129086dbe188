/** RFC 9162 consistency proof generation over stored complete subtrees. Pure. */
import { assertSize, rangeHash, splitPoint, type SubtreeReader } from './tree.js';

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
