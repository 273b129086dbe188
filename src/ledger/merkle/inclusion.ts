/** RFC 9162 §2.1.3 inclusion proofs (audit paths), as stored nodes to fetch. Pure. */
import { assertSize, combine, nodesOfGroups, rangeNodes, readNodes, splitPoint, type NodeId, type ProofNodes, type SubtreeReader } from './tree.js';

/** The nodes of the inclusion proof of leaf `index` in the tree of `size` leaves, bottom-up. */
export function inclusionNodes(index: number, size: number): ProofNodes {
  assertSize('size', size);
  assertSize('index', index);
  if (index >= size) throw new RangeError(`leaf ${index} is not in a tree of size ${size}`);
  // PATH(m, D[s:e]) = PATH(m, left) : MTH(right) or PATH(m-k, right) : MTH(left); the siblings are
  // found top-down and listed bottom-up.
  const topDown: NodeId[][] = [];
  let start = 0;
  let end = size;
  let m = index;
  while (end - start > 1) {
    const k = splitPoint(end - start);
    const sibling: NodeId[] = [];
    if (m < k) {
      rangeNodes(start + k, end, sibling);
      end = start + k;
    } else {
      rangeNodes(start, start + k, sibling);
      start += k;
      m -= k;
    }
    topDown.push(sibling);
  }
  return nodesOfGroups(topDown.reverse());
}

/** The inclusion proof of leaf `index` in the tree of `size` leaves, read through `r`. */
export function inclusionProof(index: number, size: number, r: SubtreeReader): Buffer[] {
  const nodes = inclusionNodes(index, size);
  return combine(nodes, readNodes(r, nodes.ids));
}
