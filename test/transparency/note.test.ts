import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { privateKeyFromSeed } from '../../src/ledger/signing.js';
import {
  type NoteError,
  SIG_COSIGNATURE_V1,
  SIG_ED25519,
  cosignText,
  cosignedMessage,
  encodeVkey,
  formatNote,
  parseNote,
  parseSignatureLine,
  parseVkey,
  signNoteText,
  verifyNote,
} from '../../src/transparency/note.js';
import { rawPublicKey } from '../../src/ledger/signing.js';

// golang.org/x/mod/sumdb/note's own test key and note (note_test.go): an independent implementation's bytes.
const PETER_SKEY = 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz';
const PETER_VKEY = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';
const ENOCH_VKEY = 'EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop';
const TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const PETER_SIG = '— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n';
const ENOCH_SIG = '— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n';

const peterSeed = Buffer.from(PETER_SKEY.split('+').slice(4).join('+'), 'base64').subarray(1);

test("signed-note: the key id, vkey and signature of sumdb/note's test key, byte for byte", () => {
  const key = privateKeyFromSeed(peterSeed);
  assert.equal(encodeVkey('PeterNeumann', SIG_ED25519, rawPublicKey(key)), PETER_VKEY);
  const v = parseVkey(PETER_VKEY);
  assert.equal(v.keyId, 0xc74f20a3);
  assert.equal(signNoteText(TEXT, 'PeterNeumann', key), PETER_SIG);
  assert.equal(formatNote(TEXT, [PETER_SIG]), `${TEXT}\n${PETER_SIG}`);
});

test("signed-note: verification ignores unknown keys, refuses a known key's bad signature and an unsigned note", () => {
  const peter = parseVkey(PETER_VKEY);
  const enoch = parseVkey(ENOCH_VKEY);
  const note = `${TEXT}\n${PETER_SIG}${ENOCH_SIG}`;
  assert.deepEqual(
    verifyNote(note, [peter]).verified.map((v) => v.key.name),
    ['PeterNeumann'],
  );
  assert.deepEqual(
    verifyNote(note, [peter, enoch]).verified.map((v) => v.key.name),
    ['PeterNeumann', 'EnochRoot'],
  );
  assert.throws(
    () => verifyNote(note, []),
    (e: NoteError) => e.code === 'UNVERIFIED',
  );
  const tampered = `${TEXT}\n${PETER_SIG.slice(0, 60)}ABCD${PETER_SIG.slice(60)}`;
  assert.throws(
    () => verifyNote(tampered, [peter]),
    (e: NoteError) => e.code === 'BAD_SIGNATURE',
  );
  // The same text signed, but another text presented.
  assert.throws(
    () => verifyNote(`${TEXT.replace('answer', 'answers')}\n${PETER_SIG}`, [peter]),
    (e: NoteError) => e.code === 'BAD_SIGNATURE',
  );
});

test("signed-note: malformed notes (sumdb/note's list) are refused", () => {
  for (const bad of [
    TEXT,
    `${TEXT}\n`,
    `${TEXT}\n${PETER_SIG.slice(0, -1)}`,
    `\x01${TEXT}\n${PETER_SIG}`,
    `${TEXT}\n— Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=`,
    `${TEXT}\n${PETER_SIG}Unexpected line.\n`,
  ]) {
    assert.throws(
      () => parseNote(bad),
      (e: NoteError) => e.code === 'MALFORMED',
      JSON.stringify(bad),
    );
  }
  assert.throws(
    () => parseNote(Buffer.from([0xff, 0x0a, 0x0a])),
    (e: NoteError) => e.code === 'MALFORMED',
  );
});

test('vkeys: manglings are refused (sumdb/note TestNewVerifier)', () => {
  const bad = [
    'PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==',
    'PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW',
    PETER_VKEY.replace('c74f20a3', 'c74f20a4'),
    PETER_VKEY.replace('Peter', 'Petra'),
    PETER_VKEY.slice(0, -1),
    'Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW',
  ];
  for (const k of bad)
    assert.throws(
      () => parseVkey(k),
      (e: NoteError) => e.code === 'MALFORMED',
      k,
    );
});

// c2sp.org/tlog-cosignature's example: the witness line's signature carries its timestamp, and the
// signed message is the one the spec prints.
const SOFA = 'example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n';
const W1_LINE = '— witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==';

test("tlog-cosignature: the spec example's line and signed message", () => {
  const sig = parseSignatureLine(W1_LINE);
  assert.equal(sig.name, 'witness.example.com/w1');
  assert.equal(sig.signature.length, 72);
  assert.equal(Number(sig.signature.readBigUInt64BE(0)), 1679315147);
  assert.equal(
    cosignedMessage(SOFA, 1679315147).toString(),
    'cosignature/v1\ntime 1679315147\nexample.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n',
  );
  const note = parseNote(
    `${SOFA}\n— example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n${W1_LINE}\n`,
  );
  assert.equal(note.text, SOFA);
  assert.equal(note.signatures.length, 2);
});

test('tlog-cosignature: a cosignature verifies under its 0x04 vkey, with its timestamp, and not as a 0x01 signature', () => {
  const { privateKey } = generateKeyPairSync('ed25519');
  const vkey = parseVkey(encodeVkey('witness.example/w', SIG_COSIGNATURE_V1, rawPublicKey(privateKey)));
  const line = cosignText(SOFA, 'witness.example/w', privateKey, 1700000000);
  const v = verifyNote(`${SOFA}\n${line}`, [vkey]);
  assert.equal(v.verified[0]!.timestamp, 1700000000);
  // Another time in the line than the one signed.
  const sig = parseSignatureLine(line);
  sig.signature.writeBigUInt64BE(1700000001n, 0);
  const forged = `— witness.example/w ${Buffer.concat([Buffer.from(line.split(' ')[2]!, 'base64').subarray(0, 4), sig.signature]).toString('base64')}\n`;
  assert.throws(
    () => verifyNote(`${SOFA}\n${forged}`, [vkey]),
    (e: NoteError) => e.code === 'BAD_SIGNATURE',
  );
  // The same key as a log key (type 0x01) has another key id: the cosignature is not taken for it.
  const asLog = parseVkey(encodeVkey('witness.example/w', SIG_ED25519, rawPublicKey(privateKey)));
  assert.throws(
    () => verifyNote(`${SOFA}\n${line}`, [asLog]),
    (e: NoteError) => e.code === 'UNVERIFIED',
  );
});
