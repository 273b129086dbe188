/**
 * The parallel verifier (worker threads) must give exactly the verdict of the sequential one — same
 * ok line, or same code, seq and message — on valid exports and on every tampered one, whatever the
 * block size, the number of workers, and however the input arrives in pieces.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { verifyStream } from '../../src/cli/verify.js';
import type { VerifyOptions, VerifyResult } from '../../src/ledger/verify.js';
import { examineBlock, LINKED_HASH_LENGTH } from '../../src/ledger/verify-block.js';
import { VerifyWorkers, verifyInParallel, type ReadBytes } from '../../src/ledger/verify-parallel.js';
import { recordLine, sealRecord } from '../../src/ledger/record.js';
import { ATTACKER_KEY, ROTATED_KEY, fixtureKeyAt, linesOf, rootOf, signCheckpoint, withBreak } from './fixture.js';
import { BOTH_KEYS, CHECKPOINTS, HELD_31, LINES, N, RECORDS, TAMPERS } from './tampers.js';

const EXPORT = Buffer.from(`${LINES.join('\n')}\n`, 'utf8');
const HEAD = RECORDS[N - 1]!.hash as string;

// Started once and shared by every verification here (each answers in order, so that is safe).
const TWO_WORKERS = new VerifyWorkers(2);
const THREE_WORKERS = new VerifyWorkers(3);
test.after(async () => {
  await TWO_WORKERS.close();
  await THREE_WORKERS.close();
});

interface Config {
  name: string;
  workers: VerifyWorkers;
  blockBytes: number;
  /** At most this many bytes per read, so blocks are filled by several partial reads. */
  readBytes?: number;
}

// From one block holding the whole export (nearly every line linked) down to blocks smaller than
// any line (every line first in its block, each block grown to hold it).
const CONFIGS: Config[] = [
  { name: '2 workers, 1 MiB blocks', workers: TWO_WORKERS, blockBytes: 1 << 20 },
  { name: '3 workers, 2500-byte blocks, 333-byte reads', workers: THREE_WORKERS, blockBytes: 2500, readBytes: 333 },
  { name: '2 workers, 700-byte blocks', workers: TWO_WORKERS, blockBytes: 700 },
  { name: '2 workers, 64-byte blocks', workers: TWO_WORKERS, blockBytes: 64 },
];

/** ReadBytes over bytes in memory. */
function memoryReader(bytes: Buffer, readBytes = Number.POSITIVE_INFINITY): ReadBytes {
  let pos = 0;
  return async (into, offset, length) => {
    const n = Math.min(length, readBytes, bytes.length - pos);
    bytes.copy(into, offset, pos, pos + n);
    pos += n;
    return n;
  };
}

/** The sequential verdict: the CLI's main-thread path over the same bytes. */
const sequentialVerdict = (bytes: Buffer, opts: VerifyOptions): Promise<VerifyResult> => verifyStream(Readable.from([bytes]), opts);

const parallelVerdict = (bytes: Buffer, opts: VerifyOptions, config: Config): Promise<VerifyResult> =>
  verifyInParallel(memoryReader(bytes, config.readBytes), opts, { workers: config.workers, blockBytes: config.blockBytes });

/** Asserts every configuration's verdict is the sequential one, and returns it. */
async function assertSameVerdict(bytes: Buffer, opts: VerifyOptions, label: string): Promise<VerifyResult> {
  const expected = await sequentialVerdict(bytes, opts);
  for (const config of CONFIGS) assert.deepEqual(await parallelVerdict(bytes, opts, config), expected, `${label} (${config.name})`);
  return expected;
}

const exportOf = (lines: string[]) => Buffer.from(lines.map((l) => `${l}\n`).join(''), 'utf8');

test('examineBlock links every line to the one before, except the first and the key and checkpoint records', () => {
  const findings = examineBlock(EXPORT);
  assert.equal(findings.lineCount, N);
  const unlinkedLines = findings.unlinked.filter((_, i) => i % 3 === 0);
  const expected = RECORDS.map((r, i) => (i === 0 || r.kind === 'key' || r.kind === 'checkpoint' ? i : -1)).filter((i) => i >= 0);
  assert.deepEqual(unlinkedLines, expected);
  assert.equal(findings.linkedHashes.length, (N - expected.length) * LINKED_HASH_LENGTH);
  assert.equal(findings.linkedHashes.slice(0, LINKED_HASH_LENGTH), RECORDS[1]!.hash);
});

test('a valid export: the same ok verdict with any workers and block size, with keys and held checkpoints', async () => {
  assert.deepEqual(await assertSameVerdict(EXPORT, {}, 'plain'), { ok: true, records: N, head: HEAD });
  assert.deepEqual(await assertSameVerdict(EXPORT, { keys: BOTH_KEYS }, 'keys'), { ok: true, records: N, head: HEAD });
  for (const cp of CHECKPOINTS) {
    const verdict = await assertSameVerdict(EXPORT, { keys: BOTH_KEYS, checkpoint: RECORDS[cp]! }, `held checkpoint ${cp}`);
    assert.deepEqual(verdict, { ok: true, records: N, head: HEAD });
  }
});

