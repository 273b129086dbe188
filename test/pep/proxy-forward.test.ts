// writ proxy forwards a held tools/call as the client's own text with only the id, the arguments and
// `_meta["io.writ/execution_id"]` replaced or added (src/pep/proxy.ts forwardedCallText): members
// beyond them pass byte for byte.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { forwardedCallText } from '../../src/pep/proxy.js';

const parse = (text: string) => JSON.parse(text) as Record<string, unknown>;

test('a progress token above 2^53 and a 1.0 outside the arguments reach the server as sent', () => {
  const text =
    '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"apply","arguments":{"n":1.0,"k":"x"},"_meta":{"progressToken":12345678901234567890,"w":1.0}},"extra":2.50}';
  const out = forwardedCallText(text, parse(text), 'writ-abc:1', { k: 'x', n: 1 }, 'E-1');
  assert.equal(
    out,
    '{"jsonrpc":"2.0","id":"writ-abc:1","method":"tools/call","params":{"name":"apply","arguments":{"k":"x","n":1},"_meta":{"io.writ/execution_id":"E-1","progressToken":12345678901234567890,"w":1.0}},"extra":2.50}',
  );
});

test('a call without arguments gets the admitted ones as its first params member; whitespace and member order are kept', () => {
  const text = '{ "params" : { "name" : "apply" , "_meta" : { } } , "id" : "c-1" , "method" : "tools/call" , "jsonrpc" : "2.0" }';
  const out = forwardedCallText(text, parse(text), 'writ-abc:2', {}, 'E-2');
  assert.equal(
    out,
    '{ "params" : {"arguments":{}, "name" : "apply" , "_meta" : {"io.writ/execution_id":"E-2"} } , "id" : "writ-abc:2" , "method" : "tools/call" , "jsonrpc" : "2.0" }',
  );
  assert.deepEqual(parse(out), {
    params: { arguments: {}, name: 'apply', _meta: { 'io.writ/execution_id': 'E-2' } },
    id: 'writ-abc:2',
    method: 'tools/call',
    jsonrpc: '2.0',
  });
});

test('ids and arguments whose text holds escapes, brackets and quotes are replaced whole', () => {
  const text = '{"jsonrpc":"2.0","id":"a\\"}{[b","method":"tools/call","params":{"arguments":{"s":"}\\"]","a":[1,{"b":[]}]},"name":"t"}}';
  const out = forwardedCallText(text, parse(text), 'p:3', { a: [1, { b: [] }], s: '}"]' }, 'E-3');
  assert.deepEqual(parse(out), {
    jsonrpc: '2.0',
    id: 'p:3',
    method: 'tools/call',
    params: { _meta: { 'io.writ/execution_id': 'E-3' }, arguments: { a: [1, { b: [] }], s: '}"]' }, name: 't' },
  });
});

test("the execution id the client sent in _meta is replaced by the execution's (the same, or the minted one), never duplicated", () => {
  const text =
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},"_meta":{"io.writ/execution_id":"E-4","io.writ/envelope":{}}}}';
  const out = forwardedCallText(text, parse(text), 'p:4', {}, 'E-4');
  assert.equal(out, text.replace('"id":1', '"id":"p:4"'));
  const notObject = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","_meta":null}}';
  assert.deepEqual(parse(forwardedCallText(notObject, parse(notObject), 'p:5', {}, 'E-5')).params, {
    name: 't',
    arguments: {},
    _meta: { 'io.writ/execution_id': 'E-5' },
  });
});
