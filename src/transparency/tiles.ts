/**
 * C2SP tlog-tiles arithmetic (c2sp.org/tlog-tiles), tile height 8. Pure.
 *
 * Tile `L/N` (width W ≤ 256) holds the W consecutive Merkle tree hashes at tree height 8·L with indices
 * N·256 … N·256+W−1: each is the hash of a complete subtree of 256^L leaves. Level 0 holds leaf hashes;
 * the entry bundle `entries/N` holds the entries those leaf hashes are of, each a big-endian uint16
 * length then its bytes. Paths: `tile/<L>/<N>[.p/<W>]`, `tile/entries/<N>[.p/<W>]`, N written as 3-digit
 * groups with all but the last prefixed `x` (1234067 → `x001/x234/067`).
 */
import type { SubtreeReader } from '../ledger/merkle/tree.js';

export const TILE_HEIGHT = 8;
export const TILE_WIDTH = 256;
/** Levels are 0..63 (the spec's range). */
export const MAX_LEVEL = 63;

export interface TileRef {
  /** A tree level of tiles, or 'entries' for an entry bundle. */
  level: number | 'entries';
  index: number;
  /** 1..256: 256 is a full tile. */
  width: number;
}

/** `x001/x234/067` for 1234067. */
export function encodeTileIndex(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`a tile index is a non-negative integer, got ${n}`);
  const groups: string[] = [];
  let rest = n;
  do {
    groups.unshift(String(rest % 1000).padStart(3, '0'));
    rest = Math.floor(rest / 1000);
  } while (rest > 0);
  return groups.map((g, i) => (i < groups.length - 1 ? `x${g}` : g)).join('/');
}

/** The path under `<prefix>/` of a tile: `tile/0/x001/234.p/7`. */
export function tilePath(t: TileRef): string {
  const base = `tile/${t.level === 'entries' ? 'entries' : String(t.level)}/${encodeTileIndex(t.index)}`;
  return t.width === TILE_WIDTH ? base : `${base}.p/${t.width}`;
}

/**
 * Reads the path after `tile/` (`0/x001/234.p/7`, `entries/005`), or undefined when it is not a tile
 * path exactly as the spec writes one (no leading zeros in L or W, 3-digit groups, `x` on all but the last).
 */
export function parseTilePath(path: string): TileRef | undefined {
  const m = /^(entries|0|[1-9][0-9]?)\/((?:x[0-9]{3}\/)*)([0-9]{3})(?:\.p\/([1-9][0-9]{0,2}))?$/.exec(path);
  if (!m) return undefined;
  const level = m[1] === 'entries' ? 'entries' : Number(m[1]);
  if (level !== 'entries' && level > MAX_LEVEL) return undefined;
  const groups = [
    ...(m[2]
      ? m[2]
          .split('/')
          .filter(Boolean)
          .map((g) => g.slice(1))
      : []),
    m[3]!,
  ];
  // A leading zero group would give a second path for the same index.
  if (groups.length > 1 && groups[0] === '000') return undefined;
  if (groups.length > 6) return undefined; // beyond 2^53
  let index = 0;
  for (const g of groups) index = index * 1000 + Number(g);
  if (!Number.isSafeInteger(index)) return undefined;
  const width = m[4] === undefined ? TILE_WIDTH : Number(m[4]);
  // A partial tile is 1..255 wide; a full one has no `.p/` part.
  if (m[4] !== undefined && width >= TILE_WIDTH) return undefined;
  return { level, index, width };
}

/** Leaves one hash of level `level` covers: 256^level. */
export function leavesPerHash(level: number): number {
  return TILE_WIDTH ** level;
}

/** The tree height (in RFC 6962 node levels) of the hashes in a level-L tile. */
export function nodeLevel(level: number | 'entries'): number {
  return level === 'entries' ? 0 : level * TILE_HEIGHT;
}

/** Whether the tile exists in a tree of `size` leaves: its hashes are all complete subtrees. */
export function tileExists(t: TileRef, size: number): boolean {
  const level = t.level === 'entries' ? 0 : t.level;
  const hashes = Math.floor(size / leavesPerHash(level));
  return t.index * TILE_WIDTH + t.width <= hashes;
}

/**
 * Every tile (full, then the partial one of each level) and entry bundle a tree of `size` leaves is
 * represented by, level by level from 0. A tree of 70,000: 273 full level-0 tiles, one of width 112,
 * one full level-1 tile, one of width 17, one level-2 tile of width 1.
 */
export function tilesForSize(size: number): TileRef[] {
  if (!Number.isSafeInteger(size) || size < 0) throw new RangeError(`a tree size is a non-negative integer, got ${size}`);
  const out: TileRef[] = [];
  for (const level of [0, 'entries' as const]) {
    for (const t of levelTiles(level, size)) out.push(t);
  }
  for (let level = 1; leavesPerHash(level) <= size; level++) for (const t of levelTiles(level, size)) out.push(t);
  return out;
}

function* levelTiles(level: number | 'entries', size: number): Iterable<TileRef> {
  const hashes = Math.floor(size / leavesPerHash(level === 'entries' ? 0 : level));
  const full = Math.floor(hashes / TILE_WIDTH);
  for (let i = 0; i < full; i++) yield { level, index: i, width: TILE_WIDTH };
  const partial = hashes % TILE_WIDTH;
  if (partial > 0) yield { level, index: full, width: partial };
}

/** An entry bundle: each entry as a big-endian uint16 length then its bytes. */
export function encodeEntryBundle(entries: Uint8Array[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    if (e.length > 0xffff) throw new RangeError(`an entry of ${e.length} bytes does not fit a tile entry bundle (at most 65535)`);
    const len = Buffer.alloc(2);
    len.writeUInt16BE(e.length);
    parts.push(len, Buffer.from(e.buffer, e.byteOffset, e.byteLength));
  }
  return Buffer.concat(parts);
}

export function decodeEntryBundle(bundle: Uint8Array): Buffer[] {
  const b = Buffer.from(bundle.buffer, bundle.byteOffset, bundle.byteLength);
  const out: Buffer[] = [];
  let at = 0;
  while (at < b.length) {
    if (at + 2 > b.length) throw new RangeError('an entry bundle ends inside a length');
    const len = b.readUInt16BE(at);
    if (at + 2 + len > b.length) throw new RangeError('an entry bundle ends inside an entry');
    out.push(b.subarray(at + 2, at + 2 + len));
    at += 2 + len;
  }
  return out;
}

/** The hashes of a tile (not an entry bundle), read from stored complete subtrees. */
export function tileHashes(t: TileRef & { level: number }, r: SubtreeReader): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < t.width; i++) out.push(r.subtree(nodeLevel(t.level), t.index * TILE_WIDTH + i));
  return out;
}
