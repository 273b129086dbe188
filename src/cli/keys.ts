/**
 * `writ keygen [--out FILE] [--data-dir DIR]` writes a new Ed25519 signing key file (0600) and prints
 * `{"key_id","public_key","file"}`; it never overwrites a key.
 * `writ keys rotate [--data-dir DIR]` (the server must be stopped: the data dir lock tells) rotates the
 * data dir key: a `key` record signed by the previous key, the old key file kept as
 * `signing-key.<key_id>.json`; prints `{"key_id","public_key","previous_key_id","seq"}`.
 * Exit 0 on success, 1 when refused (key exists, data dir in use, …), 2 on usage errors.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { isWritError } from '../errors.js';
import { generateKeyFile, rotateSigningKey, SIGNING_KEY_FILE } from '../checkpoints/keys.js';
import { Store } from '../store/store.js';

const DEFAULT_DATA_DIR = '.writ';

export const KEYGEN_USAGE = `usage: writ keygen [--out FILE] [--data-dir DIR]

Generates an Ed25519 ledger signing key and writes it (mode 0600) to FILE, or to
DIR/${SIGNING_KEY_FILE} (default DIR: ${DEFAULT_DATA_DIR}). Never overwrites an existing key.
Prints {"key_id","public_key","file"}.

options:
  --out FILE        where to write the key file
  --data-dir DIR    write DIR/${SIGNING_KEY_FILE} (ignored with --out)
  -h, --help        show this help
`;

export const KEYS_USAGE = `usage: writ keys rotate [--data-dir DIR]

Rotates the ledger signing key of a data dir (default ${DEFAULT_DATA_DIR}); the server must be stopped.
Appends a key record for the new key, signed by the previous key, keeps the previous key file as
DIR/signing-key.<key_id>.json and makes the new key DIR/${SIGNING_KEY_FILE}.
Prints {"key_id","public_key","previous_key_id","seq"}.

options:
  --data-dir DIR    the data dir (default ${DEFAULT_DATA_DIR})
  -h, --help        show this help
`;

function refuse(command: string, e: unknown): number {
  if (!isWritError(e)) throw e;
  process.stderr.write(`writ ${command}: ${e.message}\n`);
  return 1;
}

export async function keygenMain(argv: string[]): Promise<number> {
  let values: { out?: string; 'data-dir'?: string; help?: boolean };
  try {
    ({ values } = parseArgs({ args: argv, options: { out: { type: 'string' }, 'data-dir': { type: 'string' }, help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: false }));
  } catch (e) {
    process.stderr.write(`writ keygen: ${(e as Error).message}\n\n${KEYGEN_USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(KEYGEN_USAGE);
    return 0;
  }
  const file = values.out ?? join(values['data-dir'] ?? DEFAULT_DATA_DIR, SIGNING_KEY_FILE);
  try {
    const key = generateKeyFile(file);
    process.stdout.write(JSON.stringify({ key_id: key.key_id, public_key: key.public_key, file }) + '\n');
    return 0;
  } catch (e) {
    return refuse('keygen', e);
  }
}

export async function keysMain(argv: string[]): Promise<number> {
  let values: { 'data-dir'?: string; help?: boolean };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: argv, options: { 'data-dir': { type: 'string' }, help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: true }));
  } catch (e) {
    process.stderr.write(`writ keys: ${(e as Error).message}\n\n${KEYS_USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(KEYS_USAGE);
    return 0;
  }
  if (positionals.length !== 1 || positionals[0] !== 'rotate') {
    process.stderr.write(`writ keys: expected the subcommand 'rotate'\n\n${KEYS_USAGE}`);
    return 2;
  }
  const dataDir = values['data-dir'] ?? DEFAULT_DATA_DIR;
  let store: Store;
  try {
    store = await Store.open({ dataDir });
  } catch (e) {
    return refuse('keys rotate', e);
  }
  try {
    const { previous, next, record } = await rotateSigningKey(store, dataDir);
    process.stdout.write(JSON.stringify({ key_id: next.key_id, public_key: next.public_key, previous_key_id: previous.key_id, seq: record.seq }) + '\n');
    return 0;
  } catch (e) {
    return refuse('keys rotate', e);
  } finally {
    await store.close();
  }
}
