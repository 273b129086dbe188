#!/usr/bin/env node
// Writes the writ-bind/1 vector files of this directory (docs/protocol.md §3 format:
// [{name, server, tool, input, expect: {binding, canonical} | {error}}]).
//
// The expected `canonical` of every admitted case is written here BY HAND, and its `binding` is computed
// from that hand-written text with the contract's recipe and node:crypto only — nothing here imports
// writ's parser or admission code, so the vectors check the implementation instead of echoing it.
// golden.json is a verbatim copy of the cases in ../golden/binding.json (computed by an
// independent implementation).
//
// Inputs never contain a literal lone surrogate (they are fed to `writ bind` as UTF-8 bytes, which cannot
// carry one); lone surrogates are written as \u escapes inside the input text.
//
// Run: node vectors/binding/generate.mjs   (rewrites the *.json files next to this script)
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';

const here = new URL('./', import.meta.url);
const GOLDEN = new URL('../golden/binding.json', import.meta.url);

function binding(server, tool, canonical) {
  const payload = `writ-bind/1\n{"arguments":${canonical},"server":${JSON.stringify(server)},"tool":${JSON.stringify(tool)}}`;
  return `writ-bind/1:sha256:${createHash('sha256').update(payload, 'utf8').digest('hex')}`;
}

const ok = (name, input, canonical, server = 'demo', tool = 'call') => ({
  name,
  server,
  tool,
  input,
  expect: { binding: binding(server, tool, canonical), canonical },
});
const err = (name, input, error, server = 'demo', tool = 'call') => ({ name, server, tool, input, expect: { error } });

const R = String.raw;
const nest = (open, close, n, inner = '') => open.repeat(n) + inner + close.repeat(n);

const numbers = [
  ok('integer zero', R`{"n":0}`, '{"n":0}'),
  ok('negative zero integer token is the integer 0', R`{"n":-0}`, '{"n":0}'),
  ok('max safe integer', R`{"n":9007199254740991}`, '{"n":9007199254740991}'),
  ok('min safe integer', R`{"n":-9007199254740991}`, '{"n":-9007199254740991}'),
  ok('negative integer', R`{"n":-42}`, '{"n":-42}'),
  ok('decimal one half', R`{"n":0.5}`, '{"n":0.5}'),
  ok('trailing zeros dropped (0.50000)', R`{"n":0.50000}`, '{"n":0.5}'),
  ok('exponent spelling of a decimal (5e-1)', R`{"n":5e-1}`, '{"n":0.5}'),
  ok('upper-case exponent with plus sign (1.25E+1)', R`{"n":1.25E+1}`, '{"n":12.5}'),
  ok('RFC 8785 number 4.50', R`{"n":4.50}`, '{"n":4.5}'),
  ok('RFC 8785 number 2e-3', R`{"n":2e-3}`, '{"n":0.002}'),
  ok('four fractional digits', R`{"n":0.0001}`, '{"n":0.0001}'),
  ok('negative four fractional digits', R`{"n":-0.0001}`, '{"n":-0.0001}'),
  ok('large decimal with four fractional digits', R`{"n":123456789.1234}`, '{"n":123456789.1234}'),
  ok('near the decimal maximum', R`{"n":922337203685477.5}`, '{"n":922337203685477.5}'),
  ok('near the decimal minimum', R`{"n":-922337203685477.5}`, '{"n":-922337203685477.5}'),
  ok('decimal written with a long exponent (125e-1)', R`{"n":125e-1}`, '{"n":12.5}'),
  ok('decimal 0.1 stays 0.1', R`{"n":0.1}`, '{"n":0.1}'),
  ok('integers and decimals in one array', R`{"n":[1,1.5,-2,-2.25,0]}`, '{"n":[1,1.5,-2,-2.25,0]}'),
  ok(
    'RFC 8785 example restricted to the admitted domain',
    R`{"numbers": [4.50, 2e-3], "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/", "literals": [null, true, false]}`,
    '{"literals":[null,true,false],"numbers":[4.5,0.002],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
  ),
];

