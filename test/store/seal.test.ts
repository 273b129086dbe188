// Sealing a record from presealed members (what an HTTP front thread sends the ledger writer) gives
// the same text and hash as sealing the fields, and both equal the ledger's reference JCS + recordHash,
// whatever keys sort around the store-assigned members (hash, prev, seq, ts, v).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { presealMembers, sealNextRecord } from '../../src/store/seal.js';
import { jcs } from '../../src/util/canonical.js';
import { recordHash } from '../../src/ledger/record.js';
import type { SubtreeReader } from '../../src/ledger/merkle/tree.js';
import { prng } from '../helpers/prng.js';

const reader: SubtreeReader = { subtree: () => Buffer.alloc(32, 7) };
// Keys chosen to fall in every gap between, and right beside, the assigned names.
const KEYS = [
  'a',
  'actor',
  'h',
  'hash0',
  'hasg',
  'kind2',
  'p',
  'prev0',
  'prea',
  'r',
  'seq0',
  'ser',
  's',
  't',
  'ts0',
  'tr',
  'u',
  'v0',
  'va',
  'w',
  'zz',
  'é',
  '\u{1F600}',
  'A',
  '_',
];

function randomValue(next: () => number, depth = 0): unknown {
  const r = next();
  if (r < 0.15) return Math.floor(next() * 1e6) - 5e5;
  if (r < 0.3) return `s${Math.floor(next() * 1e9).toString(36)}\u00e9\n"`;
  if (r < 0.4) return next() < 0.5;
  if (r < 0.45) return null;
  if (r < 0.5) return undefined; // left out by JCS, as by the store
  if (r < 0.6) return next() * 1e3;
  if (depth > 2) return 'leaf';
  if (r < 0.8) return Array.from({ length: Math.floor(next() * 4) }, () => randomValue(next, depth + 1) ?? null);
  const o: Record<string, unknown> = {};
  for (let i = 0; i < 4; i++) o[KEYS[Math.floor(next() * KEYS.length)]!] = randomValue(next, depth + 1);
  return o;
}

test('presealed members seal to the same record text and hash as the fields, and both match JCS + recordHash', () => {
  const next = prng(14);
  for (let i = 0; i < 500; i++) {
    const fields: { kind: string } & Record<string, unknown> = { kind: 'decision' };
    for (const k of KEYS) if (next() < 0.5) fields[k] = randomValue(next);
    const seq = Math.floor(next() * 1000);
    const head = `sha256:${'ab'.repeat(32)}`;
    const direct = sealNextRecord(fields, seq, head, reader);
    const presealed = sealNextRecord({ kind: fields.kind }, seq, head, reader, presealMembers(fields));
    // ts is the clock at sealing: compare with each one's own ts.
    const reference = { ...fields, v: 1, seq, ts: direct.body.ts, prev: head };
    assert.equal(direct.hash, recordHash(reference), `case ${i}`);
    assert.equal(direct.text, jcs({ ...reference, hash: direct.hash }), `case ${i}`);
    const reference2 = { ...fields, v: 1, seq, ts: presealed.body.ts, prev: head };
    assert.equal(presealed.hash, recordHash(reference2), `case ${i}`);
    assert.equal(presealed.text, jcs({ ...reference2, hash: presealed.hash }), `case ${i}`);
  }
});

test('presealMembers refuses store-assigned fields and a missing kind', () => {
  assert.throws(() => presealMembers({ kind: 'x', seq: 1 }), /assigned by the store/);
  assert.throws(() => presealMembers({ kind: '' }), /kind/);
  assert.throws(() => sealNextRecord({ kind: 'x' }, 0, `sha256:${'0'.repeat(64)}`, reader, { parts: ['', ''] }), /one part per gap/);
});
