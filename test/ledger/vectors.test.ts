import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { recordHash } from '../../src/ledger/record.js';
import { checkpointPayload, keyIdOf, verifyPayload } from '../../src/ledger/signing.js';
import { hashToBytes } from '../../src/ledger/merkle/hasher.js';
import { ProofError, verifyConsistency, verifyInclusion } from '../../src/ledger/merkle/verify.js';
import { verifyExportSync } from '../../src/ledger/verify.js';
import { allVectors, VECTOR_DIR, vectorLeaf, vectorText } from './ledger-vectors.js';

const readVector = (name: string) => readFileSync(new URL(name, VECTOR_DIR), 'utf8');
const fromHex = (path: string[]) => path.map((h) => Buffer.from(h, 'hex'));

test('generate = vector: every vectors/ledger file is exactly what the code computes', () => {
  for (const [name, value] of Object.entries(allVectors())) {
    assert.equal(readVector(name), vectorText(value), `${name} differs; regenerate with node dist/test/ledger/ledger-vectors.js --write if intended`);
  }
});

test('verify(vector): Merkle roots, inclusion and consistency proofs check out', () => {
  const v = JSON.parse(readVector('merkle.json'));
  const rootOf = (size: number) => hashToBytes(v.roots.find((r: { size: number }) => r.size === size).root);
  assert.equal(v.roots.length, 18);
  assert.deepEqual(
    v.roots.map((r: { size: number }) => r.size),
    [...Array.from({ length: 17 }, (_, i) => i + 1), 1000],
  );
  assert.equal(v.roots[0].root, v.leaves_first_3[0], 'the root of one leaf is the leaf');
  for (const c of v.inclusion) {
    verifyInclusion(c.index, c.size, vectorLeaf(c.index), fromHex(c.path), rootOf(c.size));
    assert.throws(() => verifyInclusion(c.index, c.size, vectorLeaf(c.index + 1), fromHex(c.path), rootOf(c.size)), ProofError);
  }
  for (const c of v.consistency) {
    const [rootM, rootN] = [hashToBytes(c.root_m), hashToBytes(c.root_n)];
    if (c.m <= 17) assert.deepEqual(rootM, rootOf(c.m));
    assert.deepEqual(rootN, rootOf(c.n));
    verifyConsistency(c.m, c.n, rootM, rootN, fromHex(c.path));
    const otherRootM = Buffer.from(rootM);
    otherRootM[31]! ^= 1;
    assert.throws(() => verifyConsistency(c.m, c.n, otherRootM, rootN, fromHex(c.path)), ProofError);
  }
});

test('verify(vector): malformed Merkle input is refused, never accepted', () => {
  const v = JSON.parse(readVector('merkle.json'));
  assert.ok(v.malformed.length >= 7);
  for (const c of v.malformed) {
    const check = () =>
      c.check === 'inclusion'
        ? verifyInclusion(c.index, c.size, Buffer.from(c.leaf, 'hex'), fromHex(c.path), Buffer.from(c.root, 'hex'))
        : verifyConsistency(c.m, c.n, Buffer.from(c.root_m, 'hex'), Buffer.from(c.root_n, 'hex'), fromHex(c.path));
    assert.throws(check, ProofError, c.why);
  }
});

test('verify(vector): record hashes and lines, and the records form a valid export', () => {
  const v = JSON.parse(readVector('records.json'));
  for (const { record, hash, line } of v.records) {
    assert.equal(recordHash(record), hash);
    assert.deepEqual(JSON.parse(line), { ...record, hash });
  }
  const lines = v.records.map((r: { line: string }) => r.line);
  assert.deepEqual(verifyExportSync(lines), { ok: true, records: lines.length, head: v.records.at(-1).hash });
});

test('verify(vector): the signed checkpoint verifies under the fixed test key', () => {
  const v = JSON.parse(readVector('checkpoint.json'));
  const raw = Buffer.from(v.public_key, 'base64');
  assert.equal(keyIdOf(raw), v.key_id);
  assert.equal(checkpointPayload(v.checkpoint), v.payload);
  assert.ok(verifyPayload(raw, v.payload, v.checkpoint.signature));
  assert.ok(!verifyPayload(raw, checkpointPayload({ ...v.checkpoint, size: 999 }), v.checkpoint.signature));
  const merkle = JSON.parse(readVector('merkle.json'));
  assert.equal(v.checkpoint.root, merkle.roots.find((r: { size: number }) => r.size === 1000).root);
});
