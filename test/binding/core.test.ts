// Unit tests of parsing, admission and the views: paths, precedence, prototype safety, limits.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import {
  type LosslessNumber,
  MAX_ARGUMENT_DEPTH,
  admitArgumentsText,
  admitNumberToken,
  admitValue,
  bindCall,
  bindingOf,
  canonicalText,
  envelopeDigest,
  isLosslessObject,
  memberOf,
  parseLossless,
  toPlain,
  type Json,
} from '../../src/binding/index.js';
import { WritError } from '../../src/errors.js';
import { jcs } from '../../src/util/canonical.js';

function refusal(fn: () => unknown): { code: string; path: string | undefined } {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof WritError, `not a WritError: ${String(err)}`);
    return { code: err.code, path: err.path };
  }
  assert.fail('expected a refusal');
}
const admitText = (text: string) => admitArgumentsText(text, 's', 't');

test('numbers keep their source text through parsing', () => {
  const v = parseLossless('{"a":1.50,"b":-0,"c":2.50e1}') as Record<string, LosslessNumber>;
  assert.deepEqual([v.a!.text, v.b!.text, v.c!.text], ['1.50', '-0', '2.50e1']);
});

test('error paths are JSON pointers of the offending member or element', () => {
  assert.deepEqual(
    refusal(() => admitText('{"a":[1,{"b":1.0}]}')),
    { code: 'BINDING_LOSSY_NUMBER', path: '/a/1/b' },
  );
  assert.deepEqual(
    refusal(() => admitText('{"a/b":{"~c":1e-7}}')),
    { code: 'BINDING_UNREPRESENTABLE', path: '/a~1b/~0c' },
  );
  assert.deepEqual(
    refusal(() => admitText('{"x":{"k":1,"k":1}}')),
    { code: 'BINDING_DUPLICATE_KEY', path: '/x/k' },
  );
  assert.deepEqual(
    refusal(() => admitText('{"x":["\\udc00"]}')),
    { code: 'BINDING_LONE_SURROGATE', path: '/x/0' },
  );
  assert.deepEqual(
    refusal(() => admitText('{"ok":1,"k\\ud800":1}')),
    { code: 'BINDING_LONE_SURROGATE', path: '/k\ud800' },
  );
  assert.deepEqual(
    refusal(() => admitText('{"n":[0,9007199254740992]}')),
    { code: 'BINDING_UNSAFE_INTEGER', path: '/n/1' },
  );
  assert.deepEqual(
    refusal(() => admitText('[1]')),
    { code: 'INVALID_REQUEST', path: '' },
  );
  assert.equal(refusal(() => admitText('{"a":[1,}')).code, 'INVALID_JSON');
});

test('basePath prefixes admission paths (the HTTP body case)', () => {
  const body = parseLossless('{"action":{"arguments":{"x":[1.0]}}}') as { action: { arguments: LosslessNumber } };
  assert.deepEqual(
    refusal(() => admitValue(body.action.arguments, '/action/arguments')),
    { code: 'BINDING_LOSSY_NUMBER', path: '/action/arguments/x/0' },
  );
});

test('depth: 64 admitted, 65 refused at the pointer of the 65th container', () => {
  const ok = `{"a":${'['.repeat(MAX_ARGUMENT_DEPTH - 1)}${']'.repeat(MAX_ARGUMENT_DEPTH - 1)}}`;
  assert.equal(admitText(ok).canonical, ok);
  const deep = `{"a":${'['.repeat(MAX_ARGUMENT_DEPTH)}${']'.repeat(MAX_ARGUMENT_DEPTH)}}`;
  assert.deepEqual(
    refusal(() => admitText(deep)),
    { code: 'BINDING_TOO_DEEP', path: `/a${'/0'.repeat(MAX_ARGUMENT_DEPTH - 1)}` },
  );
});

test('pathological nesting is a refusal, never a RangeError', () => {
  for (const text of ['['.repeat(1_000_000), '{"a":'.repeat(200_000), `${'[{"a":'.repeat(300_000)}1`]) {
    assert.equal(refusal(() => parseLossless(text)).code, 'BINDING_TOO_DEEP');
    assert.equal(refusal(() => admitText(text)).code, 'BINDING_TOO_DEEP');
  }
  // The parser stops far past the §3 limit; its refusal still names the limit a caller must keep to.
  assert.throws(
    () => admitText(`${'{"a":'.repeat(600)}1${'}'.repeat(600)}`),
    (e: Error) => e.message.startsWith(`nesting deeper than ${MAX_ARGUMENT_DEPTH} levels`),
  );
});

