/**
 * The console's browser-side canonicalizer and verifier, run under Node's WebCrypto against the
 * project's vectors (vectors/binding, vectors/ledger): the browser code must reach the same hashes,
 * roots and signature verdicts as the recipe, without sharing code with the server's verifier.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../helpers/server.js';
import { canonicalize } from '../../src/console/web/jcs.js';
import { checkCheckpointSignature, keyInForceAt, leafHash, rootFromInclusionProof, toHex, verifyConsistencyProof } from '../../src/console/web/verify.js';
import type { LedgerRecord } from '../../src/console/web/api.js';

const vectors = (path: string) => JSON.parse(readFileSync(join(REPO, 'vectors', path), 'utf8'));
const hexBytes = (hex: string) => new Uint8Array(Buffer.from(hex.replace(/^sha256:/, ''), 'hex'));

test('JCS text of every admitted binding vector', () => {
  let checked = 0;
  for (const file of ['strings.json', 'numbers.json', 'structure.json', 'golden.json']) {
    for (const v of vectors(join('binding', file)) as Array<{ name: string; input: string; expect: { canonical?: string } }>) {
      if (v.expect.canonical === undefined) continue;
      assert.equal(canonicalize(JSON.parse(v.input)), v.expect.canonical, v.name);
      checked++;
    }
  }
  assert.ok(checked >= 40, `${checked} vectors checked`);
});

test('JCS edge cases: escapes, key order by UTF-16 units, numbers, refusals', () => {
  assert.equal(
    canonicalize({ b: [1, -0, 1.5, 1e21, 1e-7], a: 'x\u0001\n"\\\u2028é😀', '\u00e9': null, '\ud83d\ude00': true, '\uff01': false }),
    '{"a":"x\\u0001\\n\\"\\\\\u2028é😀","b":[1,0,1.5,1e+21,1e-7],"é":null,"😀":true,"！":false}',
  );
  assert.throws(() => canonicalize({ a: '\ud800' }));
  assert.throws(() => canonicalize(Number.NaN));
  assert.throws(() => canonicalize({ a: () => 1 }));
});

test('leaf hashes of the ledger record vectors', async () => {
  const { records } = vectors('ledger/records.json') as { records: Array<{ record: Record<string, unknown>; hash: string }> };
  assert.ok(records.length > 0);
  for (const r of records) {
    assert.equal(await leafHash(r.record), r.hash, `record ${String(r.record.seq)}`);
    assert.equal(await leafHash({ ...r.record, hash: 'ignored' }), r.hash);
  }
  const tampered = { ...records[0]!.record, ts: '2026-08-24T08:30:00.001Z' };
  assert.notEqual(await leafHash(tampered), records[0]!.hash);
});

test('inclusion proofs of the Merkle vectors reach their roots, and altered ones do not', async () => {
  const m = vectors('ledger/merkle.json') as {
    roots: Array<{ size: number; root: string }>;
    inclusion: Array<{ index: number; size: number; path: string[] }>;
  };
  const roots = new Map(m.roots.map((r) => [r.size, r.root]));
  const leaf = (i: number) => new Uint8Array(createHash('sha256').update(String(i)).digest());
  let checked = 0;
  for (const v of m.inclusion) {
    const root = roots.get(v.size);
    if (!root) continue;
    const path = v.path.map(hexBytes);
    assert.equal(`sha256:${toHex((await rootFromInclusionProof(v.index, v.size, leaf(v.index), path))!)}`, root, `index ${v.index} size ${v.size}`);
    if (path.length) {
      const bent = path.map((p) => p.slice());
      bent[0]![0]! ^= 1;
      const reached = await rootFromInclusionProof(v.index, v.size, leaf(v.index), bent);
      assert.notEqual(reached && `sha256:${toHex(reached)}`, root);
      assert.equal(await rootFromInclusionProof(v.index, v.size, leaf(v.index), path.slice(1)), undefined, 'a short proof is refused');
    }
    checked++;
  }
  assert.ok(checked > 5, `${checked} proofs checked`);
  assert.equal(await rootFromInclusionProof(3, 3, leaf(3), []), undefined, 'an index past the tree is refused');
});

test('the checkpoint vector signature verifies with WebCrypto Ed25519; tampering does not', async () => {
  const v = vectors('ledger/checkpoint.json') as { public_key: string; key_id: string; checkpoint: Record<string, unknown> };
  const keys = [{ key_id: v.key_id, public_key: v.public_key }];
  const cp = { kind: 'checkpoint', ...v.checkpoint } as unknown as LedgerRecord;
  assert.equal(await checkCheckpointSignature(cp, keys), undefined);
  assert.equal(await checkCheckpointSignature({ ...cp, size: 999 }, keys), 'bad checkpoint signature');
  assert.match((await checkCheckpointSignature(cp, []))!, /unknown key/);
  assert.match(
    (await checkCheckpointSignature(cp, [{ key_id: v.key_id, public_key: Buffer.alloc(32, 7).toString('base64') }]))!,
    /does not match its public key/,
  );
});

test('the key in force at a checkpoint: the signed chain of key records, a rotated-out key refused', async () => {
  const keyPair = () => {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
    return { privateKey, public_key: raw.toString('base64'), key_id: `ed25519:${createHash('sha256').update(raw).digest('hex').slice(0, 16)}` };
  };
  const sealed = async (body: Record<string, unknown>) => ({ ...body, hash: await leafHash(body) }) as unknown as LedgerRecord;
  const keyRecord = (seq: number, k: ReturnType<typeof keyPair>, by?: ReturnType<typeof keyPair>) =>
    sealed({
      v: 1,
      seq,
      ts: '2026-08-24T08:30:00Z',
      kind: 'key',
      prev: `sha256:${'0'.repeat(64)}`,
      key_id: k.key_id,
      public_key: k.public_key,
      signature: by
        ? sign(null, Buffer.from(`writ-key/1\n${canonicalize({ key_id: k.key_id, public_key: k.public_key })}`), by.privateKey).toString('base64')
        : null,
    });
  const a = keyPair();
  const b = keyPair();
  const chain = [await keyRecord(0, a), await keyRecord(40, b, a)];
  assert.deepEqual(await keyInForceAt(chain, 10), { key_id: a.key_id, public_key: a.public_key, seq: 0 });
  assert.deepEqual(await keyInForceAt(chain, 40), { key_id: a.key_id, public_key: a.public_key, seq: 0 }, 'a key record counts after its own seq');
  assert.deepEqual(await keyInForceAt(chain, 41), { key_id: b.key_id, public_key: b.public_key, seq: 40 });
  // A rotation the previous key did not sign, a first key with a signature, an altered key record.
  assert.match(String(await keyInForceAt([chain[0]!, await keyRecord(40, b, b)], 41)), /not signed by the key before it/);
  assert.match(String(await keyInForceAt([await keyRecord(0, a, b)], 5)), /must have signature null/);
  assert.match(String(await keyInForceAt([{ ...chain[0]!, public_key: b.public_key }], 5)), /hash mismatch/);
  assert.match(String(await keyInForceAt([chain[0]!, chain[0]!], 50)), /seq order/);
  assert.match(String(await keyInForceAt([], 5)), /no key record precedes/);
});

test('consistency proofs of the Merkle vectors verify in the browser code, and altered ones do not', async () => {
  const m = vectors('ledger/merkle.json') as { consistency: Array<{ m: number; n: number; root_m: string; root_n: string; path: string[] }> };
  let checked = 0;
  for (const v of m.consistency) {
    const path = v.path.map(hexBytes);
    const [rootM, rootN] = [hexBytes(v.root_m), hexBytes(v.root_n)];
    assert.equal(await verifyConsistencyProof(v.m, v.n, rootM, rootN, path), true, `${v.m} → ${v.n}`);
    // Another old root, another new root, a changed step, a step dropped: all refused.
    const other = new Uint8Array(32).fill(1);
    assert.equal(await verifyConsistencyProof(v.m, v.n, other, rootN, path), false);
    assert.equal(await verifyConsistencyProof(v.m, v.n, rootM, other, path), false);
    if (path.length > 0) {
      const bent = path.map((p, i) => (i === path.length - 1 ? Uint8Array.from(p, (b, j) => (j === 0 ? b ^ 1 : b)) : p));
      assert.equal(await verifyConsistencyProof(v.m, v.n, rootM, rootN, bent), false);
      assert.equal(await verifyConsistencyProof(v.m, v.n, rootM, rootN, path.slice(0, -1)), false);
    }
    checked++;
  }
  assert.equal(checked, 14);
  assert.equal(await verifyConsistencyProof(3, 3, new Uint8Array(32), new Uint8Array(32), []), true);
  assert.equal(await verifyConsistencyProof(0, 3, new Uint8Array(32), new Uint8Array(32), []), false);
  assert.equal(await verifyConsistencyProof(4, 3, new Uint8Array(32), new Uint8Array(32), []), false);
});

test('cosigners: the witness lines of the served note of the same tree (§16), null for another tree', async () => {
  const { cosigners } = await import('../../src/console/web/verify.js');
  const root = new Uint8Array(32).fill(7);
  const b64 = Buffer.from(root).toString('base64');
  const note = (size: number) => `writ.local/abc\n${size}\n${b64}\n\n— writ.local/abc AAAA\n— w1.example/w BBBB\n— w2.example/w CCCC\n`;
  const api = (text: string | null) => ({ note: async () => text }) as unknown as Parameters<typeof cosigners>[0];
  assert.equal(await cosigners(api(note(5)), 5, root), 2);
  assert.equal(await cosigners(api(note(6)), 5, root), null);
  assert.equal(await cosigners(api(`writ.local/abc\n5\n${b64}\n\n— writ.local/abc AAAA\n`), 5, root), 0);
  assert.equal(await cosigners(api(null), 5, root), null);
});
