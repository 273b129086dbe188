/**
 * C2SP signed notes (c2sp.org/signed-note), verifier keys (vkeys) and C2SP cosignatures
 * (c2sp.org/tlog-cosignature, Ed25519 `cosignature/v1`). Pure apart from node:crypto.
 *
 * A note is a UTF-8 text ending in a newline, a blank line, then one or more lines
 * `— <key name> base64(uint32 key id ‖ signature)`. A key id is the first four bytes of
 * SHA-256(name ‖ 0x0A ‖ type byte ‖ public key). writ signs checkpoints with type 0x01 (Ed25519 over the
 * note text) and its witnesses cosign with type 0x04 (Ed25519 over `cosignature/v1\ntime <t>\n` ‖ text,
 * the signature carrying the 8-byte big-endian timestamp before the 64 signature bytes).
 */
import { createHash, sign, verify, type KeyObject } from 'node:crypto';
import { publicKeyFromRaw, rawPublicKey } from '../ledger/signing.js';

/** Signature type bytes of c2sp.org/signed-note. */
export const SIG_ED25519 = 0x01;
export const SIG_COSIGNATURE_V1 = 0x04;

/** Verifiers accept at least 16 signatures (the spec's floor); more than this is refused as malformed. */
export const MAX_SIGNATURES = 100;

export class NoteError extends Error {
  constructor(
    readonly code: 'MALFORMED' | 'BAD_SIGNATURE' | 'UNVERIFIED',
    message: string,
    readonly key?: string,
  ) {
    super(message);
    this.name = 'NoteError';
  }
}

/** A key name: non-empty, no Unicode space, no `+` (it separates a vkey's fields). */
export function isKeyName(name: string): boolean {
  return name.length > 0 && !/[\s+\u0085\u00a0\u1680\u180e\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/u.test(name) && !hasControl(name);
}

function hasControl(s: string): boolean {
  // Only newline is allowed in a note, and nowhere in a name.
  return /[\u0000-\u001f\u007f]/.test(s);
}

/** SHA-256(name ‖ 0x0A ‖ type ‖ key)[:4] as an unsigned 32-bit integer. */
export function noteKeyId(name: string, type: number, publicKey: Uint8Array): number {
  return createHash('sha256')
    .update(name, 'utf8')
    .update(Buffer.from([0x0a, type]))
    .update(publicKey)
    .digest()
    .readUInt32BE(0);
}

export interface VerifierKey {
  name: string;
  keyId: number;
  type: number;
  /** The raw 32-byte Ed25519 public key. */
  publicKey: Buffer;
  /** The vkey text it was read from (or would be written as). */
  vkey: string;
}

const hex8 = (n: number) => n.toString(16).padStart(8, '0');

/** `<name>+<8 hex key id>+<base64(type ‖ public key)>`. */
export function encodeVkey(name: string, type: number, publicKey: Uint8Array): string {
  if (!isKeyName(name)) throw new NoteError('MALFORMED', `not a key name: ${JSON.stringify(name)}`);
  if (publicKey.length !== 32) throw new NoteError('MALFORMED', 'an Ed25519 public key is 32 bytes');
  return `${name}+${hex8(noteKeyId(name, type, publicKey))}+${Buffer.concat([Buffer.from([type]), publicKey]).toString('base64')}`;
}

/** Reads a vkey of type 0x01 or 0x04; the key id must be the one its name and key give. */
export function parseVkey(vkey: string): VerifierKey {
  const bad = (why: string) => new NoteError('MALFORMED', `not a vkey (${why}): ${JSON.stringify(vkey.slice(0, 120))}`);
  // The name holds no `+`; the base64 key may.
  const m = /^([^+]*)\+([^+]*)\+(.*)$/s.exec(vkey);
  if (!m) throw bad('want name+keyid+key');
  const [, name, id, key] = m as unknown as [string, string, string, string];
  if (!isKeyName(name)) throw bad('bad key name');
  if (!/^[0-9a-f]{8}$/.test(id)) throw bad('the key id is 8 lower-case hex');
  const raw = strictBase64(key);
  if (raw?.length !== 33) throw bad('the key is base64 of a type byte and 32 bytes');
  const type = raw[0]!;
  if (type !== SIG_ED25519 && type !== SIG_COSIGNATURE_V1)
    throw bad(`signature type 0x${type.toString(16).padStart(2, '0')} is not supported (0x01 Ed25519, 0x04 cosignature/v1)`);
  const publicKey = Buffer.from(raw.subarray(1));
  const keyId = noteKeyId(name, type, publicKey);
  if (hex8(keyId) !== id) throw bad('the key id does not match the name and key');
  return { name, keyId, type, publicKey, vkey };
}

/** Standard base64 that round-trips exactly (no whitespace, padding as written), else undefined. */
export function strictBase64(s: string): Buffer | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) return undefined;
  const b = Buffer.from(s, 'base64');
  return b.toString('base64') === s ? b : undefined;
}

export interface NoteSignature {
  name: string;
  keyId: number;
  /** The signature bytes after the key id. */
  signature: Buffer;
  /** The whole line, with its newline. */
  line: string;
}

export interface Note {
  /** The text, with its final newline. */
  text: string;
  signatures: NoteSignature[];
}

const DASH = '\u2014 ';

/** One signature line. */
export function signatureLine(name: string, keyId: number, signature: Uint8Array): string {
  const id = Buffer.alloc(4);
  id.writeUInt32BE(keyId >>> 0);
  return `${DASH}${name} ${Buffer.concat([id, signature]).toString('base64')}\n`;
}