test(`every tampered export: the same code, seq and message as the sequential verifier (${TAMPERS.length} ways)`, async () => {
  for (const tamper of TAMPERS) {
    const verdict = await assertSameVerdict(exportOf(tamper.lines()), tamper.opts ?? {}, tamper.name);
    assert.deepEqual(verdict.ok ? verdict : { code: verdict.code, seq: verdict.seq }, tamper.expect, tamper.name);
  }
});

test('held checkpoints whose seq falls on an ordinary (linked) record are checked at that record', async () => {
  const seq = 45;
  assert.equal(RECORDS[seq]!.kind === 'checkpoint' || RECORDS[seq]!.kind === 'key', false);
  const size = 37;
  const root37 = rootOf(RECORDS, size);
  const cases: Array<[string, Record<string, unknown>, unknown]> = [
    ['seq and hash of record 45', { ...HELD_31, seq, hash: RECORDS[seq]!.hash }, { ok: true, records: N, head: HEAD }],
    ['hash of another record', { ...HELD_31, seq, hash: RECORDS[seq - 1]!.hash }, { code: 'HASH_MISMATCH', seq }],
    [
      'signature by another key',
      { ...HELD_31, seq, signature: signCheckpoint(ATTACKER_KEY, 40, HELD_31.root as string).signature },
      { code: 'BAD_SIGNATURE', seq },
    ],
    [
      'size 37 with its true root',
      { kind: 'checkpoint', size, root: root37, ...signCheckpoint(fixtureKeyAt(seq), size, root37), seq },
      { ok: true, records: N, head: HEAD },
    ],
    [
      'size 37 with the root of 40',
      { kind: 'checkpoint', size, root: HELD_31.root, ...signCheckpoint(ROTATED_KEY, size, HELD_31.root as string), seq },
      { code: 'ROOT_MISMATCH', seq },
    ],
  ];
  for (const [name, checkpoint, expect] of cases) {
    const verdict = await assertSameVerdict(EXPORT, { checkpoint }, name);
    assert.deepEqual(verdict.ok ? verdict : { code: verdict.code, seq: verdict.seq }, expect, name);
  }
});

test('chain_break records: accepted and refused exactly as sequentially', async () => {
  const valid = await assertSameVerdict(exportOf(linesOf(withBreak(25, fixtureKeyAt(25)))), {}, 'signed chain_break');
  assert.equal(valid.ok, true);
  const unknownKey = await assertSameVerdict(exportOf(linesOf(withBreak(25, ATTACKER_KEY))), {}, 'unknown key');
  assert.deepEqual(unknownKey.ok ? null : [unknownKey.code, unknownKey.seq], ['UNKNOWN_KEY', 26]);
  const forged = await assertSameVerdict(exportOf(linesOf(withBreak(25, fixtureKeyAt(25), (r) => (r.reason = 'nothing')))), {}, 'forged reason');
  assert.deepEqual(forged.ok ? null : [forged.code, forged.seq], ['BAD_SIGNATURE', 26]);
  const misplaced = await assertSameVerdict(exportOf(linesOf(withBreak(25, fixtureKeyAt(25), (r) => (r.last_good_seq = 20)))), {}, 'misplaced');
  assert.deepEqual(misplaced.ok ? null : [misplaced.code, misplaced.seq], ['PREV_MISMATCH', 26]);
});

test('line framing at the byte level: newlines, blank lines, CRLF, bytes that are not UTF-8, an empty input', async () => {
  const text = EXPORT.toString('utf8');
  const at = EXPORT.indexOf(Buffer.from('é', 'utf8'));
  const notUtf8 = Buffer.from(EXPORT);
  notUtf8[at + 1] = 0xff;
  const extra = sealRecord({ v: 1, seq: N, ts: '2026-08-24T09:00:00.000Z', kind: 'outcome', prev: HEAD, detail: 'replacement \uFFFD char' });
  const cases: Array<[string, Buffer]> = [
    ['no newline after the last line', Buffer.from(text.slice(0, -1))],
    ['one blank line at the end', Buffer.from(`${text}\n`)],
    ['blank lines at the end', Buffer.from(`${text}\n\n\n`)],
    ['a blank line in the middle', Buffer.from(`${LINES.slice(0, 30).join('\n')}\n\n${LINES.slice(30).join('\n')}\n`)],
    ['CRLF line endings', Buffer.from(`${LINES.join('\r\n')}\r\n`)],
    ['an invalid UTF-8 byte', notUtf8],
    ['a genuine U+FFFD', Buffer.from(`${text}${recordLine(extra)}\n`, 'utf8')],
    ['empty', Buffer.alloc(0)],
    ['a single newline', Buffer.from('\n')],
    ['a single line without a newline', Buffer.from(LINES[0]!)],
  ];
  for (const [name, bytes] of cases) await assertSameVerdict(bytes, {}, name);
  assert.deepEqual(await parallelVerdict(Buffer.from(`${text}${recordLine(extra)}\n`), {}, CONFIGS[0]!), { ok: true, records: N + 1, head: extra.hash });
});

