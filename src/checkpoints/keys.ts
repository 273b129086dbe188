/**
 * The ledger signing key of a data dir (docs/protocol.md §6): `<dataDir>/signing-key.json`, mode 0600,
 * `{"v":1,"key_id","public_key","seed"}` with the base64 32-byte Ed25519 seed. The first key is
 * announced by a `key` record with signature null; a rotation appends a `key` record signed by the
 * previous key over `keyPayload` and keeps the old key file as `signing-key.<key_id>.json`.
 */
import { randomBytes, type KeyObject } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, statSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { WritError } from '../errors.js';
import { keyIdOf, keyPayload, privateKeyFromSeed, rawPublicKey, signPayload } from '../ledger/signing.js';
import type { LedgerRecord } from '../ledger/record.js';
import type { LedgerStore, WriteTx } from '../store/types.js';

export const SIGNING_KEY_FILE = 'signing-key.json';

export interface SigningKey {
  key_id: string;
  /** Standard base64 of the raw 32-byte public key. */
  public_key: string;
  privateKey: KeyObject;
}

interface KeyFile {
  v: 1;
  key_id: string;
  public_key: string;
  seed: string;
}

/** The key a 32-byte seed determines. */
export function signingKeyFromSeed(seed: Uint8Array): SigningKey {
  const privateKey = privateKeyFromSeed(seed);
  const raw = rawPublicKey(privateKey);
  return { key_id: keyIdOf(raw), public_key: raw.toString('base64'), privateKey };
}

function keyFileText(seed: Uint8Array): string {
  const k = signingKeyFromSeed(seed);
  const file: KeyFile = { v: 1, key_id: k.key_id, public_key: k.public_key, seed: Buffer.from(seed).toString('base64') };
  return `${JSON.stringify(file, null, 2)}\n`;
}

/** Writes a key file (mode 0600, fsync'd); refuses to overwrite an existing file. */
export function writeKeyFile(path: string, seed: Uint8Array): SigningKey {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw new WritError('INVALID_REQUEST', `${path} already exists; refusing to overwrite a signing key`);
    throw e;
  }
  try {
    writeSync(fd, keyFileText(seed));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return signingKeyFromSeed(seed);
}

/** Generates a fresh key into a new file. */
export function generateKeyFile(path: string): SigningKey {
  return writeKeyFile(path, randomBytes(32));
}

/** Reads and checks a key file: the seed must give the key_id and public key it claims. */
export function readKeyFile(path: string): SigningKey {
  let file: KeyFile;
  try {
    file = JSON.parse(readFileSync(path, 'utf8')) as KeyFile;
  } catch (e) {
    throw new WritError('INVALID_REQUEST', `cannot read signing key ${path}: ${(e as Error).message}`);
  }
  const seed = typeof file?.seed === 'string' ? Buffer.from(file.seed, 'base64') : Buffer.alloc(0);
  if (seed.length !== 32) throw new WritError('INVALID_REQUEST', `signing key ${path} has no 32-byte base64 seed`);
  const key = signingKeyFromSeed(seed);
  if (file.key_id !== key.key_id || file.public_key !== key.public_key) {
    throw new WritError('INVALID_REQUEST', `signing key ${path}: key_id/public_key do not match its seed`);
  }
  return key;
}

/** The data dir's signing key, created (0600) when the data dir has none. */
export function loadOrCreateSigningKey(dataDir: string): SigningKey {
  const path = join(dataDir, SIGNING_KEY_FILE);
  if (existsSync(path)) return readKeyFile(path);
  try {
    return generateKeyFile(path);
  } catch (e) {
    // Another process created it between the check and the exclusive create: use that one.
    if (e instanceof WritError && existsSync(path)) return readKeyFile(path);
    throw e;
  }
}

/** The data dir's signing key, or undefined when it has none. */
export function loadSigningKey(dataDir: string): SigningKey | undefined {
  const path = join(dataDir, SIGNING_KEY_FILE);
  return existsSync(path) ? readKeyFile(path) : undefined;
}

/**
 * A deployment's key file named by `signing_key_file` (every replica names the same file), else the
 * data dir's. `ledgerHasKeys`: the ledger already announced keys, so a data dir key that is missing was
 * lost, not never made — refused rather than replaced by a fresh key that the ledger does not know (the
 * operator must restore the file, and a fresh one would sit where it has to go).
 */
