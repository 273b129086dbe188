// `writ bind` as a command: flags, usage, and bad input that never crashes. 10,000 random byte strings
// go through the command's core in-process (bindOutput: decode + admit + print), and a handful through
// the real `bin/writ bind` process.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bindOutput } from '../../src/cli/bind.js';
import { ADMISSION_CODES, loadVectors, mapLimit, prng, runWrit } from './helpers.js';

const JSONISH = Buffer.from('{}[]",:0123456789-+.eE \\u\\ud800truefalsenull\n\t"a"');
const seeds = loadVectors()
  .map((v) => Buffer.from(v.input, 'utf8'))
  .filter((b) => b.length < 2000);

/** Random bytes of three kinds: uniform, JSON-alphabet, and mutated vectors (flips/inserts/deletes). */
function randomBytes(r: () => number): Uint8Array {
  const kind = Math.floor(r() * 3);
  if (kind === 0) {
    const out = new Uint8Array(Math.floor(r() * 96));
    for (let i = 0; i < out.length; i++) out[i] = Math.floor(r() * 256);
    return out;
  }
  if (kind === 1) {
    const out = new Uint8Array(Math.floor(r() * 64));
    for (let i = 0; i < out.length; i++) out[i] = JSONISH[Math.floor(r() * JSONISH.length)]!;
    return out;
  }
  const bytes = [...seeds[Math.floor(r() * seeds.length)]!];
  const edits = 1 + Math.floor(r() * 3);
  for (let e = 0; e < edits; e++) {
    const at = Math.floor(r() * (bytes.length + 1));
    const op = Math.floor(r() * 3);
    const byte = r() < 0.5 ? Math.floor(r() * 256) : JSONISH[Math.floor(r() * JSONISH.length)]!;
    if (op === 0) bytes.splice(at, 0, byte);
    else if (op === 1) bytes.splice(at, 1);
    else bytes[at] = byte;
  }
  return Uint8Array.from(bytes);
}

function assertOneLine(stdout: string, exitCode: number | null): void {
  assert.ok(stdout.endsWith('\n') && stdout.indexOf('\n') === stdout.length - 1, 'exactly one line');
  const printed = JSON.parse(stdout) as Record<string, unknown>;
  if (exitCode === 0) {
    assert.deepEqual(Object.keys(printed), ['binding', 'canonical', 'cedar']);
    assert.match(printed.binding as string, /^writ-bind\/1:sha256:[0-9a-f]{64}$/);
  } else {
    assert.equal(exitCode, 2);
    const error = printed.error as { code: string; message: string; path: string };
    assert.ok(ADMISSION_CODES.has(error.code), error.code);
    assert.equal(typeof error.message, 'string');
    assert.equal(typeof error.path, 'string');
  }
}

test('10,000 random byte strings through the command core: exit 0 or 2, one JSON line, never a throw', () => {
  const r = prng(20260824);
  const seen = { ok: 0, refused: 0 };
  for (let i = 0; i < 10_000; i++) {
    const input = randomBytes(r);
    const out = bindOutput(input, 'fuzz', 'tool');
    assertOneLine(out.stdout, out.exitCode);
    if (out.exitCode === 0) seen.ok++;
    else seen.refused++;
  }
  assert.ok(seen.ok > 100 && seen.refused > 100, `both outcomes exercised: ${JSON.stringify(seen)}`);
});

test('random bytes through the real bin/writ bind: exit 0 or 2, never a stack trace', async () => {
  const r = prng(7);
  const inputs: Uint8Array[] = [
    Buffer.from([0xff, 0xfe, 0x7b, 0x7d]),
    Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]), // invalid UTF-8 inside a string
    Buffer.from('\ufeff{"a":1}', 'utf8'),
    Buffer.from('['.repeat(200_000)),
    Buffer.alloc(0),
  ];
  while (inputs.length < 16) inputs.push(randomBytes(r));
  const results = await mapLimit(inputs, 4, (input) => runWrit(['bind', '--server', 's', '--tool', 't'], input));
  for (const res of results) {
    assert.ok(res.code === 0 || res.code === 2, `exit ${res.code}`);
    assert.equal(res.stderr, '');
    assertOneLine(res.stdout, res.code);
  }
  assert.equal(JSON.parse(results[3]!.stdout).error.code, 'BINDING_TOO_DEEP');
  assert.equal(JSON.parse(results[2]!.stdout).canonical, '{"a":1}', 'a UTF-8 BOM is ignored');
});

