/**
 * A witness's key file (`writ witness keygen --name NAME --out FILE`): `{"v":1,"name","seed","vkey"}`,
 * mode 0600, never overwritten. `vkey` is the cosignature vkey (type 0x04) logs and policies name it by.
 */
import { randomBytes, type KeyObject } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { WritError } from '../errors.js';
import { privateKeyFromSeed, rawPublicKey } from '../ledger/signing.js';
import { SIG_COSIGNATURE_V1, encodeVkey, isKeyName } from '../transparency/note.js';
import { writeFileDurably } from '../util/durable-file.js';

export interface WitnessKey {
  name: string;
  privateKey: KeyObject;
  vkey: string;
}

function keyOf(name: string, seed: Uint8Array): WitnessKey {
  const privateKey = privateKeyFromSeed(seed);
  return { name, privateKey, vkey: encodeVkey(name, SIG_COSIGNATURE_V1, rawPublicKey(privateKey)) };
}

export function generateWitnessKey(name: string, path: string): WitnessKey {
  if (!isKeyName(name)) throw new WritError('INVALID_REQUEST', `a witness name has no spaces or "+": ${JSON.stringify(name)}`);
  const seed = randomBytes(32);
  const key = keyOf(name, seed);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    writeFileDurably(path, `${JSON.stringify({ v: 1, name, seed: seed.toString('base64'), vkey: key.vkey }, null, 2)}\n`, { mode: 0o600, exclusive: true });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw new WritError('INVALID_REQUEST', `${path} already exists; refusing to overwrite a witness key`);
    throw e;
  }
  return key;
}

export function readWitnessKey(path: string): WitnessKey {
  let file: { name?: unknown; seed?: unknown; vkey?: unknown };
  try {
    file = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new WritError('INVALID_REQUEST', `cannot read witness key ${path}: ${(e as Error).message}`);
  }
  const seed = typeof file?.seed === 'string' ? Buffer.from(file.seed, 'base64') : Buffer.alloc(0);
  if (typeof file?.name !== 'string' || !isKeyName(file.name) || seed.length !== 32)
    throw new WritError('INVALID_REQUEST', `witness key ${path} is not {"v":1,"name","seed"}`);
  const key = keyOf(file.name, seed);
  if (file.vkey !== undefined && file.vkey !== key.vkey) throw new WritError('INVALID_REQUEST', `witness key ${path}: its vkey does not match its seed`);
  return key;
}