const strings = [
  ok('plain ASCII string', R`{"s":"hello"}`, '{"s":"hello"}'),
  ok('\\u0041 escape becomes a literal', R`{"s":"\u0041"}`, '{"s":"A"}'),
  ok('escaped solidus becomes a literal', R`{"s":"a\/b"}`, '{"s":"a/b"}'),
  ok('escaped e-acute equals the literal (escaped)', R`{"s":"caf\u00e9"}`, '{"s":"café"}'),
  ok('escaped e-acute equals the literal (literal)', '{"s":"café"}', '{"s":"café"}'),
  ok('control character U+001F stays escaped in lower-case hex', R`{"s":"\u001F"}`, '{"s":"\\u001f"}'),
  ok('NUL stays escaped', R`{"s":"\u0000"}`, '{"s":"\\u0000"}'),
  ok('short escapes keep their short form', R`{"s":"\b\f\n\r\t"}`, '{"s":"\\b\\f\\n\\r\\t"}'),
  ok('\\u000a becomes \\n', R`{"s":"\u000a"}`, '{"s":"\\n"}'),
  ok('DEL is written literally', R`{"s":"\u007f"}`, '{"s":"\u007f"}'),
  ok('U+2028 and U+2029 are written literally', R`{"s":"\u2028\u2029"}`, '{"s":"\u2028\u2029"}'),
  ok('escaped surrogate pair (lower-case hex)', R`{"s":"\ud83d\ude00"}`, '{"s":"😀"}'),
  ok('escaped surrogate pair (upper-case hex)', R`{"s":"\uD83D\uDE00"}`, '{"s":"😀"}'),
  ok('literal astral character', '{"s":"😀"}', '{"s":"😀"}'),
  ok('quote and backslash stay escaped', R`{"s":"\"\\"}`, '{"s":"\\"\\\\"}'),
  ok('empty string', R`{"s":""}`, '{"s":""}'),
  ok('mixed escapes and literals', R`{"s":"\u00fc\u00DF-\u4e2d\u6587-日本"}`, '{"s":"üß-中文-日本"}'),
];

const keys = [
  ok('"10" sorts before "9" (code units, not numbers)', R`{"9":1,"10":2}`, '{"10":2,"9":1}'),
  ok('numeric-looking keys sorted as strings', R`{"2":"b","100":"c","1":"a"}`, '{"1":"a","100":"c","2":"b"}'),
  ok('astral key (U+10000) sorts before private-use BMP key (U+E000)', R`{"\ue000":1,"\ud800\udc00":2}`, '{"𐀀":2,"\ue000":1}'),
  ok('astral key sorts before U+FB33', R`{"\ufb33":1,"\ud83d\ude00":2}`, '{"😀":2,"\ufb33":1}'),
  ok(
    'RFC 8785 sorting example',
    R`{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`,
    '{"\\r":"Carriage Return","1":"One","\u0080":"Control","ö":"Latin Small Letter O With Diaeresis","€":"Euro Sign","😀":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
  ),
  ok('upper case sorts before underscore before lower case', R`{"a":1,"A":2,"_":3,"B":4}`, '{"A":2,"B":4,"_":3,"a":1}'),
  ok('prefix sorts first', R`{"ab":1,"a":2}`, '{"a":2,"ab":1}'),
  ok('empty key sorts first', R`{"a":1,"":0}`, '{"":0,"a":1}'),
  ok('nested objects are sorted too', R`{"z":{"y":1,"x":2},"a":{"c":3,"b":4}}`, '{"a":{"b":4,"c":3},"z":{"x":2,"y":1}}'),
  ok('escaped key equals its literal', R`{"\u0061\u0062":1}`, '{"ab":1}'),
  ok('key with quote and backslash', R`{"a\"b\\c":1}`, '{"a\\"b\\\\c":1}'),
  ok('__proto__ key is plain data', R`{"__proto__":{"admin":true}}`, '{"__proto__":{"admin":true}}'),
  ok('escaped __proto__ key is plain data', R`{"\u005f_proto__":{"polluted":1}}`, '{"__proto__":{"polluted":1}}'),
  ok('constructor.prototype is plain data', R`{"constructor":{"prototype":{"isAdmin":true}}}`, '{"constructor":{"prototype":{"isAdmin":true}}}'),
  ok(
    'Object.prototype method names are plain data',
    R`{"toString":"x","hasOwnProperty":1,"valueOf":[],"toJSON":"y"}`,
    '{"hasOwnProperty":1,"toJSON":"y","toString":"x","valueOf":[]}',
  ),
  ok('__proto__ beside ordinary keys', R`{"b":1,"__proto__":null,"a":2}`, '{"__proto__":null,"a":2,"b":1}'),
];