/** Parses a signature line (with or without its newline). */
export function parseSignatureLine(line: string): NoteSignature {
  const body = line.endsWith('\n') ? line.slice(0, -1) : line;
  const bad = () => new NoteError('MALFORMED', `not a note signature line: ${JSON.stringify(body.slice(0, 120))}`);
  if (!body.startsWith(DASH) || body.includes('\n')) throw bad();
  const rest = body.slice(DASH.length);
  const space = rest.indexOf(' ');
  if (space <= 0) throw bad();
  const name = rest.slice(0, space);
  const raw = strictBase64(rest.slice(space + 1));
  if (!isKeyName(name) || !raw || raw.length < 5) throw bad();
  return { name, keyId: raw.readUInt32BE(0), signature: Buffer.from(raw.subarray(4)), line: `${body}\n` };
}

/** Splits a signed note into its text and signature lines; refuses anything that is not one. */
export function parseNote(input: string | Uint8Array): Note {
  let s: string;
  if (typeof input === 'string') s = input;
  else {
    try {
      s = new TextDecoder('utf-8', { fatal: true }).decode(input);
    } catch {
      throw new NoteError('MALFORMED', 'a note is UTF-8');
    }
  }
  if (/[\u0000-\u0009\u000b-\u001f]/.test(s)) throw new NoteError('MALFORMED', 'a note holds no control character but newline');
  if (!s.endsWith('\n')) throw new NoteError('MALFORMED', 'a note ends with a newline');
  // The text ends at the last blank line.
  const split = s.lastIndexOf('\n\n');
  if (split < 0) throw new NoteError('MALFORMED', 'a note has a blank line before its signatures');
  const text = s.slice(0, split + 1);
  const lines = s.slice(split + 2, -1).split('\n');
  if (lines.length === 0 || (lines.length === 1 && lines[0] === '')) throw new NoteError('MALFORMED', 'a note has at least one signature');
  if (lines.length > MAX_SIGNATURES) throw new NoteError('MALFORMED', `a note has at most ${MAX_SIGNATURES} signatures here`);
  return { text, signatures: lines.map((l) => parseSignatureLine(l)) };
}

/** A note's bytes: text, blank line, signature lines. */
export function formatNote(text: string, lines: string[]): string {
  return `${text}\n${lines.join('')}`;
}

/** The line of an Ed25519 (type 0x01) signature of the text. */
export function signNoteText(text: string, name: string, privateKey: KeyObject): string {
  const keyId = noteKeyId(name, SIG_ED25519, rawPublicKey(privateKey));
  return signatureLine(name, keyId, sign(null, Buffer.from(text, 'utf8'), privateKey));
}

/** What a cosignature/v1 signs: the header, the time line, then the cosigned note's text. */
export function cosignedMessage(text: string, timestamp: number): Buffer {
  return Buffer.from(`cosignature/v1\ntime ${timestamp}\n${text}`, 'utf8');
}

/** The line of a cosignature/v1 (type 0x04) of a checkpoint's text at `timestamp` (POSIX seconds). */
export function cosignText(text: string, name: string, privateKey: KeyObject, timestamp: number): string {
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) throw new RangeError('a cosignature timestamp is a non-negative integer');
  const keyId = noteKeyId(name, SIG_COSIGNATURE_V1, rawPublicKey(privateKey));
  const ts = Buffer.alloc(8);
  ts.writeBigUInt64BE(BigInt(timestamp));
  return signatureLine(name, keyId, Buffer.concat([ts, sign(null, cosignedMessage(text, timestamp), privateKey)]));
}

/** Whether one signature verifies under one key (name and key id already matched). */
export function verifySignature(text: string, sig: NoteSignature, key: VerifierKey): { ok: boolean; timestamp?: number } {
  const pub = publicKeyFromRaw(key.publicKey);
  if (key.type === SIG_ED25519) {
    return { ok: sig.signature.length === 64 && verify(null, Buffer.from(text, 'utf8'), pub, sig.signature) };
  }
  if (sig.signature.length !== 72) return { ok: false };
  const ts = sig.signature.readBigUInt64BE(0);
  if (ts > BigInt(Number.MAX_SAFE_INTEGER)) return { ok: false };
  const timestamp = Number(ts);
  return { ok: verify(null, cosignedMessage(text, timestamp), pub, sig.signature.subarray(8)), timestamp };
}

export interface VerifiedNote extends Note {
  /** The known keys whose signature verified, in signature order (each key once). */
  verified: Array<{ key: VerifierKey; timestamp?: number }>;
}

/**
 * Checks a note's signatures against known keys: a signature whose name and key id match no known key
 * is ignored; one that matches a known key must verify (else BAD_SIGNATURE: the whole note is refused);
 * at least one known key must have signed (else UNVERIFIED).
 */
export function verifyNote(input: string | Uint8Array | Note, keys: VerifierKey[]): VerifiedNote {
  const note = typeof input === 'object' && 'text' in input ? input : parseNote(input);
  const verified: VerifiedNote['verified'] = [];
  for (const sig of note.signatures) {
    const key = keys.find((k) => k.name === sig.name && k.keyId === sig.keyId);
    if (!key) continue;
    const r = verifySignature(note.text, sig, key);
    if (!r.ok) throw new NoteError('BAD_SIGNATURE', `the signature of ${key.name}+${hex8(key.keyId)} does not verify`, key.vkey);
    if (!verified.some((v) => v.key === key)) verified.push(r.timestamp === undefined ? { key } : { key, timestamp: r.timestamp });
  }
  if (verified.length === 0) throw new NoteError('UNVERIFIED', 'no known key signed the note');
  return { ...note, verified };
}
