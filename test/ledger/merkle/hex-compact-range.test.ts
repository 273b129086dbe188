import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { MerkleAccumulator } from '../../../src/ledger/merkle/compact-range.js';
import { EMPTY_ROOT_HEX, HexMerkleAccumulator, nodeHashHex, type HexAccumulatorState } from '../../../src/ledger/merkle/hex-compact-range.js';

// The verifier's hex accumulator must give the roots of compact-range.ts's MerkleAccumulator (itself checked
// against the RFC 9162 reference in merkle.test.ts) at every size, and keep them in its snapshots.
const leaf = (i: number) => createHash('sha256').update(`leaf ${i}`).digest();

test('nodeHashHex is SHA-256(0x01 ‖ left ‖ right)', () => {
  const [l, r] = [leaf(1), leaf(2)];
  const expected = createHash('sha256')
    .update(Buffer.from([1]))
    .update(l)
    .update(r)
    .digest('hex');
  assert.equal(nodeHashHex(l.toString('hex'), r.toString('hex')), expected);
});

test('the hex accumulator has the MerkleAccumulator root at every size, and its snapshots keep theirs', () => {
  const bytes = new MerkleAccumulator();
  const hex = new HexMerkleAccumulator();
  assert.equal(HexMerkleAccumulator.rootOf(hex.state), EMPTY_ROOT_HEX);
  assert.equal(EMPTY_ROOT_HEX, bytes.root().toString('hex'));
  const snapshots: Array<[HexAccumulatorState, string]> = [];
  for (let i = 0; i < 1100; i++) {
    bytes.append(leaf(i));
    hex.append(leaf(i).toString('hex'));
    const root = bytes.root().toString('hex');
    assert.equal(HexMerkleAccumulator.rootOf(hex.state), root, `size ${i + 1}`);
    if (i % 37 === 0) snapshots.push([hex.state, root]);
  }
  for (const [state, root] of snapshots) assert.equal(HexMerkleAccumulator.rootOf(state), root);
});
