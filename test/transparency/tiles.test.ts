import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { memoryReader, rootAt, type SubtreeReader } from '../../src/ledger/merkle/tree.js';
import { nodeHash } from '../../src/ledger/merkle/hasher.js';
import {
  TILE_WIDTH,
  decodeEntryBundle,
  encodeEntryBundle,
  encodeTileIndex,
  parseTilePath,
  tileExists,
  tileHashes,
  tilePath,
  tilesForSize,
  type TileRef,
} from '../../src/transparency/tiles.js';

test('tlog-tiles: index path elements, as the spec writes 1234067', () => {
  assert.equal(encodeTileIndex(1234067), 'x001/x234/067');
  assert.equal(encodeTileIndex(0), '000');
  assert.equal(encodeTileIndex(999), '999');
  assert.equal(encodeTileIndex(1000), 'x001/000');
  assert.equal(tilePath({ level: 0, index: 1234067, width: 256 }), 'tile/0/x001/x234/067');
  assert.equal(tilePath({ level: 'entries', index: 5, width: 7 }), 'tile/entries/005.p/7');
  assert.equal(tilePath({ level: 2, index: 0, width: 1 }), 'tile/2/000.p/1');
});

test('tlog-tiles: paths parse back, and only as the spec writes them', () => {
  for (const t of [
    { level: 0, index: 1234067, width: 256 },
    { level: 'entries', index: 5, width: 7 },
    { level: 63, index: 0, width: 255 },
  ] as TileRef[]) {
    assert.deepEqual(parseTilePath(tilePath(t).slice('tile/'.length)), t);
  }
  for (const bad of [
    '0/67',
    '0/0067',
    '00/067',
    '64/000',
    '0/x000/067',
    '0/001/067',
    '0/067.p/0',
    '0/067.p/256',
    '0/067.p/07',
    '0/067.p/',
    'entries/067/',
    'x/067',
    '0/X001/067',
  ]) {
    assert.equal(parseTilePath(bad), undefined, bad);
  }
});

test("tlog-tiles: the tiles of a tree of 70,000 and of 256 are the spec's", () => {
  const tiles = tilesForSize(70000);
  const count = (level: number | 'entries', width?: number) => tiles.filter((t) => t.level === level && (width === undefined || t.width === width)).length;
  assert.equal(count(0, 256), 273);
  assert.deepEqual(
    tiles.filter((t) => t.level === 0 && t.width < 256),
    [{ level: 0, index: 273, width: 112 }],
  );
  assert.equal(count('entries'), 274);
  assert.equal(count(1, 256), 1);
  assert.deepEqual(
    tiles.filter((t) => t.level === 1 && t.width < 256),
    [{ level: 1, index: 1, width: 17 }],
  );
  assert.deepEqual(
    tiles.filter((t) => t.level === 2),
    [{ level: 2, index: 0, width: 1 }],
  );
  assert.deepEqual(
    tilesForSize(256).filter((t) => t.level !== 'entries'),
    [
      { level: 0, index: 0, width: 256 },
      { level: 1, index: 0, width: 1 },
    ],
  );
  assert.deepEqual(tilesForSize(0), []);
  assert.equal(tileExists({ level: 0, index: 0, width: 5 }, 5), true);
  assert.equal(tileExists({ level: 0, index: 0, width: 6 }, 5), false);
  assert.equal(tileExists({ level: 1, index: 0, width: 1 }, 255), false);
});

const leafOf = (i: number) =>
  createHash('sha256')
    .update(Buffer.from([0]))
    .update(String(i))
    .digest();

/** A reader of complete subtrees that knows nothing but the tiles: what a tlog-tiles client does. */
function tilesOnlyReader(tiles: Map<string, Buffer[]>): SubtreeReader {
  const reader: SubtreeReader = {
    subtree(level, index) {
      const tileLevel = Math.floor(level / 8);
      const rest = level % 8;
      if (rest === 0) {
        const t = Math.floor(index / TILE_WIDTH);
        const full = tiles.get(`${tileLevel}/${t}/256`);
        const partial = [...tiles.keys()].find((k) => k.startsWith(`${tileLevel}/${t}/`));
        const hashes = full ?? tiles.get(partial!)!;
        return hashes[index % TILE_WIDTH]!;
      }
      return nodeHash(reader.subtree(level - 1, index * 2), reader.subtree(level - 1, index * 2 + 1));
    },
  };
  return reader;
}

test("tlog-tiles: tiles of trees of 1, 255, 256, 257 and 65,537 leaves give the RFC 9162 root, and each level-1 hash is its full level-0 tile's root", () => {
  const leaves = Array.from({ length: 65537 }, (_, i) => leafOf(i));
  const stored = memoryReader(leaves);
  for (const size of [1, 255, 256, 257, 65537]) {
    const tiles = new Map<string, Buffer[]>();
    for (const t of tilesForSize(size)) {
      if (t.level === 'entries') continue;
      const hashes = tileHashes(t as TileRef & { level: number }, stored);
      assert.equal(hashes.length, t.width);
      tiles.set(`${t.level}/${t.index}/${t.width}`, hashes);
    }
    assert.deepEqual(rootAt(size, tilesOnlyReader(tiles)), rootAt(size, stored), `size ${size}`);
  }
  // Level 1, hash 3 = the MTH of level-0 tile 3's 256 hashes.
  let row: Buffer[] = leaves.slice(3 * 256, 4 * 256);
  while (row.length > 1) row = Array.from({ length: row.length / 2 }, (_, i) => nodeHash(row[2 * i]!, row[2 * i + 1]!));
  assert.deepEqual(tileHashes({ level: 1, index: 0, width: 256 }, stored)[3], row[0]);
});

test('tlog-tiles: entry bundles are uint16-length-prefixed entries', () => {
  const entries = [Buffer.from('a'), Buffer.alloc(0), Buffer.alloc(65535, 1)];
  const bundle = encodeEntryBundle(entries);
  assert.deepEqual(bundle.subarray(0, 3), Buffer.from([0, 1, 0x61]));
  assert.deepEqual(decodeEntryBundle(bundle), entries);
  assert.throws(() => encodeEntryBundle([Buffer.alloc(65536)]), RangeError);
  assert.throws(() => decodeEntryBundle(Buffer.from([0, 5, 1])), RangeError);
});
