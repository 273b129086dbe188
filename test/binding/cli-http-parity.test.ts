// `writ bind` binds exactly what POST /v1/decisions admits (docs/protocol.md §3: equal binding ⇒ equal
// tool input): the same raw argument bytes, server and tool, once through the command's core and once
// spliced into a decision request sent to a real sidecar, give the same binding or the same refusal code.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { bindOutput } from '../../src/cli/bind.js';
import { call, offboardingBody, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(async () => {
  await s?.stop();
});

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
let executions = 0;

/** A decision request whose action.arguments is exactly `args` (raw bytes), with `prefix` before the body. */
function decisionBytes(server: string, tool: string, args: Buffer, prefix = Buffer.alloc(0)): Buffer {
  const body = offboardingBody({ execution_id: `PARITY-${process.pid}-${++executions}` });
  const marker = '"__ARGS__"';
  const text = JSON.stringify({ ...body, action: { server, tool, arguments: '__ARGS__' } });
  const at = text.indexOf(marker);
  return Buffer.concat([prefix, Buffer.from(text.slice(0, at)), args, Buffer.from(text.slice(at + marker.length))]);
}

type Verdict = { binding: string } | { code: string };

async function httpVerdict(body: Buffer): Promise<Verdict> {
  const r = await call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, rawBody: body });
  if (r.status === 200) return { binding: r.body.binding };
  assert.equal(r.status, 400, r.text);
  return { code: r.body.error.code };
}

function cliVerdict(input: Buffer, server: string, tool: string): Verdict {
  const out = bindOutput(input, server, tool);
  const printed = JSON.parse(out.stdout);
  return out.exitCode === 0 ? { binding: printed.binding } : { code: printed.error.code };
}

const raw = (...parts: Array<string | number[]>) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));

const ARGUMENTS: Array<[string, Buffer]> = [
  ['plain', raw('{"employee_id":"7721"}')],
  ['non-ASCII text', raw('{"name":"José","emoji":"😀"}')],
  ['a genuine U+FFFD', raw('{"a":"', [0xef, 0xbf, 0xbd], '"}')],
  ['0xFF in a string', raw('{"a":"', [0xff], '"}')],
  ['an overlong "/"', raw('{"a":"', [0xc0, 0xaf], '"}')],
  ['a UTF-8-encoded surrogate', raw('{"a":"', [0xed, 0xa0, 0x80], '"}')],
  ['a lone continuation byte', raw('{"a":"', [0x80], '"}')],
  ['a BOM inside a string', raw('{"a":"\ufeff"}')],
  ['duplicate key', raw('{"a":1,"a":1}')],
  ['lossy number', raw('{"a":1.0}')],
  ['unsafe integer', raw('{"a":9007199254740993}')],
  ['not an object', raw('[1]')],
];

test('the same argument bytes: the CLI binds what HTTP binds and refuses what HTTP refuses, with its code', async () => {
  for (const [name, args] of ARGUMENTS) {
    const cli = cliVerdict(args, 'idp', 'disable_sign_in');
    assert.deepEqual(await httpVerdict(decisionBytes('idp', 'disable_sign_in', args)), cli, name);
  }
});

test('a leading BOM: dropped by both (the body for HTTP, the input for the CLI); a second one refused by both', async () => {
  const args = raw('{"employee_id":"7721"}');
  const once = cliVerdict(Buffer.concat([BOM, args]), 'idp', 'disable_sign_in');
  assert.deepEqual(once, cliVerdict(args, 'idp', 'disable_sign_in'));
  assert.deepEqual(await httpVerdict(decisionBytes('idp', 'disable_sign_in', args, BOM)), once);
  const twice = cliVerdict(Buffer.concat([BOM, BOM, args]), 'idp', 'disable_sign_in');
  assert.deepEqual(twice, { code: 'INVALID_JSON' });
  assert.deepEqual(await httpVerdict(decisionBytes('idp', 'disable_sign_in', args, Buffer.concat([BOM, BOM]))), twice);
});

test('server and tool names: the CLI refuses exactly the ones HTTP refuses (INVALID_REQUEST)', async () => {
  const args = raw('{"employee_id":"7721"}');
  for (const [server, tool] of [
    ['', 't'],
    ['a/b', 't'],
    ['x'.repeat(129), 't'],
    ['😀'.repeat(65), 't'],
    ['s', ''],
    ['s', 'x'.repeat(129)],
    ['x'.repeat(128), 't'],
    ['😀'.repeat(64), 't'],
    ['s', 'a/b'],
    ['s', 'x'.repeat(128)],
    ['a b', 't'],
    ['a\nb', 't'],
  ] as const) {
    const cli = cliVerdict(args, server, tool);
    assert.deepEqual(await httpVerdict(decisionBytes(server, tool, args)), cli, JSON.stringify([server, tool]));
  }
});

test('the arguments a decision answers (for the PEP to forward) read as the canonical text, member for member', async () => {
  // Members out of JCS order, nested, with names that sort by UTF-16 code units (astral after U+FF61)
  // and a number written unusually; no integer-like names (JavaScript orders those itself).
  const args = raw('{ "b" : 2, "a" : [ true, null, "x", { "z": 0.50000, "y": -0 } ], "😀": 1, "｡": 2, "A": {"d":1,"c":2} }');
  const cli = JSON.parse(bindOutput(args, 'idp', 'disable_sign_in').stdout) as { binding: string; canonical: string };
  const r = await call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, rawBody: decisionBytes('idp', 'disable_sign_in', args) });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.binding, cli.binding);
  assert.equal(JSON.stringify(r.body.arguments), cli.canonical);
  assert.ok(r.text.includes(`"arguments":${cli.canonical}`), 'the answer carries the canonical text itself');
});