test('--help prints usage on stdout, exit 0', async () => {
  const res = await runWrit(['bind', '--help']);
  assert.equal(res.code, 0);
  assert.match(res.stdout, /^usage: writ bind --server S --tool T \[FILE\|-\]/);
});

test('bad flags: usage on stderr, nothing on stdout, exit 2', async () => {
  for (const args of [
    ['bind'],
    ['bind', '--tool', 't'],
    ['bind', '--server', 's'],
    ['bind', '--server', 's', '--tool', 't', '--bogus'],
    ['bind', '--server', 's', '--tool', 't', 'a', 'b'],
  ]) {
    const res = await runWrit(args, '{}');
    assert.equal(res.code, 2, args.join(' '));
    assert.equal(res.stdout, '');
    assert.match(res.stderr, /usage: writ bind/);
    assert.doesNotMatch(res.stderr, /\n\s+at /);
  }
});

test('an unreadable file is a one-line message on stderr, exit 2', async () => {
  const res = await runWrit(['bind', '--server', 's', '--tool', 't', '/nonexistent/writ-bind-args.json']);
  assert.equal(res.code, 2);
  assert.equal(res.stdout, '');
  assert.match(res.stderr, /^writ bind: cannot read .*ENOENT\n$/);
});

test('the printed cedar value is the Cedar view', () => {
  const out = bindOutput(Buffer.from('{"q":12,"r":0.125,"n":null,"s":[null,"x"]}'), 'pricing', 'quote');
  assert.equal(out.exitCode, 0);
  assert.deepEqual(JSON.parse(out.stdout).cedar, { q: 12, r: { __extn: { fn: 'decimal', arg: '0.125' } }, s: ['x'] });
});

// ── Input decoding as the HTTP API decodes a body (src/http/app.ts): strict UTF-8, one BOM dropped ──

/** Bytes of `{"a":"<middle>"}` with raw bytes in the string. */
const withRawBytes = (...middle: number[]) => Buffer.concat([Buffer.from('{"a":"'), Buffer.from(middle), Buffer.from('"}')]);

const NOT_UTF8: Array<[string, Buffer]> = [
  ['0xFF in a string', withRawBytes(0xff)],
  ['C3 28 (a lead byte without its continuation)', withRawBytes(0xc3, 0x28)],
  ['a lone continuation byte', withRawBytes(0x80)],
  ['an overlong "/" (C0 AF)', withRawBytes(0xc0, 0xaf)],
  ['a UTF-8-encoded surrogate (ED A0 80, CESU-8)', withRawBytes(0xed, 0xa0, 0x80)],
  ['a code point beyond U+10FFFF (F4 90 80 80)', withRawBytes(0xf4, 0x90, 0x80, 0x80)],
  ['a sequence cut at the end of the input', Buffer.from([0x7b, 0x7d, 0xe2, 0x82])],
  ['0xFF 0xFE (a UTF-16 BOM)', Buffer.from([0xff, 0xfe, 0x7b, 0x7d])],
];
const NOT_UTF8_LINE = `${JSON.stringify({ error: { code: 'INVALID_JSON', message: 'the input is not valid UTF-8', path: '' } })}\n`;

test('bytes that are not UTF-8 are refused INVALID_JSON (never bound as U+FFFD), in-process and through bin/writ', async () => {
  for (const [name, bytes] of NOT_UTF8) {
    assert.deepEqual(bindOutput(bytes, 's', 't'), { exitCode: 2, stdout: NOT_UTF8_LINE }, name);
  }
  const results = await mapLimit(NOT_UTF8, 4, ([, bytes]) => runWrit(['bind', '--server', 's', '--tool', 't'], bytes));
  for (const [i, res] of results.entries()) {
    assert.deepEqual(res, { code: 2, stdout: NOT_UTF8_LINE, stderr: '' }, NOT_UTF8[i]![0]);
  }
  // A genuine U+FFFD (EF BF BD) is text like any other, and is bound.
  const fffd = bindOutput(withRawBytes(0xef, 0xbf, 0xbd), 's', 't');
  assert.equal(fffd.exitCode, 0);
  assert.equal(JSON.parse(fffd.stdout).canonical, '{"a":"\ufffd"}');
});

