// `writ bind` as a command: flags, usage, and bad input that never crashes. 10,000 random byte strings
// go through the command's core in-process (bindOutput: decode + admit + print), and a handful through
// the real `bin/writ bind` process.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bindOutput } from '../../src/cli/bind.js';
import { ADMISSION_CODES, loadVectors, mapLimit, prng, runWrit } from './helpers.js';

const JSONISH = Buffer.from('{}[]",:0123456789-+.eE \\u\\ud800truefalsenull\n\t"a"');
const seeds = loadVectors().map((v) => Buffer.from(v.input, 'utf8')).filter((b) => b.length < 2000);

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
  for (const args of [['bind'], ['bind', '--tool', 't'], ['bind', '--server', 's'], ['bind', '--server', 's', '--tool', 't', '--bogus'], ['bind', '--server', 's', '--tool', 't', 'a', 'b']]) {
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
