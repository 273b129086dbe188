/** RFC 9162 §2.1.4 consistency proofs, as stored nodes to fetch. Pure. */
import { assertSize, combine, nodesOfGroups, rangeNodes, readNodes, splitPoint, type NodeId, type ProofNodes, type SubtreeReader } from './tree.js';

/** The nodes of the consistency proof between the trees of sizes m and n (0 ≤ m ≤ n). None when m is 0 or n. */
export function consistencyNodes(m: number, n: number): ProofNodes {
  assertSize('m', m);
  assertSize('n', n);
  if (m > n) throw new RangeError(`cannot prove consistency from size ${m} to a smaller size ${n}`);
  if (m === 0 || m === n) return { ids: [], widths: [] };
  // SUBPROOF(m, D[s:e], b), unrolled: each step adds one sibling; the final step adds the subtree of
  // size m itself unless it is the whole old tree (b still true).
  const topDown: NodeId[][] = [];
  let start = 0;
  let end = n;
  let mm = m;
  let wholeOldTree = true;
  for (;;) {
    const len = end - start;
    const part: NodeId[] = [];
    if (mm === len) {
      if (!wholeOldTree) {
        rangeNodes(start, end, part);
        topDown.push(part);
      }
      break;
    }
    const k = splitPoint(len);
    if (mm <= k) {
      rangeNodes(start + k, end, part);
      end = start + k;
    } else {
      rangeNodes(start, start + k, part);
      start += k;
      mm -= k;
      wholeOldTree = false;
    }
    topDown.push(part);
  }
  return nodesOfGroups(topDown.reverse());
}

/** The consistency proof between the trees of sizes m and n, read through `r`. */
export function consistencyProof(m: number, n: number, r: SubtreeReader): Buffer[] {
  const nodes = consistencyNodes(m, n);
  return combine(nodes, readNodes(r, nodes.ids));
}