test('precedence: a syntax error anywhere wins; otherwise the first duplicate/surrogate in document order', () => {
  assert.equal(refusal(() => admitText('{"a":1,"a":1')).code, 'INVALID_JSON');
  assert.equal(refusal(() => admitText('{"a":"\\ud800","b":}')).code, 'INVALID_JSON');
  assert.deepEqual(
    refusal(() => admitText('{"a":"\\ud800","b":1,"b":2}')),
    { code: 'BINDING_LONE_SURROGATE', path: '/a' },
  );
  assert.deepEqual(
    refusal(() => admitText('{"b":1,"b":"\\ud800"}')),
    { code: 'BINDING_DUPLICATE_KEY', path: '/b' },
  );
  // Parse-time refusals come before number judgements (those are made on the parsed value).
  assert.equal(refusal(() => admitText('{"a":1.0,"b":1,"b":1}')).code, 'BINDING_DUPLICATE_KEY');
});

test('literal (unescaped) lone surrogates are refused like escaped ones; literal pairs are fine', () => {
  assert.equal(refusal(() => admitText('{"t":"\ud800"}')).code, 'BINDING_LONE_SURROGATE');
  assert.equal(refusal(() => admitText('{"\udfff":1}')).code, 'BINDING_LONE_SURROGATE');
  assert.equal(admitText('{"t":"\ud83d\ude00"}').canonical, '{"t":"😀"}');
  // An escaped high surrogate followed by a literal low one decodes to a well-formed pair.
  assert.equal(admitText('{"t":"\\ud83d\ude00"}').canonical, '{"t":"😀"}');
});

test('__proto__ and constructor keys are plain own data, never prototypes', () => {
  const bound = admitText('{"__proto__":{"isAdmin":true},"constructor":{"prototype":{"x":1}}}');
  const args = bound.arguments as Record<string, Json>;
  assert.equal(Object.getPrototypeOf(args), Object.prototype);
  assert.ok(Object.hasOwn(args, '__proto__'));
  assert.deepEqual(Object.keys(args), ['__proto__', 'constructor']);
  assert.equal(({} as Record<string, unknown>).isAdmin, undefined, 'Object.prototype untouched');
  assert.equal(bound.canonical, '{"__proto__":{"isAdmin":true},"constructor":{"prototype":{"x":1}}}');
  assert.equal(JSON.stringify(bound.cedar), '{"__proto__":{"isAdmin":true},"constructor":{"prototype":{"x":1}}}');
  const plain = toPlain(parseLossless('{"__proto__":{"a":1}}')) as Record<string, Json>;
  assert.ok(Object.hasOwn(plain, '__proto__'));
  assert.equal(JSON.stringify(plain), '{"__proto__":{"a":1}}');
});

test('records that Cedar would read as escapes are refused (no entity forgery through arguments)', () => {
  for (const key of ['__entity', '__extn', '__expr']) {
    assert.deepEqual(
      refusal(() => admitText(`{"x":{"${key}":{"type":"User","id":"admin"}}}`)),
      { code: 'BINDING_UNREPRESENTABLE', path: `/x/${key}` },
    );
  }
  assert.equal(admitText('{"entity":{"type":"User","id":"admin"}}').canonical, '{"entity":{"id":"admin","type":"User"}}');
});

test('number rule edge cases judged by the IEEE double', () => {
  const code = (t: string) => {
    const r = admitNumberToken(t);
    return typeof r === 'number' ? r : r.code;
  };
  assert.equal(code('-0'), 0);
  assert.ok(Object.is(code('-0'), 0), '-0 becomes +0');
  assert.equal(code(`1${'0'.repeat(400)}`), 'BINDING_UNSAFE_INTEGER');
  assert.equal(code('1e400'), 'BINDING_UNREPRESENTABLE');
  assert.equal(code('-1e400'), 'BINDING_UNREPRESENTABLE');
  assert.equal(code('1e-400'), 'BINDING_LOSSY_NUMBER'); // its double is 0
  assert.equal(code('1e21'), 'BINDING_LOSSY_NUMBER');
  assert.equal(code('0.000001'), 'BINDING_UNREPRESENTABLE');
  assert.equal(code('0.00010'), 0.0001);
  // 922337203685477.5807 (the Cedar maximum) has no double; its nearest double prints as …477.6.
  assert.equal(code('922337203685477.5807'), 'BINDING_UNREPRESENTABLE');
  assert.equal(code('922337203685477.5'), 922337203685477.5);
  assert.equal(code('-922337203685477.5'), -922337203685477.5);
  assert.equal(code('99999999999.9999'), 99999999999.9999);
});