const structure = [
  ok('empty object', '{}', '{}'),
  ok('empty array and object members', R`{"a":[],"b":{}}`, '{"a":[],"b":{}}'),
  ok('whitespace of every kind is insignificant', ' \t\r\n{ \n"a" :\t[ 1 ,\r\n2 ] , "b" : { } }\n ', '{"a":[1,2],"b":{}}'),
  ok('array order is bound', R`{"a":[2,1,2]}`, '{"a":[2,1,2]}'),
  ok('null members are bound', R`{"a":null,"b":[null]}`, '{"a":null,"b":[null]}'),
  ok('booleans', R`{"t":true,"f":false}`, '{"f":false,"t":true}'),
  ok('depth 64 of arrays is admitted', `{"a":${nest('[', ']', 63)}}`, `{"a":${nest('[', ']', 63)}}`),
  ok('depth 64 of objects is admitted', nest('{"a":', '}', 64, '1'), nest('{"a":', '}', 64, '1')),
  ok(
    'depth 64 mixed, deepest container holds values',
    `{"a":${nest('[{"b":', '}]', 31, '[1,"x",null]')}}`,
    `{"a":${nest('[{"b":', '}]', 31, '[1,"x",null]')}}`,
  ),
  ok('argument object like the contract example', R`{"employee_id": "7721"}`, '{"employee_id":"7721"}', 'idp', 'disable_sign_in'),
  ok('non-ASCII server and tool names', R`{"x":1}`, '{"x":1}', 'sérveur', 'outil/ü'),
];

