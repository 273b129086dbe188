/**
 * The tampered exports every verifier path must name exactly (code and seq): built from the fixture
 * export, shared by the sequential tests (verify.test.ts) and the parallel ones (verify-parallel.test.ts).
 */
import { randomBytes } from 'node:crypto';
import type { VerifyCode, VerifyOptions } from '../../src/ledger/verify.js';
import { ZERO_HASH } from '../../src/ledger/record.js';
import { bindingOf } from '../../src/binding/index.js';
import {
  ATTACKER_KEY,
  GOLDEN_KEY,
  ROTATED_KEY,
  buildRecords,
  clone,
  fixtureKeyAt,
  keysDoc,
  linesOf,
  parse,
  rechain,
  reseal,
  rootOf,
  signCheckpoint,
  type Rec,
} from './fixture.js';

export const RECORDS = buildRecords();
export const LINES = linesOf(RECORDS);
export const N = RECORDS.length;
const seqsOf = (kind: string) => RECORDS.filter((r) => r.kind === kind).map((r) => r.seq as number);
export const DECISIONS = seqsOf('decision');
export const CHECKPOINTS = seqsOf('checkpoint');
export const D = DECISIONS[3]!; // a decision in the middle, before the checkpoint at 15
export const D_WITH_INT = DECISIONS.find((s) => JSON.stringify(RECORDS[s]!.arguments).includes('"count":1,'))!;
export const D_WITH_DECIMAL = DECISIONS.find((s) => JSON.stringify(RECORDS[s]!.arguments).includes('"ratio":0.5'))!;
export const D_WITH_UNICODE = DECISIONS.find((s) => JSON.stringify(RECORDS[s]!.arguments).includes('é'))!;
export const D_WITH_INT_KEYS = DECISIONS.find((s) => JSON.stringify(RECORDS[s]!.arguments).includes('"10"'))!;
export const nextCheckpointAfter = (seq: number) => CHECKPOINTS.find((c) => c > seq)!;
export const HELD_31 = RECORDS[40]!; // checkpoint at seq 40, size 40, signed by the rotated key
export const BOTH_KEYS = keysDoc(GOLDEN_KEY, ROTATED_KEY).keys;

/** Replaces line i by the JCS line of an edited copy of its record (hash left as it was). */
export function editLine(i: number, edit: (r: Rec) => void, lines = LINES): string[] {
  const out = [...lines];
  const r = parse(out[i]!);
  edit(r);
  out[i] = linesOf([r])[0]!;
  return out;
}
/** Edits record i and recomputes its hash only. */
export function editResealed(i: number, edit: (r: Rec) => void): string[] {
  const records = clone(RECORDS);
  edit(records[i]!);
  records[i] = reseal(records[i]!);
  return linesOf(records);
}
/** Edits the records then rebuilds the chain from `from` (optionally re-signing checkpoints). */
export function editRechained(edit: (rs: Rec[]) => Rec[] | undefined, from = 0, resign = false): string[] {
  let records = clone(RECORDS);
  records = edit(records) ?? records;
  return linesOf(rechain(records, from, resign ? fixtureKeyAt : undefined));
}

export interface Tamper {
  name: string;
  lines: () => string[];
  opts?: VerifyOptions;
  expect: { code: VerifyCode; seq: number };
}

