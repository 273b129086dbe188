/**
 * Ed25519 signing payloads and helpers for checkpoints and key records (docs/protocol.md §6). Pure apart
 * from node:crypto. Raw public keys are 32 bytes, written as standard base64.
 */
import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { jcs, sha256Hex } from '../util/canonical.js';

// DER prefixes that wrap a raw 32-byte Ed25519 key as PKCS#8 / SPKI, so node:crypto can load it.
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/** `ed25519:` + first 16 hex of SHA-256(raw public key). */
export function keyIdOf(publicKeyRaw: Uint8Array): string {
  return `ed25519:${sha256Hex(publicKeyRaw).slice(0, 16)}`;
}

export function checkpointPayload(c: { key_id: string; root: string; size: number }): string {
  return `writ-checkpoint/1\n${jcs({ key_id: c.key_id, root: c.root, size: c.size })}`;
}

export function keyPayload(k: { key_id: string; public_key: string }): string {
  return `writ-key/1\n${jcs({ key_id: k.key_id, public_key: k.public_key })}`;
}

export function privateKeyFromSeed(seed: Uint8Array): KeyObject {
  if (seed.length !== 32) throw new TypeError('an Ed25519 seed is 32 bytes');
  return createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
}

/** What a `chain_break` record (operator repair) signs with the data dir key. */
export function chainBreakPayload(c: { last_good_hash: string; last_good_seq: number; reason: string }): string {
  return `writ-chain-break/1\n${jcs({ last_good_hash: c.last_good_hash, last_good_seq: c.last_good_seq, reason: c.reason })}`;
}

export function publicKeyFromRaw(raw: Uint8Array): KeyObject {
  if (raw.length !== 32) throw new TypeError('an Ed25519 public key is 32 bytes');
  return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
}

/** The raw 32 bytes of an Ed25519 public key object. */
export function rawPublicKey(key: KeyObject): Buffer {
  const der = createPublicKey(key).export({ format: 'der', type: 'spki' });
  return Buffer.from(der.subarray(der.length - 32));
}

/** Standard base64 Ed25519 signature of a UTF-8 payload. */
export function signPayload(privateKey: KeyObject, payload: string): string {
  return sign(null, Buffer.from(payload, 'utf8'), privateKey).toString('base64');
}

/**
 * Imported public keys by their raw bytes (hex). A ledger holds a handful of keys and `writ verify`
 * checks a signature every thousand records: importing the key again each time (DER wrap + parse)
 * cost about as much as the signature check itself. Bounded, so hostile input cannot grow it.
 */
const importedKeys = new Map<string, KeyObject>();
const MAX_IMPORTED_KEYS = 64;

function importedPublicKey(raw: Uint8Array): KeyObject {
  const id = Buffer.from(raw).toString('hex');
  let key = importedKeys.get(id);
  if (key === undefined) {
    key = publicKeyFromRaw(raw);
    if (importedKeys.size >= MAX_IMPORTED_KEYS) importedKeys.clear();
    importedKeys.set(id, key);
  }
  return key;
}

/** True when `signatureB64` is a valid Ed25519 signature of `payload` by the raw public key. */
export function verifyPayload(publicKeyRaw: Uint8Array, payload: string, signatureB64: string): boolean {
  try {
    const sig = Buffer.from(signatureB64, 'base64');
    if (sig.length !== 64 || sig.toString('base64') !== signatureB64) return false;
    return verify(null, Buffer.from(payload, 'utf8'), importedPublicKey(publicKeyRaw), sig);
  } catch {
    return false;
  }
}
