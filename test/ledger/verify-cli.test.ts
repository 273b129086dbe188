import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { verifyStream } from '../../src/cli/verify.js';
import { recordLine, sealRecord } from '../../src/ledger/record.js';
import { ATTACKER_KEY, GOLDEN_KEY, ROTATED_KEY, buildRecords, clone, fixtureKeyAt, keysDoc, linesOf, parse, rechain } from './fixture.js';

const WRIT = fileURLToPath(new URL('../../../bin/writ', import.meta.url));
const RECORDS = buildRecords();
const LINES = linesOf(RECORDS);
const EXPORT = `${LINES.join('\n')}\n`;
const HEAD = RECORDS.at(-1)!.hash as string;

function run(args: string[], stdin?: string, env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [WRIT, ...args], { env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      const code = err ? ((err as { code?: number }).code ?? 1) : 0;
      resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr });
    });
    if (stdin !== undefined) child.stdin!.end(stdin);
    else child.stdin!.end();
  });
}

const dir = mkdtempSync(path.join(tmpdir(), 'writ-verify-cli-'));
const file = (name: string, text: string | Uint8Array) => {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
};
const exportFile = file('export.jsonl', EXPORT);
const keysFile = file('keys.json', JSON.stringify(keysDoc(GOLDEN_KEY, ROTATED_KEY)));
const checkpointFile = file('cp.json', JSON.stringify(RECORDS[40]));

test.after(() => rmSync(dir, { recursive: true, force: true }));

test('writ verify: an untouched export → exit 0 and the exact ok line', async () => {
  const r = await run(['verify', exportFile]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, `${JSON.stringify({ ok: true, records: 60, head: HEAD })}\n`);
  const withHeld = await run(['verify', exportFile, '--keys', keysFile, '--checkpoint', checkpointFile]);
  assert.equal(withHeld.code, 0, withHeld.stderr);
  assert.deepEqual(JSON.parse(withHeld.stdout), { ok: true, records: 60, head: HEAD });
  // Keys an auditor fetched before the rotation (seq 30): the rotated-in key is vouched for by the first.
  const preRotation = await run([
    'verify',
    exportFile,
    '--keys',
    file('pre-rotation-keys.json', JSON.stringify(keysDoc(GOLDEN_KEY))),
    '--checkpoint',
    checkpointFile,
  ]);
  assert.equal(preRotation.code, 0, preRotation.stderr);
  assert.deepEqual(JSON.parse(preRotation.stdout), { ok: true, records: 60, head: HEAD });
});

test('writ verify: tampered exports → exit 1 with seq and code', async () => {
  const edited = [...LINES];
  const r12 = parse(edited[12]!);
  r12.ts = '2030-01-01T00:00:00.000Z';
  edited[12] = linesOf([r12])[0]!;
  const cases: Array<[string[], { seq: number; code: string }]> = [
    [['verify', file('edited.jsonl', `${edited.join('\n')}\n`)], { seq: 12, code: 'HASH_MISMATCH' }],
    [['verify', file('gap.jsonl', `${LINES.filter((_, i) => i !== 7).join('\n')}\n`)], { seq: 7, code: 'SEQ_GAP' }],
    [['verify', file('short.jsonl', `${LINES.slice(0, 25).join('\n')}\n`), '--checkpoint', checkpointFile], { seq: 25, code: 'TRUNCATED' }],
    [['verify', exportFile, '--keys', file('onekey.json', JSON.stringify(keysDoc(ATTACKER_KEY)))], { seq: 0, code: 'UNKNOWN_KEY' }],
    // A blank line is MALFORMED where a line follows it (at the very end it is not a line).
    [['verify', file('blank.jsonl', `${EXPORT}\n${LINES[0]}\n`)], { seq: 60, code: 'MALFORMED' }],
  ];
  for (const [args, expect] of cases) {
    const r = await run(args);
    assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
    // Exactly the contract's object on stdout, members in its order; the reason is one stderr line.
    assert.equal(r.stdout, `${JSON.stringify({ ok: false, seq: expect.seq, code: expect.code })}\n`);
    assert.deepEqual(JSON.parse(r.stdout), { ok: false, ...expect });
    assert.match(r.stderr, new RegExp(`^writ verify: seq ${expect.seq}: ${expect.code}: [^\\n]+\\n$`));
  }
});