test('a BOM is treated as POST /v1/decisions treats one: one leading BOM is dropped, any other is INVALID_JSON', async () => {
  const plain = bindOutput(Buffer.from('{"a":1}'), 's', 't');
  assert.equal(plain.exitCode, 0);
  const bom = Buffer.from([0xef, 0xbb, 0xbf]);
  assert.deepEqual(bindOutput(Buffer.concat([bom, Buffer.from('{"a":1}')]), 's', 't'), plain, 'one leading BOM');
  assert.deepEqual(bindOutput('\ufeff{"a":1}', 's', 't'), plain, 'text given directly: the same rule');
  for (const [name, input] of [
    ['two BOMs', Buffer.concat([bom, bom, Buffer.from('{"a":1}')])],
    ['whitespace, then a BOM', Buffer.concat([Buffer.from(' '), bom, Buffer.from('{"a":1}')])],
    ['a BOM after the value', Buffer.concat([Buffer.from('{"a":1}'), bom])],
    ['text with two BOMs', '\ufeff\ufeff{"a":1}'],
  ] as const) {
    const out = bindOutput(input, 's', 't');
    assert.equal(out.exitCode, 2, name);
    assert.equal(JSON.parse(out.stdout).error.code, 'INVALID_JSON', name);
  }
  // A BOM inside a string is a character like any other.
  assert.equal(JSON.parse(bindOutput(Buffer.from('{"a":"\ufeff"}'), 's', 't').stdout).canonical, '{"a":"\ufeff"}');
});

// ── --server and --tool: the names a decision request's action.server / action.tool may hold ──

const NAME_CASES: Array<[string, string, string, 'ok' | RegExp]> = [
  ['empty server', '', 't', /^--server must not be empty/],
  ['server with "/"', 'a/b', 't', /^--server must not contain "\/"/],
  ['server of 129 characters', 'x'.repeat(129), 't', /^--server must be at most 128 characters/],
  ['server of 65 astral characters (130 UTF-16 units)', '😀'.repeat(65), 't', /^--server must be at most 128 characters/],
  ['empty tool', 's', '', /^--tool must not be empty/],
  ['tool of 129 characters', 's', 'x'.repeat(129), /^--tool must be at most 128 characters/],
  ['server of 128 characters', 'x'.repeat(128), 't', 'ok'],
  ['server of 64 astral characters (128 UTF-16 units)', '😀'.repeat(64), 't', 'ok'],
  ['tool with "/" (allowed for tools)', 's', 'a/b', 'ok'],
  ['tool of 128 characters', 's', 'x'.repeat(128), 'ok'],
  ['server with a space and non-ASCII', 'sér veur', 'outil/ü', 'ok'],
];

test('--server/--tool that POST /v1/decisions refuses are INVALID_REQUEST, exit 2, one line', () => {
  for (const [name, server, tool, expect] of NAME_CASES) {
    const out = bindOutput(Buffer.from('{"a":1}'), server, tool);
    if (expect === 'ok') {
      assert.equal(out.exitCode, 0, `${name}: ${out.stdout}`);
      continue;
    }
    assert.equal(out.exitCode, 2, name);
    const printed = JSON.parse(out.stdout) as { error: { code: string; message: string; path: string } };
    assert.deepEqual(Object.keys(printed.error), ['code', 'message', 'path']);
    assert.equal(printed.error.code, 'INVALID_REQUEST', name);
    assert.equal(printed.error.path, '');
    assert.match(printed.error.message, expect, name);
  }
  // The names are judged before the input: a bad name with bad input is still about the name.
  assert.equal(JSON.parse(bindOutput(Buffer.from([0xff]), '', 't').stdout).error.code, 'INVALID_REQUEST');
});

test('bin/writ bind --server "" / a/b: the error line on stdout, nothing on stderr, exit 2', async () => {
  for (const [server, tool] of [
    ['', 't'],
    ['a/b', 't'],
    ['s', ''],
  ]) {
    const res = await runWrit(['bind', '--server', server!, '--tool', tool!], '{"a":1}');
    assert.equal(res.code, 2, `${server} ${tool}`);
    assert.equal(res.stderr, '');
    assertOneLine(res.stdout, res.code);
    assert.equal(JSON.parse(res.stdout).error.code, 'INVALID_REQUEST');
  }
  const ok = await runWrit(['bind', '--server', 's', '--tool', 'a/b'], '{"a":1}');
  assert.equal(ok.code, 0, ok.stdout);
});
