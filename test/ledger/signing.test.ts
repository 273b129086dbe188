import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { checkpointPayload, keyIdOf, privateKeyFromSeed, rawPublicKey, signPayload, verifyPayload } from '../../src/ledger/signing.js';
import { recordHash } from '../../src/ledger/record.js';

const golden = JSON.parse(readFileSync(new URL('../../../vectors/golden/ledger.json', import.meta.url), 'utf8'));

test('golden test key: key id, checkpoint payload and signature', () => {
  const seed = createHash('sha256').update('writ golden test key').digest();
  const key = privateKeyFromSeed(seed);
  const raw = rawPublicKey(key);
  assert.equal(raw.toString('base64'), golden.public_key);
  assert.equal(keyIdOf(raw), golden.key_id);
  const lines = golden.export_jsonl
    .trim()
    .split('\n')
    .map((l: string) => JSON.parse(l));
  const cp = lines[4];
  const payload = checkpointPayload(cp);
  assert.equal(payload, golden.checkpoint_signed_payload);
  assert.equal(signPayload(key, payload), cp.signature); // Ed25519 is deterministic
  assert.ok(verifyPayload(raw, payload, cp.signature));
  assert.ok(!verifyPayload(raw, `${payload} `, cp.signature));
});

test('golden export: every record hash and prev link', () => {
  const lines = golden.export_jsonl
    .trim()
    .split('\n')
    .map((l: string) => JSON.parse(l));
  let prev = `sha256:${'0'.repeat(64)}`;
  for (const r of lines) {
    assert.equal(r.prev, prev);
    assert.equal(recordHash(r), r.hash);
    prev = r.hash;
  }
});