test('writ verify: every failure shape prints exactly {ok,seq,code} on stdout and one reason line on stderr', async () => {
  // The review's case: ts rewritten to "yesterday", re-hashed, re-chained and re-signed.
  const yesterday = linesOf(
    rechain(
      clone(RECORDS).map((r, i) => (i === 12 ? { ...r, ts: 'yesterday' } : r)),
      0,
      fixtureKeyAt,
    ),
  );
  const sizeX = [...LINES];
  const cp15 = parse(sizeX[15]!);
  cp15.size = 'x';
  sizeX[15] = linesOf([cp15])[0]!;
  const forgedHeld = { ...RECORDS[40]!, signature: Buffer.alloc(64, 7).toString('base64') };
  const cases: Array<[string, string[], { seq: number; code: string }, RegExp]> = [
    [
      'ts "yesterday", re-signed',
      ['verify', file('yesterday.jsonl', `${yesterday.join('\n')}\n`)],
      { seq: 12, code: 'MALFORMED' },
      /ts "yesterday" is not an RFC 3339 UTC date-time/,
    ],
    [
      'checkpoint size "x"',
      ['verify', file('size-x.jsonl', `${sizeX.join('\n')}\n`)],
      { seq: 15, code: 'MALFORMED' },
      /checkpoint size "x" is not a non-negative integer/,
    ],
    [
      'held checkpoint forged',
      ['verify', exportFile, '--checkpoint', file('forged-cp.json', JSON.stringify(forgedHeld))],
      { seq: 40, code: 'BAD_SIGNATURE' },
      /held checkpoint's signature/,
    ],
    [
      'held checkpoint beyond the export',
      ['verify', file('short2.jsonl', `${LINES.slice(0, 10).join('\n')}\n`), '--checkpoint', checkpointFile],
      { seq: 10, code: 'TRUNCATED' },
      /the export has 10 records/,
    ],
    [
      '--keys lacks the first key',
      ['verify', exportFile, '--keys', file('onekey2.json', JSON.stringify(keysDoc(ROTATED_KEY)))],
      { seq: 0, code: 'UNKNOWN_KEY' },
      /first key .* is not among the trusted keys/,
    ],
    [
      '--keys from another ledger',
      ['verify', exportFile, '--keys', file('otherkeys.json', JSON.stringify(keysDoc(ATTACKER_KEY)))],
      { seq: 0, code: 'UNKNOWN_KEY' },
      /not among the trusted keys/,
    ],
    [
      '--keys and an empty export',
      ['verify', file('empty.jsonl', ''), '--keys', keysFile],
      { seq: 0, code: 'UNKNOWN_KEY' },
      /no key record: none of the trusted keys/,
    ],
    [
      'bytes that are not UTF-8',
      ['verify', file('latin1.jsonl', Buffer.concat([Buffer.from(`${LINES.slice(0, 3).join('\n')}\n`), Buffer.from([0x7b, 0xff, 0x7d, 0x0a])]))],
      { seq: 3, code: 'MALFORMED' },
      /not valid UTF-8/,
    ],
  ];
  for (const [name, args, expect, why] of cases) {
    for (const workers of ['0', '2']) {
      const r = await run([...args, '--workers', workers]);
      assert.equal(r.code, 1, `${name}: ${r.stderr}`);
      assert.equal(r.stdout, `{"ok":false,"seq":${expect.seq},"code":"${expect.code}"}\n`, name);
      const lines = r.stderr.split('\n');
      assert.equal(lines.length, 2, `${name}: one stderr line: ${r.stderr}`);
      assert.ok(lines[0]!.startsWith(`writ verify: seq ${expect.seq}: ${expect.code}: `), `${name}: ${r.stderr}`);
      assert.match(lines[0]!, why, name);
    }
  }
  // Success stays exactly the contract's line, with nothing on stderr.
  const ok = await run(['verify', exportFile, '--keys', keysFile, '--checkpoint', checkpointFile]);
  assert.equal(ok.code, 0);
  assert.equal(ok.stdout, `{"ok":true,"records":60,"head":"${HEAD}"}\n`);
  assert.equal(ok.stderr, '');
  // An empty export is consistent (the empty tree) but proves nothing: the contract's line, and a warning.
  const empty = await run(['verify', file('empty-alone.jsonl', '')]);
  assert.equal(empty.code, 0);
  assert.equal(empty.stdout, `{"ok":true,"records":0,"head":"sha256:${'0'.repeat(64)}"}\n`);
  assert.match(empty.stderr, /^writ verify: the export is empty: nothing was verified/);
});

