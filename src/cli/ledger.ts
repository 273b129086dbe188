/**
 * `writ ledger tiles --out DIR` (docs/protocol.md §16): writes the ledger's C2SP tiles and entry bundles
 * for the tree of its latest checkpoint, and that checkpoint as a signed note (`DIR/checkpoint`), as
 * static files an object store or CDN serves as a tlog-tiles log. The bytes are the ones the sidecar
 * serves at /ledger/…; files already there are kept (tiles never change). An LMDB data dir is read
 * while its server is stopped; a PostgreSQL store at any time. Exit 0 done, 1 refused, 2 usage.
 */
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { isWritError, WritError } from '../errors.js';
import { readKeyFile, SIGNING_KEY_FILE } from '../checkpoints/keys.js';
import { CheckpointNotes, defaultOrigin } from '../checkpoints/notes.js';
import { writeTiles } from '../checkpoints/tiles.js';
import type { WritConfig } from '../config/config.js';
import { STORE_FLAG_OPTIONS, configOfStoreFlags, type StoreFlags } from './store-flags.js';
import { openStore } from '../store/open.js';
import type { LedgerStore } from '../store/types.js';

const USAGE = `usage: writ ledger tiles --out DIR [--config FILE] [--data-dir DIR] [--database-url URL] [--signing-key-file FILE]

Writes DIR/checkpoint (the latest checkpoint as a C2SP signed note, signed by the key in force, origin
log_origin) and DIR/tile/<L>/<N>[.p/<W>], DIR/tile/entries/<N>[.p/<W>] (C2SP tlog-tiles) for its tree.
Serve DIR as <prefix>/ for any tlog-tiles client (docs/protocol.md §16). Files already in DIR are kept.
`;

export async function main(argv: string[]): Promise<number> {
  let values: StoreFlags;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: argv, options: STORE_FLAG_OPTIONS, strict: true, allowPositionals: true }));
  } catch (e) {
    process.stderr.write(`writ ledger: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (positionals.length !== 1 || positionals[0] !== 'tiles' || !values.out) {
    process.stderr.write(`writ ledger: expected 'tiles --out DIR'\n\n${USAGE}`);
    return 2;
  }
  let config: WritConfig;
  let store: LedgerStore;
  try {
    config = configOfStoreFlags(values);
    const keyFile = config.signing_key_file ?? join(config.data_dir, SIGNING_KEY_FILE);
    // No key, no ledger: refused before the store is opened, so a mistyped --data-dir leaves nothing behind.
    if (!existsSync(keyFile)) throw new WritError('STORE_UNAVAILABLE', `no signing key at ${keyFile}: check --data-dir (or --signing-key-file)`);
    const key = readKeyFile(keyFile);
    store = await openStore({ dataDir: config.data_dir, databaseUrl: config.database_url });
    try {
      const notes = new CheckpointNotes(store, key, config.log_origin ?? (await defaultOrigin(store, key)));
      const latest = await notes.latest();
      if (!latest) throw new WritError('NOT_FOUND', 'the ledger has no checkpoint yet');
      const out = resolve(values.out);
      const size = Number(latest.record.size);
      const report = await writeTiles(store, out, size);
      mkdirSync(out, { recursive: true });
      // Last, so a client never reads a checkpoint whose tiles are not there yet.
      writeFileSync(join(out, 'checkpoint.tmp'), latest.note);
      renameSync(join(out, 'checkpoint.tmp'), join(out, 'checkpoint'));
      process.stdout.write(
        `${JSON.stringify({ ok: true, origin: notes.origin, size, written: report.written, kept: report.kept, skipped: report.skipped })}\n`,
      );
      return report.skipped.length > 0 ? 1 : 0;
    } finally {
      await store.close();
    }
  } catch (e) {
    if (!isWritError(e)) throw e;
    process.stderr.write(`writ ledger tiles: ${e.code}: ${e.message}\n`);
    return 1;
  }
}
