/**
 * RFC 9162 §2.1 hashing for the ledger's Merkle tree (docs/protocol.md §6). Pure.
 *
 * Leaves are the record hashes exactly as stored (a record hash is already the RFC 9162 leaf hash
 * SHA-256(0x00 ‖ JCS(record))), so the tree hash of a single leaf is the leaf itself. Interior nodes
 * are SHA-256(0x01 ‖ left ‖ right).
 */
import { createHash, hash } from 'node:crypto';

const LEAF_PREFIX = Buffer.from([0x00]);
const NODE_PREFIX = Buffer.from([0x01]);
const HASH_TAG = 'sha256:';

/** 'sha256:<hex>' → 32 raw bytes. Throws on anything else. */
export function hashToBytes(tagged: string): Buffer {
  if (typeof tagged !== 'string' || tagged.length !== 71 || !tagged.startsWith(HASH_TAG) || !/^[0-9a-f]{64}$/.test(tagged.slice(7))) {
    throw new TypeError(`not a sha256:<64 lower-case hex> hash: ${String(tagged).slice(0, 80)}`);
  }
  return Buffer.from(tagged.slice(7), 'hex');
}

/** 32 raw bytes → 'sha256:<hex>'. */
export function bytesToHash(b: Uint8Array): string {
  return HASH_TAG + Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
}

/** SHA-256(0x00 ‖ data): the RFC 9162 leaf hash (a string is hashed as its UTF-8 bytes). */
export function leafHash(data: Uint8Array | string): Buffer {
  return createHash('sha256').update(LEAF_PREFIX).update(data).digest();
}

// One reusable input buffer for 32-byte children: a one-shot hash of it is about twice as fast as a
// Hash object with three updates, and the verifier hashes one node per record on average.
const nodeInput = Buffer.alloc(65);
nodeInput[0] = 0x01;

/** SHA-256(0x01 ‖ left ‖ right). */
export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  if (left.length !== 32 || right.length !== 32) return createHash('sha256').update(NODE_PREFIX).update(left).update(right).digest();
  nodeInput.set(left, 1);
  nodeInput.set(right, 33);
  return hash('sha256', nodeInput, 'buffer');
}

/** SHA-256 of the empty string: RFC 9162 MTH of the empty list. */
export const EMPTY_ROOT: Buffer = createHash('sha256').digest();
