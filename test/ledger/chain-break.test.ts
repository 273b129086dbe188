/**
 * `chain_break` records (operator repair, docs/protocol.md §6): writ verify accepts one that chains from the
 * last good record it names and is signed by a known key, and refuses a forged or misplaced one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { verifyExportSync } from '../../src/ledger/verify.js';
import { ATTACKER_KEY, fixtureKeyAt, linesOf, withBreak, type Rec } from './fixture.js';

test('a signed chain_break from the last good record verifies', () => {
  const r = verifyExportSync(linesOf(withBreak(25, fixtureKeyAt(25))));
  assert.deepEqual(r, { ok: true, records: 27, head: (r as { head: string }).head });
});

test('a chain_break signed by an unknown key, with a forged reason, or naming another record fails', () => {
  const bad = (records: Rec[]) => verifyExportSync(linesOf(records)) as { ok: boolean; seq: number; code: string };
  assert.deepEqual((({ ok, seq, code }) => ({ ok, seq, code }))(bad(withBreak(25, ATTACKER_KEY))), { ok: false, seq: 26, code: 'UNKNOWN_KEY' });
  const forged = bad(withBreak(25, fixtureKeyAt(25), (r) => (r.reason = 'nothing to see here')));
  assert.equal(forged.code, 'BAD_SIGNATURE');
  assert.equal(forged.seq, 26);
  const misplaced = bad(withBreak(25, fixtureKeyAt(25), (r) => (r.last_good_seq = 20)));
  assert.equal(misplaced.code, 'PREV_MISMATCH');
});