const refusals = [
  err('duplicate key with a different value', R`{"a":1,"a":2}`, 'BINDING_DUPLICATE_KEY'),
  err('duplicate key nested in an array element', R`{"x":[{"k":true,"k":true}]}`, 'BINDING_DUPLICATE_KEY'),
  err('duplicate key spelled once escaped', R`{"a":1,"\u0061":1}`, 'BINDING_DUPLICATE_KEY'),
  err('duplicate __proto__ key', R`{"__proto__":{},"__proto__":{}}`, 'BINDING_DUPLICATE_KEY'),
  err('lone low surrogate', R`{"t":"\udc00"}`, 'BINDING_LONE_SURROGATE'),
  err('surrogates in the wrong order', R`{"t":"\ude00\ud83d"}`, 'BINDING_LONE_SURROGATE'),
  err('high surrogate at the end of a string', R`{"t":"abc\ud83d"}`, 'BINDING_LONE_SURROGATE'),
  err('lone surrogate in a key', R`{"\ud800":1}`, 'BINDING_LONE_SURROGATE'),
  err('lone surrogate deep in an array', R`{"a":[["ok","\udfff"]]}`, 'BINDING_LONE_SURROGATE'),
  err('integer 2^53 (negative)', R`{"n":-9007199254740992}`, 'BINDING_UNSAFE_INTEGER'),
  err('integer 2^64', R`{"n":[1,18446744073709551616]}`, 'BINDING_UNSAFE_INTEGER'),
  err('RFC 8785 integer 295147905179352830000', R`{"n":295147905179352830000}`, 'BINDING_UNSAFE_INTEGER'),
  err('integer 2^53+1', R`{"n":9007199254740993}`, 'BINDING_UNSAFE_INTEGER'),
  err('1e0 is an integer in disguise', R`{"n":1e0}`, 'BINDING_LOSSY_NUMBER'),
  err('2.50e1 is 25', R`{"n":2.50e1}`, 'BINDING_LOSSY_NUMBER'),
  err('-0.0 is integral', R`{"n":-0.0}`, 'BINDING_LOSSY_NUMBER'),
  err('1e16 is integral', R`{"n":1e16}`, 'BINDING_LOSSY_NUMBER'),
  err('RFC 8785 number 1E30', R`{"n":1E30}`, 'BINDING_LOSSY_NUMBER'),
  err('largest double is integral', R`{"n":1.7976931348623157e308}`, 'BINDING_LOSSY_NUMBER'),
  err('100.00 is integral', R`{"n":{"m":100.00}}`, 'BINDING_LOSSY_NUMBER'),
  err('0.30000000000000004', R`{"n":0.30000000000000004}`, 'BINDING_UNREPRESENTABLE'),
  err('five fractional digits', R`{"n":0.12345}`, 'BINDING_UNREPRESENTABLE'),
  err('RFC 8785 number 333333333.33333329', R`{"n":333333333.33333329}`, 'BINDING_UNREPRESENTABLE'),
  err('RFC 8785 number 1e-27', R`{"n":0.000000000000000000000000001}`, 'BINDING_UNREPRESENTABLE'),
  err('smallest subnormal 5e-324', R`{"n":5e-324}`, 'BINDING_UNREPRESENTABLE'),
  err('above the decimal maximum', R`{"n":922337203685477.6}`, 'BINDING_UNREPRESENTABLE'),
  err('below the decimal minimum', R`{"n":-922337203685478.5}`, 'BINDING_UNREPRESENTABLE'),
  err('depth 65 of arrays is refused', `{"a":${nest('[', ']', 64)}}`, 'BINDING_TOO_DEEP'),
  err('depth 65 of objects is refused', nest('{"a":', '}', 65, '1'), 'BINDING_TOO_DEEP'),
  err('depth 65 mixed', `{"a":${nest('[{"b":', '}]', 32, '1')}}`, 'BINDING_TOO_DEEP'),
  err('depth 10000 is refused, not a crash', `{"a":${nest('[', ']', 9999)}}`, 'BINDING_TOO_DEEP'),
  err('trailing comma', R`{"a":1,}`, 'INVALID_JSON'),
  err('single-quoted key', R`{'a':1}`, 'INVALID_JSON'),
  err('leading zero', R`{"a":01}`, 'INVALID_JSON'),
  err('leading dot', R`{"a":.5}`, 'INVALID_JSON'),
  err('NaN is not JSON', R`{"a":NaN}`, 'INVALID_JSON'),
  err('invalid escape', R`{"a":"\x41"}`, 'INVALID_JSON'),
  err('raw control character in a string', '{"a":"line\nbreak"}', 'INVALID_JSON'),
  err('text after the value', R`{"a":1} {}`, 'INVALID_JSON'),
  err('empty input', '', 'INVALID_JSON'),
  err('arguments must be an object, not an array', '[1,2]', 'INVALID_REQUEST'),
  err('arguments must be an object, not a string', '"x"', 'INVALID_REQUEST'),
  err('arguments must be an object, not null', 'null', 'INVALID_REQUEST'),
];

const golden = JSON.parse(readFileSync(GOLDEN, 'utf8')).vectors;

const files = {
  'golden.json': golden,
  'numbers.json': numbers,
  'strings.json': strings,
  'keys.json': keys,
  'structure.json': structure,
  'refusals.json': refusals,
};
let total = 0;
for (const [file, vectors] of Object.entries(files)) {
  writeFileSync(new URL(file, here), `${JSON.stringify(vectors, null, 2)}\n`);
  total += vectors.length;
}
console.log(`wrote ${total} vectors`);