export const TAMPERS: Tamper[] = [
  // Lines that are not a record's canonical text.
  { name: 'empty line inserted', lines: () => [...LINES.slice(0, 5), '', ...LINES.slice(5)], expect: { code: 'MALFORMED', seq: 5 } },
  { name: 'garbage line replaces a record', lines: () => LINES.map((l, i) => (i === 7 ? 'not json at all' : l)), expect: { code: 'MALFORMED', seq: 7 } },
  { name: 'trailing space', lines: () => LINES.map((l, i) => (i === 3 ? `${l} ` : l)), expect: { code: 'MALFORMED', seq: 3 } },
  { name: 'CR line ending', lines: () => LINES.map((l, i) => (i === 3 ? `${l}\r` : l)), expect: { code: 'MALFORMED', seq: 3 } },
  {
    name: 'pretty-printed record',
    lines: () => LINES.map((l, i) => (i === 4 ? JSON.stringify(JSON.parse(l), null, 1).replace(/\n/g, ' ') : l)),
    expect: { code: 'MALFORMED', seq: 4 },
  },
  {
    name: 'keys out of JCS order',
    lines: () => LINES.map((l, i) => (i === 4 ? JSON.stringify({ v: 1, ...JSON.parse(l) }) : l)),
    expect: { code: 'MALFORMED', seq: 4 },
  },
  {
    name: 'duplicate key (same value)',
    lines: () => LINES.map((l, i) => (i === 6 ? l.replace('"kind":', '"kind":"x","kind":') : l)),
    expect: { code: 'MALFORMED', seq: 6 },
  },
  {
    name: 'argument 1 re-spelled 1.0',
    lines: () => LINES.map((l, i) => (i === D_WITH_INT ? l.replace('"count":1,', '"count":1.0,') : l)),
    expect: { code: 'MALFORMED', seq: D_WITH_INT },
  },
  {
    name: 'argument 0.5 re-spelled 5e-1',
    lines: () => LINES.map((l, i) => (i === D_WITH_DECIMAL ? l.replace('"ratio":0.5', '"ratio":5e-1') : l)),
    expect: { code: 'MALFORMED', seq: D_WITH_DECIMAL },
  },
  {
    name: 'string re-spelled with a \\u escape',
    lines: () => LINES.map((l, i) => (i === D_WITH_UNICODE ? l.replace('é', '\\u00e9') : l)),
    expect: { code: 'MALFORMED', seq: D_WITH_UNICODE },
  },
  {
    name: 'integer-like keys in engine order',
    lines: () => LINES.map((l, i) => (i === D_WITH_INT_KEYS ? JSON.stringify(JSON.parse(l)) : l)),
    expect: { code: 'MALFORMED', seq: D_WITH_INT_KEYS },
  },
  { name: 'a JSON array line', lines: () => LINES.map((l, i) => (i === 2 ? '[1,2]' : l)), expect: { code: 'MALFORMED', seq: 2 } },
  { name: 'v changed to 2', lines: () => editLine(8, (r) => (r.v = 2)), expect: { code: 'MALFORMED', seq: 8 } },
  { name: 'v removed and resealed', lines: () => editResealed(8, (r) => delete r.v), expect: { code: 'MALFORMED', seq: 8 } },
  { name: 'seq written as a string', lines: () => editLine(9, (r) => (r.seq = '9')), expect: { code: 'MALFORMED', seq: 9 } },
  { name: 'hash removed', lines: () => editLine(9, (r) => delete r.hash), expect: { code: 'MALFORMED', seq: 9 } },

  // Fields not of their form (docs/protocol.md §6), even with hash, chain and every checkpoint
  // recomputed and re-signed by the operator's own keys: MALFORMED at the record, whatever follows.
  {
    name: 'ts "yesterday", chain recomputed and re-signed',
    lines: () => editRechained((rs) => void (rs[D]!.ts = 'yesterday'), 0, true),
    expect: { code: 'MALFORMED', seq: D },
  },
  { name: 'ts "yesterday", not resealed', lines: () => editLine(D, (r) => (r.ts = 'yesterday')), expect: { code: 'MALFORMED', seq: D } },
  {
    name: 'ts with a +07:00 offset, re-signed',
    lines: () => editRechained((rs) => void (rs[D]!.ts = '2026-08-24T15:30:00.000+07:00'), 0, true),
    expect: { code: 'MALFORMED', seq: D },
  },
  {
    name: 'ts with a +00:00 offset, re-signed',
    lines: () => editRechained((rs) => void (rs[D]!.ts = '2026-08-24T08:30:00.000+00:00'), 0, true),
    expect: { code: 'MALFORMED', seq: D },
  },
  {
    name: 'ts with a lower-case z, re-signed',
    lines: () => editRechained((rs) => void (rs[D]!.ts = '2026-08-24T08:30:00.000z'), 0, true),
    expect: { code: 'MALFORMED', seq: D },
  },
  {
    name: 'ts with a space separator, re-signed',
    lines: () => editRechained((rs) => void (rs[D]!.ts = '2026-08-24 08:30:00.000Z'), 0, true),
    expect: { code: 'MALFORMED', seq: D },
  },
  {
    name: 'ts without seconds, re-signed',
    lines: () => editRechained((rs) => void (rs[D]!.ts = '2026-08-24T08:30Z'), 0, true),
    expect: { code: 'MALFORMED', seq: D },
  },
  {
    name: 'ts on 30 February, re-signed',
    lines: () => editRechained((rs) => void (rs[D]!.ts = '2026-02-30T08:30:00.000Z'), 0, true),
    expect: { code: 'MALFORMED', seq: D },
  },
  {
    name: 'ts on a leap second, re-signed',
    lines: () => editRechained((rs) => void (rs[D]!.ts = '2026-06-30T23:59:60Z'), 0, true),
    expect: { code: 'MALFORMED', seq: D },
  },
  {
    name: 'ts as epoch milliseconds, re-signed',
    lines: () => editRechained((rs) => void (rs[D]!.ts = 1787560200000), 0, true),
    expect: { code: 'MALFORMED', seq: D },
  },
  { name: 'ts empty, re-signed', lines: () => editRechained((rs) => void (rs[D]!.ts = ''), 0, true), expect: { code: 'MALFORMED', seq: D } },
  { name: 'ts removed, re-signed', lines: () => editRechained((rs) => void delete rs[D]!.ts, 0, true), expect: { code: 'MALFORMED', seq: D } },
  {
    name: 'key record ts "yesterday", re-signed',
    lines: () => editRechained((rs) => void (rs[0]!.ts = 'yesterday'), 0, true),
    expect: { code: 'MALFORMED', seq: 0 },
  },
  {
    name: 'checkpoint ts "yesterday", re-signed',
    lines: () => editRechained((rs) => void (rs[15]!.ts = 'yesterday'), 0, true),
    expect: { code: 'MALFORMED', seq: 15 },
  },
  { name: 'checkpoint size "x", chain recomputed', lines: () => editRechained((rs) => void (rs[15]!.size = 'x')), expect: { code: 'MALFORMED', seq: 15 } },
  { name: 'checkpoint size "x", not resealed', lines: () => editLine(15, (r) => (r.size = 'x')), expect: { code: 'MALFORMED', seq: 15 } },
  {
    name: 'checkpoint size "14" (a string), chain recomputed',
    lines: () => editRechained((rs) => void (rs[15]!.size = '14')),
    expect: { code: 'MALFORMED', seq: 15 },
  },
  { name: 'checkpoint size -1, chain recomputed', lines: () => editRechained((rs) => void (rs[15]!.size = -1)), expect: { code: 'MALFORMED', seq: 15 } },
  { name: 'checkpoint size 14.5, chain recomputed', lines: () => editRechained((rs) => void (rs[15]!.size = 14.5)), expect: { code: 'MALFORMED', seq: 15 } },
  { name: 'checkpoint size [15], chain recomputed', lines: () => editRechained((rs) => void (rs[15]!.size = [15])), expect: { code: 'MALFORMED', seq: 15 } },
  { name: 'checkpoint size null, chain recomputed', lines: () => editRechained((rs) => void (rs[15]!.size = null)), expect: { code: 'MALFORMED', seq: 15 } },
  { name: 'checkpoint size removed, chain recomputed', lines: () => editRechained((rs) => void delete rs[15]!.size), expect: { code: 'MALFORMED', seq: 15 } },
  {
    name: 'checkpoint size beyond 2^53, chain recomputed',
    lines: () => editRechained((rs) => void (rs[15]!.size = 2 ** 53)),
    expect: { code: 'MALFORMED', seq: 15 },
  },
  {
    name: 'seq written as [12] and resealed (Number("[12]") is 12)',
    lines: () => editResealed(12, (r) => (r.seq = [12])),
    expect: { code: 'MALFORMED', seq: 12 },
  },
  {
    name: 'seq written as [] at seq 0 and resealed (Number("[]") is 0)',
    lines: () => editResealed(0, (r) => (r.seq = [])),
    expect: { code: 'MALFORMED', seq: 0 },
  },
  { name: 'seq negative, resealed', lines: () => editResealed(12, (r) => (r.seq = -12)), expect: { code: 'MALFORMED', seq: 12 } },
  { name: 'seq 12.5, resealed', lines: () => editResealed(12, (r) => (r.seq = 12.5)), expect: { code: 'MALFORMED', seq: 12 } },
  { name: 'kind empty, chain recomputed', lines: () => editRechained((rs) => void (rs[3]!.kind = '')), expect: { code: 'MALFORMED', seq: 3 } },
  { name: 'kind a number, chain recomputed', lines: () => editRechained((rs) => void (rs[3]!.kind = 7)), expect: { code: 'MALFORMED', seq: 3 } },
  { name: 'v true, chain recomputed', lines: () => editRechained((rs) => void (rs[3]!.v = true)), expect: { code: 'MALFORMED', seq: 3 } },
  { name: 'prev a number, resealed', lines: () => editResealed(5, (r) => (r.prev = 0)), expect: { code: 'MALFORMED', seq: 5 } },
  // Cryptographic fields are judged by the check that uses them, whatever the value: any value but
  // the right one is that check's code, as an edit to a well-formed value is (see malformedField).
  {
    name: 'prev in upper-case hex, resealed',
    lines: () => editResealed(5, (r) => (r.prev = `sha256:${(r.prev as string).slice(7).toUpperCase()}`)),
    expect: { code: 'PREV_MISMATCH', seq: 5 },
  },
  {
    name: 'prev without its sha256: tag, resealed',
    lines: () => editResealed(5, (r) => (r.prev = (r.prev as string).slice(7))),
    expect: { code: 'PREV_MISMATCH', seq: 5 },
  },
  { name: 'hash "sha256:deadbeef"', lines: () => editLine(9, (r) => (r.hash = 'sha256:deadbeef')), expect: { code: 'HASH_MISMATCH', seq: 9 } },
  {
    name: 'checkpoint root a number, chain recomputed',
    lines: () => editRechained((rs) => void (rs[40]!.root = 7)),
    expect: { code: 'ROOT_MISMATCH', seq: 40 },
  },
  {
    name: 'checkpoint key_id a number, chain recomputed',
    lines: () => editRechained((rs) => void (rs[15]!.key_id = 7)),
    expect: { code: 'UNKNOWN_KEY', seq: 15 },
  },
  {
    name: 'checkpoint signature a number, chain recomputed',
    lines: () => editRechained((rs) => void (rs[15]!.signature = 7)),
    expect: { code: 'BAD_SIGNATURE', seq: 15 },
  },
  {
    name: 'key public_key a number, chain recomputed',
    lines: () => editRechained((rs) => void (rs[0]!.public_key = 7)),
    expect: { code: 'UNKNOWN_KEY', seq: 0 },
  },

  // Deleted, duplicated, reordered, renumbered records.
  { name: 'record deleted', lines: () => LINES.filter((_, i) => i !== 10), expect: { code: 'SEQ_GAP', seq: 10 } },
  { name: 'first record deleted', lines: () => LINES.slice(1), expect: { code: 'SEQ_GAP', seq: 0 } },
  { name: 'record duplicated', lines: () => [...LINES.slice(0, 11), LINES[10]!, ...LINES.slice(11)], expect: { code: 'SEQ_GAP', seq: 11 } },
  { name: 'two records swapped', lines: () => LINES.map((l, i) => (i === 10 ? LINES[11]! : i === 11 ? LINES[10]! : l)), expect: { code: 'SEQ_GAP', seq: 10 } },
  { name: 'last record repeated at the end', lines: () => [...LINES, LINES[N - 1]!], expect: { code: 'SEQ_GAP', seq: N } },
  { name: 'seq edited in place', lines: () => editLine(12, (r) => (r.seq = 13)), expect: { code: 'SEQ_GAP', seq: 12 } },
  { name: 'seq edited and resealed (prev still links)', lines: () => editResealed(12, (r) => (r.seq = 13)), expect: { code: 'SEQ_GAP', seq: 12 } },
  { name: 'seq repeated and resealed (prev still links)', lines: () => editResealed(12, (r) => (r.seq = 11)), expect: { code: 'SEQ_GAP', seq: 12 } },
  {
    name: 'record deleted, later seqs renumbered and resealed',
    lines: () => {
      const records = clone(RECORDS).filter((_, i) => i !== 10);
      return linesOf(records.map((r, i) => (i >= 10 ? reseal({ ...r, seq: i }) : r)));
    },
    expect: { code: 'PREV_MISMATCH', seq: 10 },
  },

  // Edited fields (hash not recomputed).
  {
    name: 'decision deny → allow',
    lines: () => editLine(D, (r) => (r.decision = r.decision === 'deny' ? 'allow' : 'deny')),
    expect: { code: 'HASH_MISMATCH', seq: D },
  },
  { name: 'timestamp edited', lines: () => editLine(D, (r) => (r.ts = '2026-08-24T09:00:00.000Z')), expect: { code: 'HASH_MISMATCH', seq: D } },
  { name: 'actor edited', lines: () => editLine(D, (r) => ((r.actor as Rec).id = 'someone-else')), expect: { code: 'HASH_MISMATCH', seq: D } },
  {
    name: 'nested envelope field edited',
    lines: () => editLine(D, (r) => ((r.envelope as Rec).purpose = 'curiosity')),
    expect: { code: 'HASH_MISMATCH', seq: D },
  },
  { name: 'reason added', lines: () => editLine(D, (r) => (r.reasons as string[]).push('extra')), expect: { code: 'HASH_MISMATCH', seq: D } },
  { name: 'field added', lines: () => editLine(D, (r) => (r.approval_used = 'apr-1')), expect: { code: 'HASH_MISMATCH', seq: D } },
  { name: 'field removed', lines: () => editLine(D, (r) => delete r.errors), expect: { code: 'HASH_MISMATCH', seq: D } },
  { name: 'kind edited', lines: () => editLine(3, (r) => (r.kind = 'note')), expect: { code: 'HASH_MISMATCH', seq: 3 } },
  {
    name: 'policy version edited',
    lines: () => editLine(1, (r) => (r.policy_version = `sha256:${'a'.repeat(64)}`)),
    expect: { code: 'HASH_MISMATCH', seq: 1 },
  },
  { name: 'key record timestamp edited', lines: () => editLine(0, (r) => (r.ts = '2020-01-01T00:00:00.000Z')), expect: { code: 'HASH_MISMATCH', seq: 0 } },
  { name: 'checkpoint root edited', lines: () => editLine(15, (r) => (r.root = rootOf(RECORDS, 14))), expect: { code: 'HASH_MISMATCH', seq: 15 } },
  { name: 'hash replaced by another record hash', lines: () => editLine(9, (r) => (r.hash = RECORDS[8]!.hash)), expect: { code: 'HASH_MISMATCH', seq: 9 } },
  {
    name: 'hash in upper-case hex',
    lines: () => editLine(9, (r) => (r.hash = `sha256:${(r.hash as string).slice(7).toUpperCase()}`)),
    expect: { code: 'HASH_MISMATCH', seq: 9 },
  },
  {
    name: 'stored arguments edited (not resealed)',
    lines: () => editLine(D, (r) => ((r.arguments as Rec).employee_id = '0001')),
    expect: { code: 'HASH_MISMATCH', seq: D },
  },

  // Edits whose hash was recomputed: the next link breaks.
  {
    name: 'decision edited and resealed',
    lines: () => editResealed(D, (r) => (r.decision = 'allow' === r.decision ? 'deny' : 'allow')),
    expect: { code: 'PREV_MISMATCH', seq: D + 1 },
  },
  { name: 'prev re-pointed and resealed', lines: () => editResealed(5, (r) => (r.prev = ZERO_HASH)), expect: { code: 'PREV_MISMATCH', seq: 5 } },
  {
    name: 'first record prev non-zero and resealed',
    lines: () => editResealed(0, (r) => (r.prev = RECORDS[0]!.hash)),
    expect: { code: 'PREV_MISMATCH', seq: 0 },
  },
  {
    name: 'key record edited and resealed',
    lines: () => editResealed(0, (r) => (r.ts = '2020-01-01T00:00:00.000Z')),
    expect: { code: 'PREV_MISMATCH', seq: 1 },
  },

  // Recomputed chains: caught by the next checkpoint's root.
  {
    name: 'decision edited, chain recomputed',
    lines: () => editRechained((rs) => void (rs[D]!.decision = 'allow' === rs[D]!.decision ? 'deny' : 'allow')),
    expect: { code: 'ROOT_MISMATCH', seq: nextCheckpointAfter(D) },
  },
  // Seq 10 is an allowed execute, 11 its outcome: without the execute (or after it), the outcome breaks
  // the state machine (§17) before the next checkpoint's root can.
  {
    name: 'record deleted, chain recomputed',
    lines: () => editRechained((rs) => rs.filter((_, i) => i !== 10)),
    expect: { code: 'ILLEGAL_TRANSITION', seq: 10 },
  },
  {
    name: 'records reordered, chain recomputed',
    lines: () => editRechained((rs) => rs.map((r, i) => (i === 10 ? rs[11]! : i === 11 ? rs[10]! : r))),
    expect: { code: 'ILLEGAL_TRANSITION', seq: 10 },
  },
  {
    name: 'record invented, chain recomputed',
    lines: () => editRechained((rs) => [...rs.slice(0, 10), { ...rs[9]!, execution_id: 'INVENTED' }, ...rs.slice(10)]),
    expect: { code: 'ROOT_MISMATCH', seq: 16 },
  },
  {
    name: 'edit after the trailing checkpoint’s size, chain recomputed',
    lines: () => editRechained((rs) => void (rs[21]!.ts = '2026-08-24T10:00:00.000Z')),
    expect: { code: 'ROOT_MISMATCH', seq: 40 },
  },
  { name: 'checkpoint size beyond its own seq', lines: () => editRechained((rs) => void (rs[15]!.size = 16)), expect: { code: 'ROOT_MISMATCH', seq: 15 } },
  { name: 'checkpoint size shrunk', lines: () => editRechained((rs) => void (rs[15]!.size = 14)), expect: { code: 'ROOT_MISMATCH', seq: 15 } },
  {
    name: 'checkpoint root of another size',
    lines: () => editRechained((rs) => void (rs[40]!.root = rootOf(RECORDS, 39))),
    expect: { code: 'ROOT_MISMATCH', seq: 40 },
  },
  { name: 'checkpoint root removed', lines: () => editRechained((rs) => void delete rs[40]!.root), expect: { code: 'ROOT_MISMATCH', seq: 40 } },

  // Forged and replayed signatures, swapped and unknown keys.
  {
    name: 'checkpoint size and root changed consistently, old signature',
    lines: () => editRechained((rs) => void Object.assign(rs[15]!, { size: 14, root: rootOf(RECORDS, 14) })),
    expect: { code: 'BAD_SIGNATURE', seq: 15 },
  },
  {
    name: 'checkpoint signature forged',
    lines: () => editRechained((rs) => void (rs[15]!.signature = randomBytes(64).toString('base64'))),
    expect: { code: 'BAD_SIGNATURE', seq: 15 },
  },
  {
    name: 'checkpoint signature replayed from another checkpoint',
    lines: () => editRechained((rs) => void (rs[59]!.signature = rs[40]!.signature)),
    expect: { code: 'BAD_SIGNATURE', seq: 59 },
  },
  {
    name: 'checkpoint signature not base64',
    lines: () => editRechained((rs) => void (rs[15]!.signature = '!!not-base64!!')),
    expect: { code: 'BAD_SIGNATURE', seq: 15 },
  },
  { name: 'checkpoint signature null', lines: () => editRechained((rs) => void (rs[15]!.signature = null)), expect: { code: 'BAD_SIGNATURE', seq: 15 } },
  {
    name: 'checkpoint key_id swapped to the other known key',
    lines: () => editRechained((rs) => void (rs[40]!.key_id = GOLDEN_KEY.keyId)),
    expect: { code: 'BAD_SIGNATURE', seq: 40 },
  },
  {
    name: 'checkpoint signed by a key the ledger never introduced',
    lines: () => editRechained((rs) => void Object.assign(rs[15]!, signCheckpoint(ATTACKER_KEY, 15, rs[15]!.root as string))),
    expect: { code: 'UNKNOWN_KEY', seq: 15 },
  },
  {
    // A rotation retires the key before it (often rotated because it may be compromised): a checkpoint
    // it signs after the rotation is not vouched for, however valid its signature.
    name: 'checkpoint after the rotation re-signed by the retired key',
    lines: () => editRechained((rs) => void Object.assign(rs[40]!, signCheckpoint(GOLDEN_KEY, 40, rs[40]!.root as string))),
    expect: { code: 'UNKNOWN_KEY', seq: 40 },
  },
  {
    name: 'rotated key signed before its introduction is used',
    lines: () => editRechained((rs) => void Object.assign(rs[22]!, signCheckpoint(ROTATED_KEY, 20, rs[22]!.root as string))),
    expect: { code: 'UNKNOWN_KEY', seq: 22 },
  },
  {
    name: 'rotation signature forged',
    lines: () => editRechained((rs) => void (rs[30]!.signature = randomBytes(64).toString('base64'))),
    expect: { code: 'BAD_SIGNATURE', seq: 30 },
  },
  { name: 'rotation signature removed', lines: () => editRechained((rs) => void (rs[30]!.signature = null)), expect: { code: 'BAD_SIGNATURE', seq: 30 } },
  {
    name: 'rotation self-signed by the new key',
    lines: () =>
      editRechained((rs) => {
        rs[30]!.signature = signCheckpoint(ROTATED_KEY, 0, ZERO_HASH).signature; // any signature not by the previous key
      }),
    expect: { code: 'BAD_SIGNATURE', seq: 30 },
  },
  {
    name: 'first key carries a signature',
    lines: () => editRechained((rs) => void (rs[0]!.signature = rs[30]!.signature)),
    expect: { code: 'BAD_SIGNATURE', seq: 0 },
  },
  {
    name: 'first key’s public key swapped, key_id kept',
    lines: () => editRechained((rs) => void (rs[0]!.public_key = ATTACKER_KEY.publicKey)),
    expect: { code: 'UNKNOWN_KEY', seq: 0 },
  },
  { name: 'key_id edited', lines: () => editRechained((rs) => void (rs[0]!.key_id = 'ed25519:0000000000000000')), expect: { code: 'UNKNOWN_KEY', seq: 0 } },
  {
    name: 'public key of 31 bytes',
    lines: () => editRechained((rs) => void (rs[0]!.public_key = randomBytes(31).toString('base64'))),
    expect: { code: 'UNKNOWN_KEY', seq: 0 },
  },
  {
    name: 'whole ledger rewritten under an attacker key, trusted keys given',
    lines: () => editRechained((rs) => void Object.assign(rs[0]!, { key_id: ATTACKER_KEY.keyId, public_key: ATTACKER_KEY.publicKey }), 0, true),
    opts: { keys: BOTH_KEYS },
    expect: { code: 'UNKNOWN_KEY', seq: 0 },
  },
  // The trusted keys anchor the first key; a later key is trusted only through the key before it.
  {
    name: 'trusted keys lack the first key (only the rotated one given)',
    lines: () => LINES,
    opts: { keys: keysDoc(ROTATED_KEY).keys },
    expect: { code: 'UNKNOWN_KEY', seq: 0 },
  },
  { name: 'trusted keys from another ledger', lines: () => LINES, opts: { keys: keysDoc(ATTACKER_KEY).keys }, expect: { code: 'UNKNOWN_KEY', seq: 0 } },

  // Stored calls that no longer match their binding (hash and chain recomputed).
  {
    name: 'stored arguments changed',
    lines: () => editRechained((rs) => void ((rs[D]!.arguments as Rec).employee_id = '0001')),
    expect: { code: 'BINDING_MISMATCH', seq: D },
  },
  {
    name: 'stored argument 1 → "1"',
    lines: () => editRechained((rs) => void ((rs[D_WITH_INT]!.arguments as Rec).count = '1')),
    expect: { code: 'BINDING_MISMATCH', seq: D_WITH_INT },
  },
  {
    name: 'stored argument 0.5 → 0.25',
    lines: () => editRechained((rs) => void ((rs[D_WITH_DECIMAL]!.arguments as Rec).ratio = 0.25)),
    expect: { code: 'BINDING_MISMATCH', seq: D_WITH_DECIMAL },
  },
  { name: 'stored arguments removed', lines: () => editRechained((rs) => void delete rs[D]!.arguments), expect: { code: 'BINDING_MISMATCH', seq: D } },
  { name: 'stored server changed', lines: () => editRechained((rs) => void (rs[D]!.server = 'other')), expect: { code: 'BINDING_MISMATCH', seq: D } },
  { name: 'stored tool changed', lines: () => editRechained((rs) => void (rs[D]!.tool = 'delete_user')), expect: { code: 'BINDING_MISMATCH', seq: D } },
  {
    name: 'binding replaced by another decision’s',
    lines: () => editRechained((rs) => void (rs[D]!.binding = rs[D_WITH_INT]!.binding)),
    expect: { code: 'BINDING_MISMATCH', seq: D },
  },
  // A forged call whose binding is recomputed over arguments admission refuses (§3), everything re-signed:
  // the binding matches its own recomputation, so only admitting the stored arguments again tells.
  ...(
    [
      ['a decimal with 7 fractional digits', { employee_id: '7721', ratio: 1e-7 }],
      ['an unsafe integer', { employee_id: '7721', count: 2 ** 53 }],
      ['a double that is not a Cedar decimal', { employee_id: '7721', ratio: 0.1 + 0.2 }],
      ['an array', [1, 2]],
    ] as Array<[string, unknown]>
  ).map(
    ([what, args]): Tamper => ({
      name: `stored arguments hold ${what}, binding recomputed and checkpoints re-signed`,
      lines: () =>
        editRechained(
          (rs) => {
            const r = rs[D]!;
            r.arguments = args;
            r.binding = bindingOf(r.server as string, r.tool as string, args as never);
          },
          0,
          true,
        ),
      expect: { code: 'BINDING_MISMATCH', seq: D },
    }),
  ),
  {
    name: 'arguments changed with the binding recomputed, old checkpoint',
    lines: () =>
      editRechained((rs) => {
        const r = rs[D]!;
        r.arguments = { employee_id: '0001' };
        r.binding = bindingOf(r.server as string, r.tool as string, r.arguments as never);
      }),
    expect: { code: 'ROOT_MISMATCH', seq: nextCheckpointAfter(D) },
  },

  // A checkpoint held from earlier.
  { name: 'truncated below the held checkpoint', lines: () => LINES.slice(0, 20), opts: { checkpoint: HELD_31 }, expect: { code: 'TRUNCATED', seq: 20 } },
  { name: 'truncated to nothing', lines: () => [], opts: { checkpoint: HELD_31 }, expect: { code: 'TRUNCATED', seq: 0 } },
  {
    name: 'operator rewrote history and re-signed every checkpoint',
    lines: () => editRechained((rs) => void (rs[D]!.decision = 'allow' === rs[D]!.decision ? 'deny' : 'allow'), 0, true),
    opts: { checkpoint: HELD_31 },
    expect: { code: 'ROOT_MISMATCH', seq: 40 },
  },
  {
    name: 'operator re-signed a record after the held root but before the held record',
    lines: () => editRechained((rs) => void (rs[40]!.ts = '2026-08-24T11:00:00.000Z'), 0, true),
    opts: { checkpoint: HELD_31 },
    expect: { code: 'HASH_MISMATCH', seq: 40 },
  },
  {
    name: 'operator rewrote the tail after the held checkpoint',
    lines: () => editRechained((rs) => void (rs[45]!.ts = '2026-08-24T11:00:00.000Z'), 0, true),
    opts: { checkpoint: RECORDS[59]! },
    expect: { code: 'ROOT_MISMATCH', seq: 59 },
  },
  {
    name: 'held checkpoint signature forged',
    lines: () => LINES,
    opts: { checkpoint: { ...HELD_31, signature: randomBytes(64).toString('base64') } },
    expect: { code: 'BAD_SIGNATURE', seq: 40 },
  },
  {
    name: 'held checkpoint by an unknown key',
    lines: () => LINES,
    opts: { checkpoint: { ...HELD_31, ...signCheckpoint(ATTACKER_KEY, 40, HELD_31.root as string) } },
    expect: { code: 'UNKNOWN_KEY', seq: 40 },
  },
  {
    name: 'held checkpoint of another history (validly signed)',
    lines: () => LINES,
    opts: { checkpoint: { ...HELD_31, root: rootOf(RECORDS, 39), ...signCheckpoint(ROTATED_KEY, 40, rootOf(RECORDS, 39)) } },
    expect: { code: 'ROOT_MISMATCH', seq: 40 },
  },
];
