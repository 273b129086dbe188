/** The compact range: a streaming Merkle root over appended leaves in O(log n) memory. Pure. */
import { EMPTY_ROOT, nodeHash } from './hasher.js';

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
 * (Buffers here; hex text in the verifier, see hex-compact-range.ts). The stack of complete subtrees is a
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
