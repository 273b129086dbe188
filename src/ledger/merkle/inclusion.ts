/** RFC 9162 inclusion proof generation over stored complete subtrees. Pure. */
import { assertSize, rangeHash, splitPoint, type SubtreeReader } from './tree.js';

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
