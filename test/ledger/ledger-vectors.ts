/**
 * Generator of vectors/ledger/*.json. The tests regenerate every vector and compare it with the file
 * (generate = vector), and check each file's contents with the verifying functions (verify(vector)).
 * Regenerate after an intended change with:  node dist/test/ledger/ledger-vectors.js --write
 */
import { createHash } from 'node:crypto';
import { writeFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { recordLine, sealRecord, ZERO_HASH, type UnsealedRecord } from '../../src/ledger/record.js';
import { checkpointPayload, keyIdOf, privateKeyFromSeed, rawPublicKey, signPayload } from '../../src/ledger/signing.js';
import { bytesToHash } from '../../src/ledger/merkle/hasher.js';
import { consistencyProof } from '../../src/ledger/merkle/consistency.js';
import { inclusionProof } from '../../src/ledger/merkle/inclusion.js';
import { memoryReader, rootAt } from '../../src/ledger/merkle/tree.js';

export const VECTOR_DIR = new URL('../../../vectors/ledger/', import.meta.url);

/** The vector leaves: leaf i = SHA-256 of the decimal text of i, as 32 raw bytes. */
export function vectorLeaf(i: number): Buffer {
  return createHash('sha256').update(String(i)).digest();
}

const hex = (proof: Buffer[]) => proof.map((p) => p.toString('hex'));

export function merkleVectors() {
  const leaves1000 = Array.from({ length: 1000 }, (_, i) => vectorLeaf(i));
  const reader = memoryReader(leaves1000);
  const sizes = [...Array.from({ length: 17 }, (_, i) => i + 1), 1000];
  const inclusionCases: Array<[number, number]> = [
    [0, 1],
    [0, 2],
    [1, 2],
    [2, 5],
    [4, 5],
    [0, 7],
    [6, 7],
    [5, 8],
    [8, 9],
    [10, 17],
    [16, 17],
    [0, 1000],
    [511, 1000],
    [512, 1000],
    [999, 1000],
  ];
  const consistencyCases: Array<[number, number]> = [
    [1, 2],
    [1, 8],
    [2, 5],
    [3, 5],
    [4, 8],
    [5, 8],
    [6, 7],
    [7, 17],
    [8, 17],
    [16, 17],
    [1, 1000],
    [500, 1000],
    [512, 1000],
    [999, 1000],
  ];
  return {
    about:
      'RFC 9162 Merkle tree hashes as writ computes them (docs/protocol.md §6): leaves are used as given; interior nodes SHA-256(0x01‖l‖r); proofs are hex.',
    leaf_recipe: 'leaf i = SHA-256(decimal text of i), e.g. leaf 0 = SHA-256("0"), written sha256:<hex>',
    leaves_first_3: [0, 1, 2].map((i) => bytesToHash(vectorLeaf(i))),
    empty_root: bytesToHash(rootAt(0, memoryReader([]))),
    roots: sizes.map((size) => ({ size, root: bytesToHash(rootAt(size, reader)) })),
    inclusion: inclusionCases.map(([index, size]) => ({ index, size, path: hex(inclusionProof(index, size, reader)) })),
    consistency: consistencyCases.map(([m, n]) => ({
      m,
      n,
      root_m: bytesToHash(rootAt(m, reader)),
      root_n: bytesToHash(rootAt(n, reader)),
      path: hex(consistencyProof(m, n, reader)),
    })),
    // Inputs a verifier must refuse (found by checking against transparency-dev/merkle's RFC 6962
    // cases): every one here is malformed, so each must verify as false. Hex may be empty.
    malformed: [
      {
        check: 'consistency',
        m: 0,
        n: 1,
        root_m: bytesToHash(rootAt(0, memoryReader([]))).slice(7),
        root_n: 'ab',
        path: [],
        why: 'new root is 1 byte, old size 0',
      },
      {
        check: 'consistency',
        m: 0,
        n: 1,
        root_m: bytesToHash(rootAt(0, memoryReader([]))).slice(7),
        root_n: '',
        path: [],
        why: 'new root is empty, old size 0',
      },
      { check: 'consistency', m: 1, n: 1, root_m: '', root_n: '', path: [], why: 'equal sizes, empty roots' },
      { check: 'consistency', m: 2, n: 2, root_m: 'ab'.repeat(33), root_n: 'ab'.repeat(33), path: [], why: 'equal sizes, 33-byte roots' },
      { check: 'inclusion', index: 0, size: 1, leaf: '', root: '', path: [], why: 'empty leaf and root, size-1 tree, empty proof' },
      { check: 'inclusion', index: 0, size: 1, leaf: 'ab'.repeat(31), root: 'ab'.repeat(31), path: [], why: '31-byte leaf and root, size-1 tree, empty proof' },
      {
        check: 'inclusion',
        index: 0,
        size: 2,
        leaf: '',
        root: bytesToHash(rootAt(2, reader)).slice(7),
        path: [hex([vectorLeaf(1)])[0]],
        why: 'empty leaf with a real sibling and root',
      },
    ],
  };
}

/** The fixed test key: seed = SHA-256("writ golden test key") (the golden file's key). */
export function vectorKey() {
  const privateKey = privateKeyFromSeed(createHash('sha256').update('writ golden test key').digest());
  const raw = rawPublicKey(privateKey);
  return { privateKey, public_key: raw.toString('base64'), key_id: keyIdOf(raw) };
}

export function recordVectors() {
  const bodies: UnsealedRecord[] = [];
  const key = vectorKey();
  const push = (kind: string, fields: Record<string, unknown>) => {
    const seq = bodies.length;
    const prev = seq === 0 ? ZERO_HASH : sealRecord(bodies[seq - 1]!).hash;
    bodies.push({ v: 1, seq, ts: `2026-08-24T08:30:0${seq}.000Z`, kind, prev, ...fields });
  };
  push('key', { key_id: key.key_id, public_key: key.public_key, signature: null });
  push('policy', { policy_version: `sha256:${'1'.repeat(64)}` });
  push('decision', {
    actor: { type: 'Agent', id: 'a-1' },
    arguments: { '10': 'integer-like keys sort as text', amount: 12.5, count: 3, note: 'é😀\u2028"quoted"', z: null },
    decision: 'allow',
    execution_id: 'OFF-1:x',
    server: 'idp',
    tool: 'disable_sign_in',
  });
  push('outcome', { actor: { type: 'Agent', id: 'a-1' }, execution_id: 'OFF-1:x', status: 'committed' });
  return {
    about: 'Record hashes (docs/protocol.md §6): hash = sha256:hex SHA-256(0x00 ‖ JCS(record without hash)); line = JCS of the sealed record.',
    records: bodies.map((body) => {
      const sealed = sealRecord(body);
      return { record: body, hash: sealed.hash, line: recordLine(sealed) };
    }),
  };
}

export function checkpointVector() {
  const key = vectorKey();
  const merkle = merkleVectors();
  const size = 1000;
  const root = merkle.roots.find((r) => r.size === size)!.root;
  const payload = checkpointPayload({ key_id: key.key_id, root, size });
  return {
    about: 'A signed checkpoint over the 1000 vector leaves, by the fixed test key (seed = SHA-256("writ golden test key")); Ed25519 is deterministic.',
    public_key: key.public_key,
    key_id: key.key_id,
    payload,
    checkpoint: { key_id: key.key_id, root, signature: signPayload(key.privateKey, payload), size },
  };
}

export function allVectors(): Record<string, unknown> {
  return { 'merkle.json': merkleVectors(), 'records.json': recordVectors(), 'checkpoint.json': checkpointVector() };
}

export const vectorText = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv.includes('--write')) {
  mkdirSync(VECTOR_DIR, { recursive: true });
  for (const [name, value] of Object.entries(allVectors())) writeFileSync(new URL(name, VECTOR_DIR), vectorText(value));
  process.stdout.write(`wrote ${Object.keys(allVectors()).join(', ')} to ${fileURLToPath(VECTOR_DIR)}\n`);
}
