import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { verifyExport, verifyExportSync, ExportVerifier } from '../../src/ledger/verify.js';
import { ZERO_HASH } from '../../src/ledger/record.js';
import { GOLDEN_KEY, ROTATED_KEY, clone, fixtureKeyAt, keysDoc, linesOf, rechain, rootOf, signCheckpoint } from './fixture.js';
import {
  BOTH_KEYS,
  CHECKPOINTS,
  DECISIONS,
  D_WITH_DECIMAL,
  D_WITH_INT,
  D_WITH_INT_KEYS,
  D_WITH_UNICODE,
  HELD_31,
  LINES,
  N,
  RECORDS,
  TAMPERS,
  editLine,
} from './tampers.js';

const golden = JSON.parse(readFileSync(new URL('../../../vectors/golden/ledger.json', import.meta.url), 'utf8'));

test('the fixture is a real, valid export of about 60 records', async () => {
  assert.equal(N, 60);
  assert.ok(DECISIONS.length >= 15 && CHECKPOINTS.length === 4);
  assert.ok([D_WITH_INT, D_WITH_DECIMAL, D_WITH_UNICODE, D_WITH_INT_KEYS].every((s) => Number.isInteger(s)));
  const head = RECORDS[N - 1]!.hash;
  assert.deepEqual(await verifyExport(LINES), { ok: true, records: N, head });
  assert.deepEqual(verifyExportSync(LINES, { keys: BOTH_KEYS }), { ok: true, records: N, head });
  for (const cp of CHECKPOINTS) assert.deepEqual(verifyExportSync(LINES, { keys: BOTH_KEYS, checkpoint: RECORDS[cp]! }), { ok: true, records: N, head });
  // Keys fetched before the rotation (seq 30) still verify: the rotated key is vouched for by the first.
  const preRotation = keysDoc(GOLDEN_KEY).keys;
  assert.deepEqual(verifyExportSync(LINES, { keys: preRotation }), { ok: true, records: N, head });
  assert.deepEqual(verifyExportSync(LINES, { keys: preRotation, checkpoint: HELD_31 }), { ok: true, records: N, head });
  // An export that extends a held checkpoint by more records is fine.
  assert.deepEqual(verifyExportSync(LINES.slice(0, 45), { checkpoint: RECORDS[22]! }), { ok: true, records: 45, head: RECORDS[44]!.hash });
});

test('an honest operator re-signing with the right keys yields a valid export (the tamper helpers are faithful)', () => {
  const rebuilt = linesOf(rechain(clone(RECORDS), 0, fixtureKeyAt));
  assert.deepEqual(rebuilt, LINES);
});

test(`tampered exports fail with the exact code and seq (${TAMPERS.length} ways)`, async (t) => {
  assert.ok(TAMPERS.length >= 50);
  const names = new Set(TAMPERS.map((x) => x.name));
  assert.equal(names.size, TAMPERS.length, 'tamper names are unique');
  for (const tamper of TAMPERS) {
    await t.test(tamper.name, async () => {
      const lines = tamper.lines();
      if (!tamper.opts) assert.notDeepEqual(lines, LINES, 'the tamper changes the export');
      const result = await verifyExport(lines, tamper.opts);
      assert.equal(result.ok, false, `expected ${tamper.expect.code}, the export verified`);
      if (!result.ok) assert.deepEqual({ code: result.code, seq: result.seq }, tamper.expect, result.message);
    });
  }
});

test('any single-character edit anywhere in the export is detected', () => {
  fc.assert(
    fc.property(fc.nat({ max: N - 1 }), fc.nat(), fc.integer({ min: 0x20, max: 0x7e }), (lineIndex, position, code) => {
      const line = LINES[lineIndex]!;
      const at = position % line.length;
      const replacement = String.fromCharCode(code);
      fc.pre(line[at] !== replacement);
      const lines = [...LINES];
      lines[lineIndex] = line.slice(0, at) + replacement + line.slice(at + 1);
      const result = verifyExportSync(lines);
      return !result.ok && result.seq === lineIndex;
    }),
    { numRuns: 300, seed: 20260824 },
  );
});

