/**
 * The ledger as C2SP tlog-tiles (docs/protocol.md §16): tile `L/N[.p/W]` is read from the store's
 * complete-subtree hashes, entry bundle `entries/N[.p/W]` from the records' stored JCS lines (each
 * without its `hash`). Both are immutable once they exist, so `writ ledger tiles --out DIR` writes the
 * same bytes the sidecar serves.
 */
import { mkdirSync, writeFileSync, renameSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { WritError } from '../errors.js';
import { recordEntry } from '../ledger/record.js';
import type { LedgerStore } from '../store/types.js';
import { TILE_WIDTH, encodeEntryBundle, nodeLevel, tileExists, tilePath, tilesForSize, type TileRef } from '../transparency/tiles.js';

/** The bytes of a tile or entry bundle of the committed ledger, or undefined when it does not exist (yet). */
export async function readTile(store: LedgerStore, t: TileRef, size?: number): Promise<Buffer | undefined> {
  const committed = size ?? (await store.size());
  if (!tileExists(t, committed)) return undefined;
  const from = t.index * TILE_WIDTH;
  if (t.level !== 'entries') return Buffer.concat(await store.subtreeHashes(nodeLevel(t.level), from, t.width));
  const entries: Buffer[] = [];
  let seq = from;
  for await (const line of store.exportLines(from, from + t.width)) {
    const entry = recordEntry(line);
    if (!entry) throw new WritError('STORE_CORRUPT', `record ${seq} does not hash to its own hash`, { details: { seq } });
    if (entry.length > 0xffff) {
      // tlog-tiles bundles carry entries of at most 65,535 bytes: this record cannot be served as one.
      throw new WritError(
        'INVALID_REQUEST',
        `record ${seq} is ${entry.length} bytes, more than an entry bundle can hold (65535): read it with GET /v1/ledger/records/${seq}`,
        { status: 422 },
      );
    }
    entries.push(entry);
    seq++;
  }
  if (entries.length !== t.width) throw new WritError('STORE_UNAVAILABLE', `records ${from}..${from + t.width - 1} could not all be read`);
  return encodeEntryBundle(entries);
}

/**
 * Writes every tile and entry bundle of the tree of `size` records under `dir` (`dir/tile/…`), as static
 * files for an object store or CDN. A file already there is left alone (tiles never change); a partial
 * tile is written beside the full one when both exist.
 */
export async function writeTiles(store: LedgerStore, dir: string, size: number): Promise<{ written: number; kept: number; skipped: string[] }> {
  let written = 0;
  let kept = 0;
  const skipped: string[] = [];
  for (const t of tilesForSize(size)) {
    const path = join(dir, tilePath(t));
    if (existsSync(path)) {
      kept++;
      continue;
    }
    let bytes: Buffer | undefined;
    try {
      bytes = await readTile(store, t, size);
    } catch (e) {
      if (e instanceof WritError && e.status === 422) {
        skipped.push(`${tilePath(t)}: ${e.message}`);
        continue;
      }
      throw e;
    }
    if (!bytes) continue;
    mkdirSync(dirname(path), { recursive: true });
    // Whole or absent: a reader of the directory never sees half a tile.
    writeFileSync(`${path}.tmp`, bytes);
    renameSync(`${path}.tmp`, path);
    written++;
  }
  return { written, kept, skipped };
}