test('writ verify: reads stdin with -, and a last line without a newline counts', async () => {
  const r = await run(['verify', '-'], LINES.join('\n'));
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { ok: true, records: 60, head: HEAD });
});

test('writ verify: usage errors exit 2 without a verdict', async () => {
  for (const args of [
    ['verify'],
    ['verify', exportFile, exportFile],
    ['verify', exportFile, '--nope'],
    ['verify', path.join(dir, 'missing.jsonl')],
    ['verify', exportFile, '--keys', path.join(dir, 'missing.json')],
    ['verify', exportFile, '--keys', file('badkeys.json', '{"keys":[{"key_id":"x","public_key":"y"}]}')],
    ['verify', exportFile, '--checkpoint', file('notjson.json', '{')],
    ['verify', exportFile, '--checkpoint', file('notcp.json', '{"size":"3"}')],
  ]) {
    const r = await run(args);
    assert.equal(r.code, 2, `${args.join(' ')} → ${r.code} ${r.stdout}`);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /writ verify: /);
  }
  const help = await run(['verify', '--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /usage: writ verify EXPORT\.jsonl/);
});

test('writ verify with worker threads forced on small inputs prints exactly what the main-thread path prints', async () => {
  const edited = [...LINES];
  const r12 = parse(edited[12]!);
  r12.ts = '2030-01-01T00:00:00.000Z';
  edited[12] = linesOf([r12])[0]!;
  const inputs: string[][] = [
    ['verify', exportFile],
    ['verify', exportFile, '--keys', keysFile, '--checkpoint', checkpointFile],
    ['verify', file('edited-w.jsonl', `${edited.join('\n')}\n`)],
    ['verify', file('gap-w.jsonl', `${LINES.filter((_, i) => i !== 7).join('\n')}\n`)],
    ['verify', file('short-w.jsonl', `${LINES.slice(0, 25).join('\n')}\n`), '--checkpoint', checkpointFile],
    ['verify', exportFile, '--keys', file('onekey-w.json', JSON.stringify(keysDoc(GOLDEN_KEY)))],
    ['verify', file('blank-w.jsonl', `${EXPORT}\n`)],
    ['verify', file('nonewline-w.jsonl', LINES.join('\n'))],
  ];
  for (const args of inputs) {
    const mainThread = await run([...args, '--workers', '0']);
    assert.ok(mainThread.code === 0 || mainThread.code === 1, mainThread.stderr);
    for (const [extra, env] of [
      [['--workers', '3'], {}],
      [[], { WRIT_VERIFY_WORKERS: '2' }],
    ] as const) {
      const withWorkers = await run([...args, ...extra], undefined, env);
      assert.deepEqual(withWorkers, mainThread, `${args.join(' ')} ${extra.join(' ')} ${JSON.stringify(env)}`);
    }
  }
  const gapText = LINES.filter((_, i) => i !== 7).join('\n');
  for (const stdin of [LINES.join('\n'), gapText]) {
    assert.deepEqual(await run(['verify', '-', '--workers', '2'], stdin), await run(['verify', '-', '--workers', '0'], stdin));
  }
});

test('writ verify: a worker count that is not a whole number is a usage error', async () => {
  for (const [args, env] of [
    [['verify', exportFile, '--workers', 'two'], {}],
    [['verify', exportFile, '--workers', '-1'], {}],
    [['verify', exportFile, '--workers', '1.5'], {}],
    [['verify', exportFile], { WRIT_VERIFY_WORKERS: 'many' }],
  ] as const) {
    const r = await run([...args], undefined, env);
    assert.equal(r.code, 2, `${args.join(' ')} ${JSON.stringify(env)} → ${r.code} ${r.stdout}`);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /writ verify: .*(--workers|WRIT_VERIFY_WORKERS)/);
  }
});