export function loadDeploymentKey(o: { dataDir: string; keyFile?: string | null; ledgerHasKeys?: boolean; ledgerWhere?: string }): SigningKey {
  if (o.keyFile) return readKeyFile(o.keyFile);
  const path = join(o.dataDir, SIGNING_KEY_FILE);
  if (o.ledgerHasKeys && !existsSync(path)) {
    // `ledgerWhere` names where the ledger is (the data dir, or a PostgreSQL database without its password).
    const ledger = o.ledgerWhere ?? `the ledger in ${o.dataDir}`;
    throw new WritError('STORE_CORRUPT', `${ledger} has signing keys but ${path} is missing: restore it (or name the key with signing_key_file)`, {
      details: { seq: null },
    });
  }
  return loadOrCreateSigningKey(o.dataDir);
}

/**
 * Refuses a data dir whose signing key outlived its ledger: a store directory whose data.mdb is absent
 * or empty, beside an existing signing-key.json, means the ledger was deleted or truncated, not never
 * made (the store is created before the key, and LMDB writes its meta pages on creation). Starting
 * would open a new, empty ledger under the old key — every acknowledged decision gone and every
 * `invoking` execution reusable. (A key put there before the first start, with no store directory
 * yet, is a fresh deployment's and is used.)
 */
export function refuseLostLedger(dataDir: string, dataFile: string): void {
  if (!existsSync(join(dataDir, SIGNING_KEY_FILE)) || !existsSync(dirname(dataFile))) return;
  let size: number;
  try {
    size = statSync(dataFile).size;
  } catch {
    size = 0;
  }
  if (size === 0) {
    throw new WritError(
      'STORE_CORRUPT',
      `${dataDir} has a signing key but its ledger (${dataFile}) is ${existsSync(dataFile) ? 'empty' : 'missing'}: restore the store, or start on a ` +
        `fresh data dir`,
      {
        details: { seq: null },
      },
    );
  }
}

/** The meta row of a shared store naming the key its first key record announced. */
const LEDGER_KEY = 'ledger_key';
/** That row, as a write declares it in its `reads` (isCurrentDeploymentKey reads it). */
export const LEDGER_KEY_READ: ['meta', string] = ['meta', LEDGER_KEY];

/**
 * Appends the first `key` record `{kind:'key', key_id, public_key, signature:null}` when the ledger
 * has none. When it has keys, the data dir key must be the latest of them (else checkpoints would be
 * signed by a key no verifier knows): a mismatch is refused.
 */
export async function ensureKeyRecord(store: LedgerStore, key: SigningKey): Promise<LedgerRecord | undefined> {
  const keys = await store.keys();
  if (keys.length > 0) {
    const latest = keys[keys.length - 1]!;
    if (latest.key_id !== key.key_id || latest.public_key !== key.public_key) {
      throw new WritError(
        'STORE_CORRUPT',
        `the signing key for ${store.location} (${key.key_id}) is not the ledger's current key (${latest.key_id}); restore ${SIGNING_KEY_FILE} or rotate ` +
          `with 'writ keys rotate'`,
        { details: { seq: null, key_id: key.key_id, ledger_key_id: latest.key_id } },
      );
    }
    return undefined;
  }
  // Replicas starting together: the first transaction (under the store's write lock) writes the
  // record; the others find the meta row and write nothing.
  const record = await store.write(
    (tx) => {
      if (store.shared) {
        const announced = tx.get<{ key_id: string }>('meta', LEDGER_KEY);
        if (announced) return { announced: announced.key_id };
        tx.put('meta', LEDGER_KEY, { key_id: key.key_id, public_key: key.public_key });
      }
      return { record: tx.append({ kind: 'key', key_id: key.key_id, public_key: key.public_key, signature: null }).record };
    },
    { label: 'key', reads: [LEDGER_KEY_READ] },
  );
  if ('record' in record) return record.record;
  if (record.announced !== key.key_id) {
    throw new WritError('STORE_CORRUPT', `the signing key for ${store.location} (${key.key_id}) is not the ledger's current key (${record.announced})`, {
      details: { seq: null, key_id: key.key_id, ledger_key_id: record.announced },
    });
  }
  return undefined;
}

