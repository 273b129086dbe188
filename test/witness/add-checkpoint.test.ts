import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { consistencyProof } from '../../src/ledger/merkle/consistency.js';
import { parseVkey, type VerifierKey } from '../../src/transparency/note.js';
import { decideAddCheckpoint, parseAddCheckpoint, type CosignedState } from '../../src/witness/add-checkpoint.js';
import { TestLog } from './log-fixture.js';

const log = new TestLog('example.com/log');
const logs = new Map<string, VerifierKey[]>([[log.origin, [parseVkey(log.vkey)]]]);

/** Runs a sequence of bodies against one in-memory state, as the witness does. */
function witness() {
  const state = new Map<string, CosignedState>();
  return (body: string) => {
    const o = decideAddCheckpoint(body, logs, (origin) => state.get(origin));
    if (o.status === 200) state.set(o.checkpoint.origin, o.state);
    return o;
  };
}

test("tlog-witness: the spec's example body parses (old size, four proof lines, the checkpoint)", () => {
  const body = [
    'old 20852014',
    'PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=',
    'jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=',
    '5+pKlUdi2LeF/BcMHBn+Ku6yhPGNCswZZD1X/6QgPd8=',
    '/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=',
    '',
    'example.com/behind-the-sofa',
    '20852163',
    'CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=',
    '',
    '— example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=',
    '— example.com/behind-the-sofa opLqBQsREYCgu6xQkYQwJr9fo45a62DN9EdmHXnZdXNqlcVGlCum2Wks+49/V6267UEjw6QUXTS5Rovnzv++qbSzm9Q=',
    '',
  ].join('\n');
  const r = parseAddCheckpoint(body);
  assert.equal(r.oldSize, 20852014);
  assert.equal(r.proof.length, 4);
  assert.ok(r.note.startsWith('example.com/behind-the-sofa\n20852163\n'));
  // Its origin is not one this witness knows: 404.
  assert.equal(decideAddCheckpoint(body, logs, () => undefined).status, 404);
});

test('tlog-witness: 200 from 0, then up with consistency proofs; every refusal code', () => {
  const add = witness();
  assert.equal(add(log.body(0, 1)).status, 200);
  assert.equal(add(log.body(1, 255)).status, 200);
  assert.equal(add(log.body(255, 255)).status, 200, 'the same tree again');
  assert.equal(add(log.body(255, 257)).status, 200);
  // 409: not from the size last cosigned; the body names it.
  assert.deepEqual(add(log.body(0, 300)), { status: 409, size: 257, reason: 'the latest cosigned size is 257, not 0' });
  assert.equal(add(log.body(256, 300)).status, 409);
  // 400: malformed, or an old size beyond the checkpoint.
  assert.equal(add(`old 01\n\n${log.note(300)}`).status, 400);
  assert.equal(add(`old 257\nnot-base64\n\n${log.note(300)}`).status, 400);
  assert.equal(add(log.body(257, 300).replace(/\n\n/, '\n')).status, 400);
  assert.equal(add(log.body(300, 257, { proof: [] })).status, 400);
  // 403: no trusted signature (another key under the same name, or a tampered note).
  assert.equal(add(log.body(257, 300, { note: log.note(300, generateKeyPairSync('ed25519').privateKey) })).status, 403);
  assert.equal(add(log.body(257, 300, { note: log.note(300).replace('\n300\n', '\n301\n') })).status, 403);
  // 422: a proof that does not verify.
  assert.equal(add(log.body(257, 300, { proof: consistencyProof(256, 300, log.reader) })).status, 422);
  // A smaller tree after a larger one: never cosigned (400 or 409, whatever the old size says).
  assert.notEqual(add(log.body(257, 200, { proof: [] })).status, 200);
  assert.notEqual(add(log.body(0, 200)).status, 200);
  assert.equal(add(log.body(257, 300)).status, 200);
});

test('tlog-witness: a forked log (same size, another root; or a tree not extending the one cosigned) is refused', () => {
  const add = witness();
  assert.equal(add(log.body(0, 300)).status, 200);
  // The operator's other history: same origin and key, other leaves.
  const fork = new TestLog(log.origin, 600, 'fork');
  // Signed by the log's own key: a real fork, not a forgery.
  const signedFork = (size: number) => fork.note(size, log.key);
  const same = add(fork.body(300, 300, { note: signedFork(300) }));
  assert.deepEqual([same.status, (same as { size?: number }).size], [409, 300]);
  assert.equal(add(fork.body(300, 400, { note: signedFork(400) })).status, 422);
  assert.equal(add(log.body(300, 400)).status, 200);
});
