import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { rawPublicKey } from '../../src/ledger/signing.js';
import { NoteError, SIG_COSIGNATURE_V1, SIG_ED25519, encodeVkey } from '../../src/transparency/note.js';
import { parsePolicy, quorumMet } from '../../src/transparency/policy.js';
import { formatTlogProof, parseTlogProof } from '../../src/transparency/proof.js';

const key = () => rawPublicKey(generateKeyPairSync('ed25519').privateKey);
const w = (name: string) => encodeVkey(name, SIG_COSIGNATURE_V1, key());

test("tlog-policy: the spec's two-level example, its thresholds and its quorum", () => {
  const text = [
    `log ${encodeVkey('example.com/log', SIG_ED25519, key())}`,
    '',
    ...['X1', 'X2', 'X3'].map((n) => `witness ${n} ${w(n)}`),
    'group X-witnesses 2 X1 X2 X3',
    '',
    ...['Y1', 'Y2', 'Y3'].map((n) => `witness ${n} ${w(n)} https://${n}.example/`),
    'group Y-witnesses any Y1 Y2 Y3',
    '  # a comment',
    'group X-and-Y all X-witnesses Y-witnesses',
    'quorum X-and-Y',
  ].join('\n');
  const p = parsePolicy(text);
  assert.equal(p.logs.length, 1);
  assert.equal(p.witnesses.size, 6);
  assert.equal(quorumMet(p, new Set(['X1', 'X2', 'Y3'])), true);
  assert.equal(quorumMet(p, new Set(['X1', 'Y1', 'Y2', 'Y3'])), false);
  assert.equal(quorumMet(p, new Set(['X1', 'X2', 'X3'])), false);
  assert.equal(quorumMet(parsePolicy('quorum none\n'), new Set()), true);
});

test('tlog-policy: refusals', () => {
  const a = w('a');
  for (const bad of [
    '',
    `witness A ${a}\n`,
    `witness A ${a}\nquorum B\n`,
    `quorum A\nwitness A ${a}\n`,
    `witness A ${a}\nwitness B ${a}\nquorum A\n`,
    `witness A ${a}\ngroup G 2 A\nquorum G\n`,
    `witness A ${a}\ngroup G any A A\nquorum G\n`,
    `witness A ${a}\nquorum A\nquorum A\n`,
    `log ${a}\nquorum none\n`,
    `witness none ${a}\nquorum none\n`,
    `frobnicate\nquorum none\n`,
  ]) {
    assert.throws(
      () => parsePolicy(bad),
      (e: NoteError) => e.code === 'MALFORMED',
      bad,
    );
  }
});

test('tlog-proof: formats as the spec lays it out, and parses back', () => {
  const note = 'example.com/fancylog\n109482\nsFodV/vSp5O8n9a8QpW6PRY97tfOSW5bsc2Xl/EQi08=\n\n— example.com/fancylog hI2DJw==\n';
  const path = ['gSKyXoYZUgZ6jduWYrkDOARinOMGJveXjgMkBTcdPlQ=', 'B95lDa8R83lS8n0eG+o0buTxRKQTYFi//1U8anccXmA='].map((b) => Buffer.from(b, 'base64'));
  const text = formatTlogProof({ index: 73894, path, note });
  assert.equal(
    text,
    `c2sp.org/tlog-proof@v1\nindex 73894\ngSKyXoYZUgZ6jduWYrkDOARinOMGJveXjgMkBTcdPlQ=\nB95lDa8R83lS8n0eG+o0buTxRKQTYFi//1U8anccXmA=\n\n${note}`,
  );
  assert.deepEqual(parseTlogProof(text), { index: 73894, path, note });
  const extra = Buffer.from('age-v1.2.1-darwin-arm64.tar.gz');
  assert.deepEqual(parseTlogProof(formatTlogProof({ index: 0, path: [], note, extra })), { index: 0, path: [], note, extra });
  assert.throws(() => parseTlogProof(`c2sp.org/tlog-proof@v1\nindex 01\n\n${note}`), NoteError);
});

test("checkNoteUnderPolicy: log signature, witness cosignatures, quorum, and a known key's bad signature", async () => {
  const { generateKeyPairSync: gen } = await import('node:crypto');
  const { checkNoteUnderPolicy } = await import('../../src/transparency/policy.js');
  const { cosignText, formatNote, signNoteText } = await import('../../src/transparency/note.js');
  const logKey = gen('ed25519').privateKey;
  const [k1, k2] = [gen('ed25519').privateKey, gen('ed25519').privateKey];
  const text = 'example.com/log\n5\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n';
  const logLine = signNoteText(text, 'example.com/log', logKey);
  const c1 = cosignText(text, 'w1', k1, 1700000000);
  const c2 = cosignText(text, 'w2', k2, 1700000001);
  const policy = parsePolicy(
    `log ${encodeVkey('example.com/log', SIG_ED25519, rawPublicKey(logKey))}\nwitness A ${encodeVkey('w1', SIG_COSIGNATURE_V1, rawPublicKey(k1))}\nwitness B ${encodeVkey('w2', SIG_COSIGNATURE_V1, rawPublicKey(k2))}\ngroup G all A B\nquorum G\n`,
  );
  const ok = checkNoteUnderPolicy(formatNote(text, [logLine, c1, c2]), policy);
  assert.ok(ok.ok && ok.checkpoint.size === 5 && ok.cosigned.length === 2);
  assert.equal((checkNoteUnderPolicy(formatNote(text, [logLine, c1]), policy) as { code: string }).code, 'QUORUM_NOT_MET');
  assert.equal((checkNoteUnderPolicy(formatNote(text, [c1, c2]), policy) as { code: string }).code, 'UNKNOWN_KEY');
  const forged = formatNote(text, [logLine, c1, cosignText(text.replace('\n5\n', '\n6\n'), 'w2', k2, 1)]);
  assert.equal((checkNoteUnderPolicy(forged, policy) as { code: string }).code, 'BAD_SIGNATURE');
  assert.equal((checkNoteUnderPolicy('garbage', policy) as { code: string }).code, 'MALFORMED');
});