test('verifyExport accepts async iterables and stops at the first failure', async () => {
  let pulled = 0;
  async function* gen(): AsyncGenerator<string> {
    for (const line of editLine(5, (r) => (r.ts = '2026-08-24T09:00:00.000Z'))) {
      pulled += 1;
      yield line;
    }
  }
  const result = await verifyExport(gen());
  assert.deepEqual(result.ok ? null : [result.code, result.seq], ['HASH_MISMATCH', 5]);
  assert.equal(pulled, 6);
});

test('ts: every RFC 3339 UTC spelling verifies (re-signed), and MALFORMED names the record and why', () => {
  for (const ts of [
    '2026-08-24T10:00:00Z',
    '2026-08-24T10:00:00.1Z',
    '2026-08-24T10:00:00.123456789Z',
    '2028-02-29T23:59:59.999Z',
    '1970-01-01T00:00:00.000Z',
  ]) {
    const lines = linesOf(
      rechain(
        clone(RECORDS).map((r, i) => (i === 7 ? { ...r, ts } : r)),
        0,
        fixtureKeyAt,
      ),
    );
    const result = verifyExportSync(lines);
    assert.equal(result.ok, true, `${ts}: ${result.ok ? '' : result.message}`);
  }
  const bad = verifyExportSync(editLine(7, (r) => (r.ts = 'yesterday')));
  assert.deepEqual(bad, { ok: false, seq: 7, code: 'MALFORMED', message: 'ts "yesterday" is not an RFC 3339 UTC date-time (e.g. 2026-08-24T10:00:00.000Z)' });
  const size = verifyExportSync(editLine(15, (r) => (r.size = 'x')));
  assert.deepEqual(size, { ok: false, seq: 15, code: 'MALFORMED', message: 'checkpoint size "x" is not a non-negative integer' });
});

test('an empty export verifies with the zero hash as head; a held checkpoint of size 0 needs the empty root', () => {
  assert.deepEqual(verifyExportSync([]), { ok: true, records: 0, head: ZERO_HASH });
  const emptyRoot = 'sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
  const held = { kind: 'checkpoint', size: 0, root: emptyRoot, ...signCheckpoint(GOLDEN_KEY, 0, emptyRoot) };
  assert.deepEqual(verifyExportSync(LINES, { checkpoint: held }), { ok: true, records: N, head: RECORDS[N - 1]!.hash });
  const wrong = { ...held, root: rootOf(RECORDS, 1) };
  const result = verifyExportSync(LINES, { checkpoint: wrong });
  assert.deepEqual(result.ok ? null : [result.code, result.seq], ['ROOT_MISMATCH', 0]);
});

test('a checkpoint trailing its seq beyond the window cannot be checked in one pass and fails closed', () => {
  const result = verifyExportSync(LINES, { checkpointWindow: 1 });
  assert.deepEqual(result.ok ? null : [result.code, result.seq], ['ROOT_MISMATCH', 22]);
  assert.deepEqual(verifyExportSync(LINES, { checkpointWindow: 2 }).ok, true);
});

test('invalid options are usage errors (INVALID_REQUEST), not verdicts', () => {
  assert.throws(() => new ExportVerifier({ checkpoint: { size: -1 } }), { code: 'INVALID_REQUEST' });
  assert.throws(() => new ExportVerifier({ checkpoint: { ...HELD_31, root: 'nope' } }), { code: 'INVALID_REQUEST' });
  assert.throws(() => new ExportVerifier({ checkpoint: { ...HELD_31, kind: 'decision' } }), { code: 'INVALID_REQUEST' });
  assert.throws(() => new ExportVerifier({ keys: [{ key_id: GOLDEN_KEY.keyId, public_key: ROTATED_KEY.publicKey }] }), { code: 'INVALID_REQUEST' });
});

test('the golden export verifies, with its key and checkpoint', () => {
  const lines = (golden.export_jsonl as string).replace(/\n$/, '').split('\n');
  const cp = JSON.parse(lines[4]!);
  const keys = [{ key_id: golden.key_id, public_key: golden.public_key }];
  const head = cp.hash;
  assert.deepEqual(verifyExportSync(lines), { ok: true, records: 5, head });
  assert.deepEqual(verifyExportSync(lines, { keys, checkpoint: cp }), { ok: true, records: 5, head });
  assert.equal(GOLDEN_KEY.keyId, golden.key_id);
  const truncated = verifyExportSync(lines.slice(0, 3), { keys, checkpoint: cp });
  assert.deepEqual(truncated.ok ? null : [truncated.code, truncated.seq], ['TRUNCATED', 3]);
});