/** A file beside a key file, named from its stem: `signing-key.json` → `signing-key.<tag>.json`. */
function besideKeyFile(keyFile: string, tag: string): string {
  const base = basename(keyFile);
  const stem = base.endsWith('.json') ? base.slice(0, -'.json'.length) : base;
  return join(dirname(keyFile), `${stem}.${tag}.json`);
}

export interface RotateOptions {
  /** The key in force (a data dir's `signing-key.json`, or the deployment's `signing_key_file`). */
  keyFile: string;
  /**
   * Where to write the new key, leaving `keyFile` untouched (e.g. a read-only mounted secret, replaced
   * by the operator afterwards). Without it the new key takes `keyFile`'s place and the old one is kept
   * beside it as `<stem>.<old key_id>.json`.
   */
  out?: string;
}

/**
 * Rotates a ledger's signing key. The new key file is written first (aside, or at `out`), then the
 * `key` record signed by the previous key is committed, then (in place) the files are swapped.
 *
 * LMDB: the store must be open, i.e. its lock held — the server is stopped. PostgreSQL: replicas may
 * keep running; the same transaction moves the deployment's `ledger_key` meta row to the new key, so a
 * replica still holding the old key stops signing checkpoints (startCheckpointer) and one restarted
 * with it refuses to start (ensureKeyRecord), and of two rotations racing one commits, the other is
 * refused.
 */
export async function rotateSigningKey(
  store: LedgerStore,
  o: RotateOptions,
): Promise<{ previous: SigningKey; next: SigningKey; record: LedgerRecord; file: string }> {
  if (!existsSync(o.keyFile)) throw new WritError('INVALID_REQUEST', `no signing key at ${o.keyFile} to rotate`);
  const previous = readKeyFile(o.keyFile);
  await ensureKeyRecord(store, previous);
  const seed = randomBytes(32);
  let newFile: string;
  if (o.out !== undefined) {
    newFile = o.out;
  } else {
    newFile = besideKeyFile(o.keyFile, 'next');
    if (existsSync(newFile)) renameSync(newFile, `${newFile}.${Date.now()}.abandoned`);
  }
  const next = writeKeyFile(newFile, seed);
  const signature = signPayload(previous.privateKey, keyPayload({ key_id: next.key_id, public_key: next.public_key }));
  let record: LedgerRecord;
  try {
    record = await store.write(
      (tx) => {
        const current = isCurrentDeploymentKey(store, tx, previous);
        if (!current.current) {
          throw new WritError('STORE_CORRUPT', `the ledger's key is already ${current.ledgerKeyId}, not ${previous.key_id}: another rotation committed first`, {
            details: { seq: null, key_id: previous.key_id, ledger_key_id: current.ledgerKeyId },
          });
        }
        if (store.shared) tx.put('meta', LEDGER_KEY, { key_id: next.key_id, public_key: next.public_key });
        return tx.append({ kind: 'key', key_id: next.key_id, public_key: next.public_key, signature }).record;
      },
      { label: 'key', reads: [LEDGER_KEY_READ] },
    );
  } catch (e) {
    // Never announced: the new key must not be mistaken for the ledger's.
    renameSync(newFile, `${newFile}.${Date.now()}.abandoned`);
    throw e;
  }
  if (o.out !== undefined) return { previous, next, record, file: o.out };
  renameSync(o.keyFile, besideKeyFile(o.keyFile, previous.key_id));
  renameSync(newFile, o.keyFile);
  return { previous, next, record, file: o.keyFile };
}

/**
 * Whether `key` is still the key a shared store's deployment signs with (the `ledger_key` meta row a
 * rotation moves). Read inside a write transaction; true on a store that is not shared (LMDB's key can
 * only change while its server is stopped) and when the row is missing.
 */
export function isCurrentDeploymentKey(store: LedgerStore, tx: WriteTx, key: SigningKey): { current: true } | { current: false; ledgerKeyId: string } {
  if (!store.shared) return { current: true };
  const announced = tx.get<{ key_id: string }>('meta', LEDGER_KEY);
  return !announced || announced.key_id === key.key_id ? { current: true } : { current: false, ledgerKeyId: announced.key_id };
}
