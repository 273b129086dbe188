/**
 * docs/protocol.md §16 `witnesses`: a sidecar submitting its checkpoints to two real witnesses
 * (`writ witness serve`), one witness that refuses (it trusts another key) and one that is down; a witness
 * restarted mid-run; the sidecar restarted (its witnesses answer 409 with the size they hold, and it
 * resends from there). Decisions are answered throughout; the served note gathers the cosignatures.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WRIT_BIN, startTestServer, type TestServer } from '../helpers/server.js';
import { freePort } from '../helpers/postgres.js';
import { startWitness, witnessKeygen, type TestWitness } from '../helpers/witness.js';
import { until } from '../helpers/wait.js';
import { SIG_ED25519, encodeVkey, parseVkey, verifyNote } from '../../src/transparency/note.js';
import { parseCheckpoint } from '../../src/transparency/checkpoint.js';
import { TestLog } from '../witness/log-fixture.js';

const ORIGIN = 'test.example/ledger';

async function putRoles(s: TestServer, from: number, n: number): Promise<void> {
  for (let i = from; i < from + n; i++) {
    const r = await fetch(`${s.url}/v1/entities/Role/r${i}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${s.tokens.admin}`, 'content-type': 'application/json' },
      body: '{"attrs":{},"parents":[]}',
    });
    assert.equal(r.status, 200);
  }
}

/** The served note once it carries cosignatures of all `witnesses` for the latest checkpoint. */
async function cosignedNote(s: TestServer, logKey: string, witnesses: string[]): Promise<{ size: number; note: string }> {
  return until(
    async () => {
      const cp = (await (await fetch(`${s.url}/v1/ledger/checkpoint`, { headers: { authorization: `Bearer ${s.tokens.auditor}` } })).json()) as {
        size: number;
      };
      const note = await (await fetch(`${s.url}/ledger/checkpoint`)).text();
      const v = verifyNote(note, [parseVkey(logKey), ...witnesses.map(parseVkey)]);
      const body = parseCheckpoint(v.text);
      return body.size === cp.size && v.verified.length === 1 + witnesses.length ? { size: body.size, note } : undefined;
    },
    `cosignatures of ${witnesses.length} witnesses on the latest checkpoint`,
    300,
  );
}

