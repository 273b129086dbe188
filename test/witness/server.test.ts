/**
 * `writ witness serve` as a process: two logs on one witness, every status code over HTTP with its media
 * type, the cosignature verifying under the vkey keygen printed, and the state surviving a restart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseVkey, verifyNote } from '../../src/transparency/note.js';
import { startWitness, witnessKeygen } from '../helpers/witness.js';
import { TestLog } from './log-fixture.js';

const post = (url: string, body: string) => fetch(`${url}/add-checkpoint`, { method: 'POST', body });

test('witness serve: two logs, every status code, cosignatures that verify, state kept across a restart', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'writ-witness-'));
  const a = new TestLog('a.example/log');
  const b = new TestLog('b.example/log');
  const vkey = witnessKeygen('witness.example/w1', join(dir, 'w1.key'));
  assert.equal(parseVkey(vkey).type, 0x04);
  const opts = { key: join(dir, 'w1.key'), logs: [a.vkey, b.vkey], state: join(dir, 'state') };
  let w = await startWitness(opts);
  try {
    const ok = await post(w.url, a.body(0, 10));
    assert.equal(ok.status, 200);
    const line = await ok.text();
    assert.match(line, /^— witness\.example\/w1 [A-Za-z0-9+/=]+\n$/);
    const v = verifyNote(a.note(10) + line, [parseVkey(vkey), parseVkey(a.vkey)]);
    assert.equal(v.verified.length, 2);
    assert.ok(Math.abs(v.verified.find((x) => x.key.type === 4)!.timestamp! - Date.now() / 1000) < 600);
    assert.equal((await post(w.url, b.body(0, 3))).status, 200);
    assert.equal((await post(w.url, a.body(10, 20))).status, 200);

    const conflict = await post(w.url, a.body(0, 30));
    assert.equal(conflict.status, 409);
    assert.equal(conflict.headers.get('content-type'), 'text/x.tlog.size');
    assert.equal(await conflict.text(), '20\n');
    assert.equal((await post(w.url, new TestLog('c.example/log').body(0, 1))).status, 404);
    assert.equal((await post(w.url, a.body(20, 30, { note: b.note(30).replace('b.example', 'a.example') }))).status, 403);
    assert.equal((await post(w.url, 'nonsense')).status, 400);
    assert.equal((await post(w.url, a.body(20, 30, { proof: [Buffer.alloc(32)] }))).status, 422);
    assert.equal((await fetch(`${w.url}/add-checkpoint`)).status, 405);
    assert.equal((await fetch(`${w.url}/other`, { method: 'POST' })).status, 404);

    // Restarted: it remembers both logs' sizes, and still never cosigns a smaller or other tree.
    assert.equal(await w.stop(), 0);
    w = await startWitness(opts);
    assert.equal(await (await post(w.url, a.body(0, 5))).text(), '20\n');
    assert.equal(await (await post(w.url, b.body(0, 5))).text(), '3\n');
    const forked = new TestLog('a.example/log', 600, 'fork');
    assert.equal((await post(w.url, forked.body(20, 20, { note: forked.note(20, a.key) }))).status, 409);
    assert.equal((await post(w.url, a.body(20, 40))).status, 200);
  } finally {
    await w.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('witness serve: a second process on the same state dir is refused', { timeout: 30_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'writ-witness-'));
  const a = new TestLog('a.example/log', 4);
  witnessKeygen('witness.example/w1', join(dir, 'w1.key'));
  const opts = { key: join(dir, 'w1.key'), logs: [a.vkey], state: join(dir, 'state') };
  const w = await startWitness(opts);
  try {
    await assert.rejects(startWitness(opts), /in use/);
  } finally {
    await w.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
