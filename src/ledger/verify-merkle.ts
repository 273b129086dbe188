/**
 * The verifier's streaming RFC 9162 root: the same compact range as merkle.ts's MerkleAccumulator,
 * over hex text instead of Buffers. Record hashes arrive as hex text, and crypto.hash answers in hex
 * about three times faster than it allocates a Buffer; with one interior node per record on average,
 * that node hash was most of the main thread's work per record in `writ verify`.
 */
import { hash } from 'node:crypto';
import { EMPTY_ROOT } from './merkle.js';

export const EMPTY_ROOT_HEX = EMPTY_ROOT.toString('hex');

// One reusable input: 0x01 ‖ left ‖ right.
const nodeInput = Buffer.alloc(65);
nodeInput[0] = 0x01;

/** Hex SHA-256(0x01 ‖ left ‖ right) of two hex hashes. */
export function nodeHashHex(leftHex: string, rightHex: string): string {
  nodeInput.write(leftHex, 1, 32, 'hex');
  nodeInput.write(rightHex, 33, 32, 'hex');
  return hash('sha256', nodeInput, 'hex');
}

/** One complete subtree of the compact range and the (older, larger) ones below it. */
interface HexRangeNode {
  readonly level: number;
  readonly hash: string;
  readonly below: HexRangeNode | null;
}

/** An immutable snapshot (structure-shared, so keeping a few thousand is cheap). */
export interface HexAccumulatorState {
  readonly size: number;
  readonly top: HexRangeNode | null;
}

export class HexMerkleAccumulator {
  #top: HexRangeNode | null = null;
  #size = 0;

  /** Appends a leaf given as 64 lower-case hex digits. */
  append(leafHex: string): void {
    let hash = leafHex;
    let level = 0;
    let top = this.#top;
    while (top !== null && top.level === level) {
      hash = nodeHashHex(top.hash, hash);
      level += 1;
      top = top.below;
    }
    this.#top = { level, hash, below: top };
    this.#size += 1;
  }

  get state(): HexAccumulatorState {
    return { size: this.#size, top: this.#top };
  }

  /** Hex root of the tree a snapshot describes: fold the stack from the smallest subtree up. */
  static rootOf(state: HexAccumulatorState): string {
    let node = state.top;
    if (node === null) return EMPTY_ROOT_HEX;
    let acc = node.hash;
    for (node = node.below; node !== null; node = node.below) acc = nodeHashHex(node.hash, acc);
    return acc;
  }
}
