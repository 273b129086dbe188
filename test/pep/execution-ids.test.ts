/**
 * Execution ids a PEP mints (a call with no `io.writ/execution_id`, started with defaults) are
 * time-ordered: each sorts after the one before, so the sidecar appends them to its execution-keyed
 * B-trees instead of inserting them at random places.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freshExecutionId } from '../../src/pep/context.js';
import { waitUntil } from '../helpers/wait.js';

test('fresh execution ids are unique, valid for the contract, and sort in the order they were made', async () => {
  const ids: string[] = [];
  for (let i = 0; i < 2000; i++) {
    ids.push(freshExecutionId());
    // Across milliseconds too: on to the next one (waiting for the clock to move, not for a fixed time).
    if (i % 500 === 0) {
      const made = Date.now();
      await waitUntil(() => Date.now() > made, 'the next millisecond', 1_000, 1);
    }
  }
  assert.equal(new Set(ids).size, ids.length);
  for (const id of ids) {
    // CONTRACT §2: 1–128 chars of A-Za-z0-9._:- ; RFC 9562 version 7, variant 10.
    assert.match(id, /^writ-proxy:[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.ok(id.length <= 128);
  }
  assert.deepEqual([...ids].sort(), ids, 'made in order, sorted in order');
  assert.match(freshExecutionId('my-agent'), /^my-agent:[0-9a-f-]{36}$/);
  // The timestamp is the first 48 bits: now, in milliseconds.
  const ms = parseInt(ids.at(-1)!.slice('writ-proxy:'.length).replace(/-/g, '').slice(0, 12), 16);
  assert.ok(Math.abs(ms - Date.now()) < 60_000, `${ms} vs ${Date.now()}`);
});