/** A stream that delivers `bytes` in pieces of `size` bytes, so lines straddle chunks. */
const chunked = (bytes: Buffer, size: number) =>
  Readable.from(
    (function* () {
      for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
    })(),
  );

test('verifyStream: lines split across chunks of any size give the same verdicts', async () => {
  const bytes = Buffer.from(EXPORT, 'utf8');
  for (const size of [1, 7, 64, 1000, bytes.length]) {
    assert.deepEqual(await verifyStream(chunked(bytes, size), {}), { ok: true, records: 60, head: HEAD }, `chunk ${size}`);
  }
  const gap = Buffer.from(`${LINES.filter((_, i) => i !== 33).join('\n')}\n`);
  for (const size of [3, 500]) {
    const r = await verifyStream(chunked(gap, size), {});
    assert.deepEqual(r.ok ? null : [r.code, r.seq], ['SEQ_GAP', 33]);
  }
});

test('verifyStream: empty lines at the very end are not lines; one with a line after it is MALFORMED', async () => {
  for (const tail of ['\n', '\n\n\n']) {
    const bytes = Buffer.from(EXPORT + tail, 'utf8');
    for (const size of [1, 5, bytes.length]) {
      assert.deepEqual(await verifyStream(chunked(bytes, size), {}), { ok: true, records: 60, head: HEAD }, `tail ${JSON.stringify(tail)}, chunk ${size}`);
    }
  }
  const inside = Buffer.from(`${LINES.slice(0, 5).join('\n')}\n\n\n${LINES.slice(5).join('\n')}\n`);
  for (const size of [1, 9, inside.length]) {
    const r = await verifyStream(chunked(inside, size), {});
    assert.deepEqual(r.ok ? null : [r.code, r.seq], ['MALFORMED', 5], `chunk ${size}`);
  }
});

test('verifyStream: bytes that are not UTF-8 are MALFORMED, even where they would decode to text', async () => {
  const lineWithUnicode = LINES.findIndex((l) => l.includes('é'));
  assert.ok(lineWithUnicode > 0);
  const bytes = Buffer.from(EXPORT, 'utf8');
  const at = bytes.indexOf(Buffer.from('é', 'utf8'));
  const broken = Buffer.from(bytes);
  broken[at + 1] = 0xff; // é is C3 A9; C3 FF is invalid
  const r = await verifyStream(chunked(broken, 4096), {});
  assert.deepEqual(r.ok ? null : [r.code, r.seq], ['MALFORMED', lineWithUnicode]);
  // A genuine U+FFFD (encoded EF BF BD) in a record is fine.
  const extra = sealRecord({ v: 1, seq: 60, ts: '2026-08-24T09:00:00.000Z', kind: 'outcome', prev: HEAD, detail: 'replacement \uFFFD char' });
  const withFffd = Buffer.from(`${EXPORT}${recordLine(extra)}\n`, 'utf8');
  assert.deepEqual(await verifyStream(chunked(withFffd, 4096), {}), { ok: true, records: 61, head: extra.hash });
});
