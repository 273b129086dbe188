// writ proxy forwards a held tools/call as the client's own text with only the id and the arguments
// replaced (src/pep/proxy.ts forwardedCallText): members beyond them pass byte for byte.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { forwardedCallText } from '../../src/pep/proxy.js';

const parse = (text: string) => JSON.parse(text) as Record<string, unknown>;

test('a progress token above 2^53 and a 1.0 outside the arguments reach the server as sent', () => {
  const text = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"apply","arguments":{"n":1.0,"k":"x"},"_meta":{"progressToken":12345678901234567890,"w":1.0}},"extra":2.50}';
  const out = forwardedCallText(text, parse(text), 'writ-abc:1', { k: 'x', n: 1 });
  assert.equal(out, '{"jsonrpc":"2.0","id":"writ-abc:1","method":"tools/call","params":{"name":"apply","arguments":{"k":"x","n":1},"_meta":{"progressToken":12345678901234567890,"w":1.0}},"extra":2.50}');
});

test('a call without arguments gets the admitted ones as its first params member; whitespace and member order are kept', () => {
  const text = '{ "params" : { "name" : "apply" , "_meta" : { } } , "id" : "c-1" , "method" : "tools/call" , "jsonrpc" : "2.0" }';
  const out = forwardedCallText(text, parse(text), 'writ-abc:2', {});
  assert.equal(out, '{ "params" : {"arguments":{}, "name" : "apply" , "_meta" : { } } , "id" : "writ-abc:2" , "method" : "tools/call" , "jsonrpc" : "2.0" }');
  assert.deepEqual(parse(out), { params: { arguments: {}, name: 'apply', _meta: {} }, id: 'writ-abc:2', method: 'tools/call', jsonrpc: '2.0' });
});

test('ids and arguments whose text holds escapes, brackets and quotes are replaced whole', () => {
  const text = '{"jsonrpc":"2.0","id":"a\\"}{[b","method":"tools/call","params":{"arguments":{"s":"}\\"]","a":[1,{"b":[]}]},"name":"t"}}';
  const out = forwardedCallText(text, parse(text), 'p:3', { a: [1, { b: [] }], s: '}"]' });
  assert.deepEqual(parse(out), { jsonrpc: '2.0', id: 'p:3', method: 'tools/call', params: { arguments: { a: [1, { b: [] }], s: '}"]' }, name: 't' } });
});
