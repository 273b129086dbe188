/**
 * The ledger's C2SP face (docs/protocol.md §16): `GET /ledger/checkpoint` (the latest checkpoint as a
 * signed note, no auth), `GET /ledger/tile/<L>/<N>[.p/<W>]` and `/ledger/tile/entries/<N>[.p/<W>]`
 * (immutable; auditor only unless `public_tiles`), and the tlog-proof form of an inclusion proof.
 */
import type { Context, Env, Hono, MiddlewareHandler } from 'hono';
import { WritError } from '../errors.js';
import type { LedgerStore } from '../store/types.js';
import { formatTlogProof } from '../transparency/proof.js';
import { parseTilePath } from '../transparency/tiles.js';
import type { CheckpointNotes } from './notes.js';
import { readTile } from './tiles.js';

export const NOTE_MEDIA_TYPE = 'text/plain; charset=utf-8';
const TILE_PREFIX = '/ledger/tile/';

export interface TransparencyDeps<E extends Env = Env> {
  notes: CheckpointNotes;
  store: LedgerStore;
  publicTiles: boolean;
  /** The auditor-role middleware of the app. */
  auditor: MiddlewareHandler<E>;
}

export function registerTransparencyRoutes<E extends Env>(app: Hono<E>, d: TransparencyDeps<E>): void {
  app.get('/ledger/checkpoint', async (c) => {
    const latest = await d.notes.latest();
    if (!latest) throw new WritError('NOT_FOUND', 'no checkpoint has been written yet');
    // Mutable: a client reads it again rather than keep it (tlog-tiles: no caching beyond a few seconds).
    return c.body(latest.note, 200, { 'content-type': NOTE_MEDIA_TYPE, 'cache-control': 'no-cache' });
  });
  const tile = async (c: Context<E>) => {
    const ref = parseTilePath(c.req.path.slice(TILE_PREFIX.length));
    if (!ref) throw new WritError('NOT_FOUND', `${c.req.path} is not a tile path (tile/<L>/<N>[.p/<W>], N as x001/x234/067)`);
    const bytes = await readTile(d.store, ref);
    if (!bytes) throw new WritError('NOT_FOUND', `${c.req.path} does not exist (yet) in the ledger`);
    return c.body(new Uint8Array(bytes), 200, {
      'content-type': 'application/octet-stream',
      // A tile's bytes never change once it exists.
      'cache-control': d.publicTiles ? 'public, max-age=31536000, immutable' : 'private, max-age=31536000, immutable',
    });
  };
  if (d.publicTiles) app.get(`${TILE_PREFIX}*`, tile);
  else app.get(`${TILE_PREFIX}*`, d.auditor, tile);
}

/**
 * The C2SP tlog-proof of record `seq`: its inclusion proof in the tree of the latest checkpoint and that
 * checkpoint's note (with the cosignatures held for it). A record no checkpoint covers yet is 404.
 */
export async function tlogProofOf(d: { notes: CheckpointNotes; store: LedgerStore }, seq: number): Promise<string> {
  const latest = await d.notes.latest();
  const size = latest ? Number(latest.record.size) : 0;
  if (!latest || seq >= size) throw new WritError('NOT_FOUND', `record ${seq} is not covered by a checkpoint yet (latest covers ${size} records)`);
  const path = (await d.store.inclusionProof(seq, size)).map((h) => Buffer.from(h, 'hex'));
  return formatTlogProof({ index: seq, path, note: latest.note });
}