test('§16 witnesses: submission, cosignatures in the note, a refusing and a dead witness, restarts of a witness and of the sidecar', {
  timeout: 120_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'writ-witnesses-'));
  const dataDir = join(dir, 'data');
  const kg = spawnSync(process.execPath, [WRIT_BIN, 'keygen', '--data-dir', dataDir], { encoding: 'utf8' });
  assert.equal(kg.status, 0, kg.stderr);
  const logKey = encodeVkey(ORIGIN, SIG_ED25519, Buffer.from((JSON.parse(kg.stdout) as { public_key: string }).public_key, 'base64'));
  const w1Key = witnessKeygen('w1.example/witness', join(dir, 'w1.key'));
  const w2Key = witnessKeygen('w2.example/witness', join(dir, 'w2.key'));
  const w3Key = witnessKeygen('w3.example/witness', join(dir, 'w3.key'));
  const w1Opts = { key: join(dir, 'w1.key'), logs: [logKey], state: join(dir, 'w1'), listen: `127.0.0.1:${await freePort()}` };
  let w1: TestWitness | undefined = await startWitness(w1Opts);
  const w2 = await startWitness({ key: join(dir, 'w2.key'), logs: [logKey], state: join(dir, 'w2') });
  // Trusts another key under the same origin: every submission is 403.
  const w3 = await startWitness({ key: join(dir, 'w3.key'), logs: [new TestLog(ORIGIN, 1).vkey], state: join(dir, 'w3') });
  const dead = `http://127.0.0.1:${await freePort()}`;
  const config = {
    log_origin: ORIGIN,
    checkpoint: { every_records: 10, every_ms: 600_000 },
    witnesses: [
      { url: w1.url, vkey: w1Key },
      { url: w2.url, vkey: w2Key },
      { url: w3.url, vkey: w3Key },
      { url: dead, vkey: witnessKeygen('dead.example/w', join(dir, 'dead.key')) },
    ],
  };
  let s = await startTestServer({ dataDir, config });
  try {
    await putRoles(s, 0, 25);
    const first = await cosignedNote(s, logKey, [w1Key, w2Key]);
    assert.ok(first.size >= 20, `size ${first.size}`);
    // The refusing witness's signature is never in the note.
    assert.ok(!first.note.includes('w3.example') && !first.note.includes('dead.example'), first.note);
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    assert.ok(
      metrics.includes(`writ_witness_cosigned_size{witness="${w1.url}"} ${first.size}`),
      metrics
        .split('\n')
        .filter((l) => l.includes('witness'))
        .join('\n'),
    );
    assert.match(metrics, /writ_witness_submissions_total\{witness="http:\/\/127\.0\.0\.1:\d+",result="refused"\}/);
    assert.match(metrics, /result="unreachable"/);

    // w1 restarts mid-run (same port and state): the next checkpoints are cosigned by both again.
    await w1.stop();
    await putRoles(s, 25, 12);
    w1 = await startWitness(w1Opts);
    await putRoles(s, 37, 12);
    const second = await cosignedNote(s, logKey, [w1Key, w2Key]);
    assert.ok(second.size > first.size);

    // The sidecar restarts: it knows nothing of what the witnesses hold; their 409 tells it.
    await s.stop({ keepData: true });
    s = await startTestServer({ dataDir, config });
    await putRoles(s, 49, 12);
    const third = await cosignedNote(s, logKey, [w1Key, w2Key]);
    assert.ok(third.size > second.size);
    // Each witness's state holds the size it cosigned last, durably.
    const held = JSON.parse(readFileSync(join(dir, 'w2', 'logs', `${createHash('sha256').update(ORIGIN).digest('hex')}.json`), 'utf8')) as { size: number };
    assert.ok(held.size >= third.size);

    // An auditor holding only a policy checks the export against the cosigned note, offline.
    const exported = await (await fetch(`${s.url}/v1/ledger/export`, { headers: { authorization: `Bearer ${s.tokens.auditor}` } })).text();
    writeFileSync(join(dir, 'export.jsonl'), exported);
    writeFileSync(join(dir, 'note'), third.note);
    const policy = (quorum: string) => `log ${logKey}\nwitness W1 ${w1Key}\nwitness W2 ${w2Key}\nwitness W3 ${w3Key}\n${quorum}\n`;
    const verify = (policyText: string, note = third.note, exportText = exported) => {
      writeFileSync(join(dir, 'policy'), policyText);
      writeFileSync(join(dir, 'note'), note);
      writeFileSync(join(dir, 'export.jsonl'), exportText);
      const r = spawnSync(process.execPath, [WRIT_BIN, 'verify', join(dir, 'export.jsonl'), '--note', join(dir, 'note'), '--policy', join(dir, 'policy')], {
        encoding: 'utf8',
      });
      return { status: r.status, out: r.stdout.trim() ? JSON.parse(r.stdout) : undefined, err: r.stderr };
    };
    const good = verify(policy('group two 2 W1 W2 W3\nquorum two'));
    assert.equal(good.status, 0, good.err);
    assert.equal(good.out.ok, true);
    assert.match(good.err, /cosigned by 2 witness/);
    assert.deepEqual(verify(policy('group all3 all W1 W2 W3\nquorum all3')).out, { ok: false, seq: third.size, code: 'QUORUM_NOT_MET' });
    // A known witness's cosignature altered (same key id, other bytes): BAD_SIGNATURE, even with the quorum met otherwise.
    const w1Line = third.note.split('\n').find((l) => l.startsWith('— w1.example/'))!;
    const sigB64 = w1Line.split(' ')[2]!;
    const altered = Buffer.from(sigB64, 'base64');
    altered[20] ^= 1;
    const badNote = third.note.replace(sigB64, altered.toString('base64'));
    assert.deepEqual(verify(policy('quorum W2'), badNote).out, { ok: false, seq: third.size, code: 'BAD_SIGNATURE' });
    // Another log key in the policy: the note proves nothing.
    assert.equal(verify(`log ${new TestLog(ORIGIN, 1).vkey}\nquorum none\n`).out.code, 'UNKNOWN_KEY');
    // An export shorter than the note's tree.
    const lines = exported.split('\n').filter(Boolean);
    assert.equal(verify(policy('quorum none'), third.note, `${lines.slice(0, third.size - 1).join('\n')}\n`).out.code, 'TRUNCATED');

    // One record's tlog-proof, checked offline with the policy alone.
    const seq = 7;
    const proofText = await (
      await fetch(`${s.url}/v1/ledger/proofs/inclusion?seq=${seq}&format=tlog-proof`, { headers: { authorization: `Bearer ${s.tokens.auditor}` } })
    ).text();
    const checkProof = (recordLine: string, proof = proofText, policyText = policy('group two 2 W1 W2 W3\nquorum two')) => {
      writeFileSync(join(dir, 'record.json'), `${recordLine}\n`);
      writeFileSync(join(dir, 'proof'), proof);
      writeFileSync(join(dir, 'policy'), policyText);
      const r = spawnSync(process.execPath, [WRIT_BIN, 'verify', join(dir, 'record.json'), '--proof', join(dir, 'proof'), '--policy', join(dir, 'policy')], {
        encoding: 'utf8',
      });
      return { status: r.status, out: r.stdout.trim() ? JSON.parse(r.stdout) : undefined, err: r.stderr };
    };
    const proved = checkProof(lines[seq]!);
    assert.equal(proved.status, 0, proved.err);
    assert.equal(proved.out.head, JSON.parse(lines[seq]!).hash);
    assert.equal(checkProof(lines[seq + 1]!).out.code, 'MALFORMED', 'another record than the proof is of');
    assert.equal(checkProof(lines[seq]!.replace('"seq":7', '"seq":7 ')).out.code, 'HASH_MISMATCH');
    assert.equal(
      checkProof(
        lines[seq]!,
        proofText.replace(/^index 7$/m, 'index 7').replace(/\n([A-Za-z0-9+/]{43}=)\n/, (_, h: string) => `\n${h.startsWith('A') ? 'B' : 'A'}${h.slice(1)}\n`),
      ).out.code,
      'ROOT_MISMATCH',
    );
    assert.equal(checkProof(lines[seq]!, proofText, policy('group all3 all W1 W2 W3\nquorum all3')).out.code, 'QUORUM_NOT_MET');
  } finally {
    await s.stop();
    await Promise.all([w1?.stop(), w2.stop(), w3.stop()]);
    rmSync(dir, { recursive: true, force: true });
  }
});
