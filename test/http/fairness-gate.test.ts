/** A caller's share (src/http/fairness.ts), in-process: counts, bytes, release, and who a caller is. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CallerGate, callerKey, retryAfterOf } from '../../src/http/fairness.js';
import type { Caller } from '../../src/identity/caller.js';

test('a caller over its count or bytes is refused RATE_LIMITED; a lone request of any size is let in; leaving frees the share', () => {
  const gate = new CallerGate({ maxInFlight: 2, maxInFlightBytes: 100 });
  const big = gate.enter('a', 500); // alone: let in whatever its size
  assert.throws(() => gate.enter('a', 1), { code: 'RATE_LIMITED' });
  const other = gate.enter('b', 60); // another caller is not affected
  big();
  big(); // leaving twice counts once
  const one = gate.enter('a', 50);
  assert.throws(() => gate.enter('a', 51), { code: 'RATE_LIMITED' }); // 50 + 51 > 100 bytes
  const two = gate.enter('a', 50);
  assert.throws(() => gate.enter('a', 0), { code: 'RATE_LIMITED' }); // 2 in flight
  one();
  two();
  other();
  assert.equal(gate.inFlight('a'), 0);
  assert.equal(retryAfterOf({ code: 'RATE_LIMITED' }), '1');
  assert.equal(retryAfterOf({ code: 'LIMIT_EXCEEDED' }), undefined);
});

test('callerKey: one key per token object; a verified identity names the caller whatever the object', () => {
  const a: Caller = { role: 'pep', name: 'a', actor: { type: 'Agent', id: 'x' } };
  const b: Caller = { role: 'pep', name: 'b', actor: { type: 'Agent', id: 'x' } };
  assert.equal(callerKey(a), callerKey(a));
  assert.notEqual(callerKey(a), callerKey(b));
  const jwt = (sub: string) => ({ role: 'pep', identity: { method: 'jwt', iss: 'https://idp', sub } }) as unknown as Caller;
  assert.equal(callerKey(jwt('agent-1')), callerKey(jwt('agent-1')));
  assert.notEqual(callerKey(jwt('agent-1')), callerKey(jwt('agent-2')));
});
