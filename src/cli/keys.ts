/**
 * `writ keygen [--out FILE] [--data-dir DIR]` writes a new Ed25519 signing key file (0600) and prints
 * `{"key_id","public_key","file"}`; it never overwrites a key.
 * `writ keys rotate [--config FILE] [--data-dir DIR] [--database-url URL] [--signing-key-file FILE] [--out FILE]`
 * rotates a deployment's key (LMDB: the server must be stopped, the data dir lock tells; PostgreSQL:
 * replicas may run): a `key` record signed by the previous key, the old key file kept as
 * `<name>.<key_id>.json` (or the new key written to --out); prints
 * `{"key_id","public_key","previous_key_id","seq","file"}`.
 * Exit 0 on success, 1 when refused (key exists, data dir in use, …), 2 on usage errors.
 */
import { join, resolve } from 'node:path';
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { isWritError, WritError } from '../errors.js';
import { generateKeyFile, rotateSigningKey, SIGNING_KEY_FILE } from '../checkpoints/keys.js';
import type { WritConfig } from '../config/config.js';
import { STORE_FLAG_OPTIONS, configOfStoreFlags, type StoreFlags } from './store-flags.js';
import { openStore } from '../store/open.js';
import type { LedgerStore } from '../store/types.js';

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

export const KEYS_USAGE = `usage: writ keys rotate [--config FILE] [--data-dir DIR] [--database-url URL]
                       [--signing-key-file FILE] [--out FILE]

Rotates the ledger signing key of a deployment, found as \`writ serve\` finds it: the config file (flag
or WRIT_CONFIG), then the flags; WRIT_DATABASE_URL names the database. Appends a key record for the new
key, signed by the previous key, and prints {"key_id","public_key","previous_key_id","seq","file"}.

The key in force is --signing-key-file (signing_key_file), else DIR/${SIGNING_KEY_FILE} (default DIR:
${DEFAULT_DATA_DIR}). The new key takes its place and the previous one is kept beside it as
<name>.<previous key_id>.json; with --out FILE the new key is written to FILE instead and the key file
is left as it is (a read-only mounted secret: replace it with FILE yourself).

LMDB: the server must be stopped (the data dir lock tells). PostgreSQL (database_url): replicas may keep
running and deciding, but one still holding the previous key writes no more checkpoints and says so;
restart each with the new key file (one restarted with the previous key refuses to start).

options:
  --config FILE            the deployment's config (as writ serve --config)
  --data-dir DIR           the data dir (default ${DEFAULT_DATA_DIR})
  --database-url URL       the deployment's PostgreSQL database (or WRIT_DATABASE_URL)
  --signing-key-file FILE  the key file in force (signing_key_file)
  --out FILE               write the new key to FILE, leave the key file untouched
  -h, --help               show this help
`;

function refuse(command: string, e: unknown): number {
  if (!isWritError(e)) throw e;
  process.stderr.write(`writ ${command}: ${e.message}\n`);
  return 1;
}

export async function keygenMain(argv: string[]): Promise<number> {
  let values: { out?: string; 'data-dir'?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { out: { type: 'string' }, 'data-dir': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }));
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
    process.stdout.write(`${JSON.stringify({ key_id: key.key_id, public_key: key.public_key, file })}\n`);
    return 0;
  } catch (e) {
    return refuse('keygen', e);
  }
}

export async function keysMain(argv: string[]): Promise<number> {
  let values: StoreFlags;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: argv, options: STORE_FLAG_OPTIONS, strict: true, allowPositionals: true }));
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
  let config: WritConfig;
  try {
    config = configOfStoreFlags(values);
  } catch (e) {
    return refuse('keys rotate', e);
  }
  // The key writ serve would sign with (loadDeploymentKey): signing_key_file, else the data dir's.
  const keyFile = config.signing_key_file ?? join(config.data_dir, SIGNING_KEY_FILE);
  let store: LedgerStore;
  try {
    // Nothing to rotate without the key in force: refused before the store is opened, so a mistyped
    // --data-dir does not leave a new, empty store behind.
    if (!existsSync(keyFile)) throw new WritError('STORE_UNAVAILABLE', `no signing key at ${keyFile}: check --data-dir (or --signing-key-file)`);
    store = await openStore({ dataDir: config.data_dir, databaseUrl: config.database_url });
  } catch (e) {
    return refuse('keys rotate', e);
  }
  try {
    const { previous, next, record, file } = await rotateSigningKey(store, { keyFile, ...(values.out !== undefined ? { out: resolve(values.out) } : {}) });
    process.stdout.write(`${JSON.stringify({ key_id: next.key_id, public_key: next.public_key, previous_key_id: previous.key_id, seq: record.seq, file })}\n`);
    return 0;
  } catch (e) {
    return refuse('keys rotate', e);
  } finally {
    await store.close();
  }
}