/** Lines as bytes, split on \n (the empty segment after a final \n is not a line). */
function splitLines(bytes: Buffer): Buffer[] {
  const lines: Buffer[] = [];
  for (let start = 0; start < bytes.length; ) {
    let end = bytes.indexOf(0x0a, start);
    if (end < 0) end = bytes.length;
    lines.push(bytes.subarray(start, end));
    start = end + 1;
  }
  return lines;
}
const joinLines = (lines: Buffer[]) => Buffer.concat(lines.flatMap((l) => [l, Buffer.from('\n')]));

test('random byte edits, line deletions, duplications and swaps: the same verdict as sequentially', async () => {
  const edit = fc.oneof(
    fc.record({ op: fc.constant('byte' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
    fc.record({ op: fc.constantFrom('delete' as const, 'duplicate' as const, 'swap' as const), line: fc.nat() }),
  );
  await fc.assert(
    fc.asyncProperty(fc.array(edit, { minLength: 1, maxLength: 3 }), fc.nat({ max: CONFIGS.length - 1 }), async (edits, configIndex) => {
      let lines = splitLines(EXPORT);
      for (const e of edits) {
        if (e.op === 'byte') {
          const bytes = joinLines(lines);
          bytes[e.at % bytes.length] = e.byte;
          lines = splitLines(bytes);
          continue;
        }
        const i = e.line % Math.max(1, lines.length - 1);
        if (e.op === 'delete') lines.splice(i, 1);
        else if (e.op === 'duplicate') lines.splice(i, 0, lines[i]!);
        else [lines[i], lines[i + 1]] = [lines[i + 1]!, lines[i]!];
      }
      const input = joinLines(lines);
      assert.deepEqual(await parallelVerdict(input, {}, CONFIGS[configIndex]!), await sequentialVerdict(input, {}));
    }),
    { numRuns: 150, seed: 20260824 },
  );
});

test('verifyInParallel starts and stops its own workers when given a count', async () => {
  assert.deepEqual(await verifyInParallel(memoryReader(EXPORT), {}, { workers: 1, blockBytes: 4096 }), { ok: true, records: N, head: HEAD });
  const gap = exportOf(LINES.filter((_, i) => i !== 33));
  const verdict = await verifyInParallel(memoryReader(gap), {}, { workers: 2, blockBytes: 4096 });
  assert.deepEqual(verdict.ok ? null : [verdict.code, verdict.seq], ['SEQ_GAP', 33]);
});

test('a read error: the same outcome as sequentially — the failure in what was read before it, else the error', async () => {
  const CHUNK = 500;
  const eio = () => Object.assign(new Error('EIO: i/o error, read'), { code: 'EIO', syscall: 'read' });
  /** `bytes` in CHUNK-byte pieces, then an I/O error once `failAt` bytes have been served. */
  const failingReader = (bytes: Buffer, failAt: number): ReadBytes => {
    let pos = 0;
    return async (into, offset, length) => {
      if (pos >= failAt) throw eio();
      const n = bytes.copy(into, offset, pos, pos + Math.min(length, CHUNK, failAt - pos));
      pos += n;
      return n;
    };
  };
  const failingStream = (bytes: Buffer, failAt: number) =>
    Readable.from(
      (function* () {
        for (let pos = 0; pos < failAt; pos += CHUNK) yield bytes.subarray(pos, Math.min(pos + CHUNK, failAt));
        throw eio();
      })(),
    );
  const outcome = (p: Promise<VerifyResult>) =>
    p.then(
      (r) => r,
      (err: NodeJS.ErrnoException) => err.code,
    );
  for (const missing of [3, 10, 20, 40, -1]) {
    const bytes = exportOf(LINES.filter((_, i) => i !== missing));
    for (const failAt of [700, 5000, 9000, 13_000, 20_000, 30_000]) {
      const expected = await outcome(verifyStream(failingStream(bytes, failAt), {}));
      for (const config of CONFIGS) {
        const actual = await outcome(verifyInParallel(failingReader(bytes, failAt), {}, { workers: config.workers, blockBytes: config.blockBytes }));
        assert.deepEqual(actual, expected, `line ${missing} missing, error at byte ${failAt} (${config.name})`);
      }
    }
  }
});
