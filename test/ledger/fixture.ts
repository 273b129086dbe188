/**
 * A real ledger export for the verifier tests, built with the same pure pieces the server uses
 * (sealRecord, bindingOf, the Merkle root, Ed25519 payloads): a key record with the golden test key,
 * a policy load, decisions with bindings, outcomes, approvals, entity changes, a key rotation and
 * checkpoints (one trailing its position). Plus the tamper helpers the tests compose.
 */
import { createHash } from 'node:crypto';
import { bindingOf } from '../../src/binding/index.js';
import { digestOf } from '../../src/util/canonical.js';
import { recordLine, sealRecord, ZERO_HASH, type LedgerRecord, type UnsealedRecord } from '../../src/ledger/record.js';
import { chainBreakPayload, checkpointPayload, keyIdOf, keyPayload, privateKeyFromSeed, rawPublicKey, signPayload } from '../../src/ledger/signing.js';
import { MerkleAccumulator } from '../../src/ledger/merkle/compact-range.js';
import { bytesToHash, hashToBytes } from '../../src/ledger/merkle/hasher.js';
import type { KeyObject } from 'node:crypto';

export interface TestKey {
  privateKey: KeyObject;
  publicKey: string;
  keyId: string;
}

export function testKey(seedText: string): TestKey {
  const privateKey = privateKeyFromSeed(createHash('sha256').update(seedText).digest());
  const raw = rawPublicKey(privateKey);
  return { privateKey, publicKey: raw.toString('base64'), keyId: keyIdOf(raw) };
}

/** The golden key: seed = SHA-256("writ golden test key"). */
export const GOLDEN_KEY = testKey('writ golden test key');
export const ROTATED_KEY = testKey('writ rotated test key');
export const ATTACKER_KEY = testKey('writ attacker key');

export type Rec = Record<string, unknown>;

function tsOf(seq: number): string {
  return new Date(Date.UTC(2026, 7, 24, 8, 30, 0) + seq * 1000).toISOString();
}

/** Root (tagged) of the first `size` record hashes. */
export function rootOf(records: Rec[], size: number): string {
  const acc = new MerkleAccumulator();
  for (let i = 0; i < size; i++) acc.append(hashToBytes(records[i]!.hash as string));
  return bytesToHash(acc.root());
}

export function signCheckpoint(key: TestKey, size: number, root: string): { key_id: string; signature: string } {
  return { key_id: key.keyId, signature: signPayload(key.privateKey, checkpointPayload({ key_id: key.keyId, root, size })) };
}

const ARGUMENT_SAMPLES: Rec[] = [
  { employee_id: '7721' },
  { employee_id: '7722', count: 1, ratio: 0.5, tags: ['a', 'b'], nested: { k: null, deep: [1, { x: true }] } },
  { path: '/tmp/é😀', mode: 'read', limit: 10 },
  { amount: -12.25, currency: 'EUR', ids: [3, 2, 1], '10': 'ten', '9': 'nine' },
];

/**
 * Builds the ~60-record export. Layout (seq: kind): 0 key (golden key), 1 policy, then decisions /
 * outcomes / approvals / entity changes; checkpoints at 15 (size 15), 22 (size 20: trails its seq),
 * 40 and 59 (size = seq); the key rotates to ROTATED_KEY at 30 (signed by the golden key).
 */