test('Cedar view: Long, decimal with a dot, records, sets, nulls dropped', () => {
  const bound = admitText('{"i":-3,"d":0.50,"e":12.5e0,"n":null,"s":[null,1,"x",[null]],"r":{"z":null,"t":true}}');
  assert.deepEqual(bound.cedar, {
    i: -3,
    d: { __extn: { fn: 'decimal', arg: '0.5' } },
    e: { __extn: { fn: 'decimal', arg: '12.5' } },
    s: [1, 'x', []],
    r: { t: true },
  });
  assert.equal(bound.canonical, '{"d":0.5,"e":12.5,"i":-3,"n":null,"r":{"t":true,"z":null},"s":[null,1,"x",[null]]}');
});

test('binding recipe: domain line + JCS({arguments, server, tool}); one value, three views', () => {
  const args = admitText('{"b":[1,2.5],"a":"x"}').arguments;
  const expected = `writ-bind/1:sha256:${createHash('sha256')
    .update(`writ-bind/1\n${jcs({ arguments: args, server: 'srv "q"', tool: 'tööl' })}`)
    .digest('hex')}`;
  assert.equal(bindingOf('srv "q"', 'tööl', args), expected);
  const bound = bindCall('srv "q"', 'tööl', args);
  assert.equal(bound.binding, expected);
  assert.equal(bound.canonical, canonicalText(args));
  assert.deepEqual(JSON.parse(bound.canonical), args, 'the canonical text is the forwarded value');
  assert.notEqual(bindingOf('srv', 'tool', args), bindingOf('srv', 'tool2', args));
  assert.notEqual(bindingOf('a', 'b/c', args), bindingOf('a/b', 'c', args));
});

test('envelope digest recipe', () => {
  const env = { task_id: 'T', purpose: 'p' };
  assert.equal(envelopeDigest(env), `sha256:${createHash('sha256').update('writ-envelope/1\n{"purpose":"p","task_id":"T"}').digest('hex')}`);
});

test('toPlain converts numbers without §3 refusal', () => {
  assert.deepEqual(toPlain(parseLossless('{"a":1.0,"b":[1e400,-0,9007199254740993]}')), { a: 1, b: [Infinity, 0, 9007199254740992] });
});

test('whole-body parse: strict JSON grammar', () => {
  for (const bad of [
    '',
    ' ',
    '{',
    '}',
    '[1,]',
    '{"a" 1}',
    '{"a":1 "b":2}',
    'tru',
    'nul',
    '-',
    '1.',
    '1e',
    '1e+',
    '+1',
    '0x1',
    '"\\u12"',
    '"\\u12G4"',
    '"a',
    '\u00a0{}',
    '{}\u0000',
    '/*c*/{}',
  ]) {
    assert.equal(refusal(() => parseLossless(bad)).code, 'INVALID_JSON', JSON.stringify(bad));
  }
  assert.deepEqual(toPlain(parseLossless(' [true,false,null,"",0,-1.5e-3] ')), [true, false, null, '', 0, -0.0015]);
});

test('memberOf reads own members only, whatever the key', () => {
  const body = parseLossless('{"action":{"arguments":{"a":1}},"constructor":{"name":1},"n":2}');
  assert.ok(memberOf(memberOf(body, 'action'), 'arguments'));
  assert.ok(memberOf(body, 'constructor'));
  assert.equal(memberOf(body, 'toString'), undefined);
  assert.equal(memberOf(body, 'hasOwnProperty'), undefined);
  assert.equal(memberOf(memberOf(body, 'n'), 'text'), undefined, 'a number token has no members');
  assert.equal(memberOf(parseLossless('[1]'), '0'), undefined, 'an array has no members');
  assert.ok(isLosslessObject(memberOf(body, 'constructor')));
});

test('admitted objects hold their members in JCS order; the first refusal is still the first in the document', () => {
  const admitted = admitValue(parseLossless('{"b":1,"a":{"d":true,"c":"x"},"é":0,"Z":null}'));
  assert.equal(JSON.stringify(admitted), '{"Z":null,"a":{"c":"x","d":true},"b":1,"é":0}');
  const doc = parseLossless('{"b":1.0,"a":1e-7}');
  assert.deepEqual(
    refusal(() => admitValue(doc, '/action/arguments')),
    { code: 'BINDING_LOSSY_NUMBER', path: '/action/arguments/b' },
  );
});