export function buildRecords(): Rec[] {
  const records: Rec[] = [];
  let key = GOLDEN_KEY;
  const append = (kind: string, fields: Rec): void => {
    const seq = records.length;
    const body = { v: 1, seq, ts: tsOf(seq), kind, prev: seq === 0 ? ZERO_HASH : (records[seq - 1]!.hash as string), ...fields } as UnsealedRecord;
    records.push(sealRecord(body));
  };
  const checkpoint = (size: number): void => {
    const root = rootOf(records, size);
    append('checkpoint', { size, root, ...signCheckpoint(key, size, root) });
  };

  append('key', { key_id: GOLDEN_KEY.keyId, public_key: GOLDEN_KEY.publicKey, signature: null });
  append('policy', { policy_version: digestOf('', ['policy', 1]) });
  let n = 0;
  while (records.length < 60) {
    const seq = records.length;
    if (seq === 15 || seq === 40 || seq === 59) {
      checkpoint(seq);
      continue;
    }
    if (seq === 22) {
      checkpoint(20);
      continue;
    }
    if (seq === 30) {
      const payload = keyPayload({ key_id: ROTATED_KEY.keyId, public_key: ROTATED_KEY.publicKey });
      append('key', { key_id: ROTATED_KEY.keyId, public_key: ROTATED_KEY.publicKey, signature: signPayload(key.privateKey, payload) });
      key = ROTATED_KEY;
      continue;
    }
    n += 1;
    // Histories the §4 machine allows (writ verify checks them): an execute (n % 4 == 1) is followed by
    // its outcome (n % 4 == 2); an approval (n % 8 == 7) is of the propose three records before it.
    const executionId = `OFF-${2000 + (n % 4 === 2 ? n - 1 : n % 4 === 3 ? n - 3 : n)}:step`;
    const actor = { type: 'Agent', id: 'offboarding-agent-prod' };
    switch (n % 4) {
      case 0:
      case 1: {
        const args = ARGUMENT_SAMPLES[Math.floor(n / 4) % ARGUMENT_SAMPLES.length]!;
        const server = n % 3 === 0 ? 'fs' : 'idp';
        const tool = server === 'fs' ? 'read_file' : 'disable_sign_in';
        const envelope = {
          task_id: `OFF-${2000 + n}`,
          purpose: 'scheduled_employee_offboarding',
          requester: { type: 'User', id: 'manager-1842' },
          actor,
          subject: { type: 'Employee', id: String(7700 + n) },
          evidence_refs: [`hris:employee:${7700 + n}@version-44`],
        };
        const decision = n % 8 === 0 ? 'deny' : 'allow';
        const phase = n % 4 === 1 ? 'execute' : 'propose';
        append('decision', {
          decision_id: `dec-${n}`,
          execution_id: executionId,
          actor,
          phase,
          envelope,
          envelope_digest: digestOf('writ-envelope/1\n', envelope),
          server,
          tool,
          arguments: args,
          binding: bindingOf(server, tool, args as never),
          decision,
          reasons: decision === 'deny' ? ['forbid-after-hours'] : ['permit-offboarding'],
          errors: [],
          obligations: [],
          policy_version: records[1]!.policy_version,
          entities_version: digestOf('', ['entities', n]),
          state: phase === 'execute' && decision === 'allow' ? 'invoking' : 'proposed',
        });
        break;
      }
      case 2:
        append('outcome', { execution_id: executionId, actor, status: 'committed', confirmation: 'tool_reported' });
        break;
      default:
        if (n % 8 === 3) append('entity', { uid: { type: 'Employee', id: String(7700 + n) }, attrs: { active: false }, parents: [] });
        else
          append('approval', {
            approval_id: `apr-${n}`,
            execution_id: executionId,
            actor,
            approver: { type: 'User', id: 'hr-5519' },
            expires_at: tsOf(10_000),
          });
    }
  }
  return records;
}

export const linesOf = (records: Rec[]): string[] => records.map((r) => recordLine(r as LedgerRecord));
export const parse = (line: string): Rec => JSON.parse(line) as Rec;
export const clone = (records: Rec[]): Rec[] => records.map((r) => structuredClone(r));

/** Recomputes `hash` of one record (an edit whose hash was recomputed). */
export function reseal(r: Rec): Rec {
  const { hash: _h, ...body } = r;
  return sealRecord(body as UnsealedRecord);
}

/**
 * Recomputes seq, prev and hash of every record from `from` on (a forger rebuilding the chain after
 * an edit). With `resignWith`, checkpoints get their true root and a fresh signature too (an operator
 * holding the signing key); without it their root and signature are left as they were.
 */
export function rechain(records: Rec[], from = 0, resignWith?: (seq: number) => TestKey): Rec[] {
  const out = records.map((r) => ({ ...r }));
  for (let i = from; i < out.length; i++) {
    const r = out[i]!;
    r.seq = i;
    r.prev = i === 0 ? ZERO_HASH : out[i - 1]!.hash;
    if (resignWith && r.kind === 'checkpoint') {
      const size = Math.min(r.size as number, i);
      r.size = size;
      r.root = rootOf(out, size);
      Object.assign(r, signCheckpoint(resignWith(i), size, r.root as string));
    }
    out[i] = reseal(r);
  }
  return out;
}

/** Which key an honest operator signs with at `seq` in the fixture layout. */
export const fixtureKeyAt = (seq: number): TestKey => (seq > 30 ? ROTATED_KEY : GOLDEN_KEY);

export const keysDoc = (...keys: TestKey[]) => ({ keys: keys.map((k) => ({ key_id: k.keyId, public_key: k.publicKey })) });

/** The fixture cut after `lastGood`, then a chain_break signed by `key`, then the fixture's records again. */
export function withBreak(lastGood: number, key: TestKey, edit: (r: Rec) => void = () => {}): Rec[] {
  const kept = buildRecords().slice(0, lastGood + 1);
  const reason = 'operator repair after a torn write';
  const brk: Rec = {
    v: 1,
    seq: lastGood + 1,
    ts: '2026-08-24T09:00:00.000Z',
    kind: 'chain_break',
    prev: kept[lastGood]!.hash,
    last_good_seq: lastGood,
    last_good_hash: kept[lastGood]!.hash,
    dropped_from_seq: lastGood + 1,
    reason,
    key_id: key.keyId,
    signature: signPayload(key.privateKey, chainBreakPayload({ last_good_hash: kept[lastGood]!.hash as string, last_good_seq: lastGood, reason })),
  };
  edit(brk);
  return rechain([...kept, brk], lastGood + 1);
}
