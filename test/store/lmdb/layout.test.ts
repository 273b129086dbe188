// The on-disk formats of the LMDB store (src/store/layout.ts): a new store is format 1 (plain text) unless
// the config asks for compression, format 2 (records and table rows LZ4-compressed against the store's
// dictionary); either gives back every record's text byte for byte, opens, verifies and keeps its format.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { open } from 'lmdb';
import { LmdbStore } from '../../../src/store/lmdb/lmdb-store.js';
import { openStore } from '../../../src/store/open.js';
import { FORMAT_KEY, STORE_SUBDIR } from '../../../src/store/layout.js';
import { recordLine } from '../../../src/ledger/record.js';
import { WritError } from '../../../src/errors.js';
import { tempDir } from '../helpers.js';

/** Records of every shape a ledger holds: short, decision-sized, long, non-ASCII, escapes. */
function recordFields(i: number): { kind: string } & Record<string, unknown> {
  switch (i % 5) {
    case 0:
      return { kind: 'k' };
    case 1:
      return {
        kind: 'decision',
        actor: { type: 'Agent', id: `agent-${i}` },
        execution_id: `E-${i}:step`,
        binding: `writ-bind/1:sha256:${(i * 7919).toString(16).padStart(64, '0')}`,
        decision: 'allow',
        reasons: ['permit-all'],
        envelope: { task_id: `T-${i}`, purpose: 'p', evidence_refs: [] },
      };
    case 2:
      return { kind: 'entity', attrs: { blob: 'x'.repeat(300_000 + i) } };
    case 3:
      return { kind: 'note', text: 'é\u2028\u0000"\\ 東京 🙂', n: -0.5, nested: { z: [null, true, 1e21] } };
    default:
      return { kind: 'refusal', code: 'EXECUTION_CONFLICT', message: `m${i}`.repeat(40) };
  }
}

async function writeSome(store: LmdbStore, from: number, count: number): Promise<string[]> {
  const lines: string[] = [];
  for (let i = from; i < from + count; i++) {
    const a = await store.write((tx) => {
      tx.put('executions', `key-${i}`, { execution_id: `E-${i}`, state: 'proposed', records: [i], blob: 'y'.repeat(i % 3 === 0 ? 5000 : 10) });
      return tx.append(recordFields(i));
    });
    lines.push(recordLine(a.record));
  }
  return lines;
}

/** The raw bytes of every stored record and the page count of the records sub-database, read without decompression. */
async function rawRecords(dataDir: string): Promise<{ format: string | undefined; values: Buffer[]; pages: number }> {
  const env = open({ path: join(dataDir, STORE_SUBDIR), maxDbs: 16 });
  try {
    const records = env.openDB<Buffer, number>({ name: 'records', encoding: 'binary' });
    const internal = env.openDB<string, string>({ name: 'internal', encoding: 'string' });
    const values = [...records.getRange({ start: 0 })].map(({ value }) => Buffer.from(value));
    const s = records.getStats() as { treeLeafPageCount: number; treeBranchPageCount: number; overflowPages: number };
    return { format: internal.get(FORMAT_KEY), values, pages: s.treeLeafPageCount + s.treeBranchPageCount + s.overflowPages };
  } finally {
    await env.close();
  }
}

test('a new store is plain text (format 1) by default, and format 2 with store_compression "lz4"', async (t) => {
  for (const [compression, format] of [
    [undefined, '1'],
    ['none', '1'],
    ['lz4', '2'],
  ] as const) {
    const dataDir = tempDir(t);
    const store = await openStore({ dataDir, ...(compression ? { compression } : {}) });
    const lines = await writeSome(store as LmdbStore, 0, 3);
    await store.close();
    const raw = await rawRecords(dataDir);
    assert.equal(raw.format, format, `store_compression ${compression}`);
    const long = lines.filter((l) => Buffer.byteLength(l) >= 64).length;
    assert.equal(raw.values.filter((v) => v[0]! >= 254).length, format === '2' ? long : 0, 'records held compressed');
    if (format === '1')
      assert.deepEqual(
        raw.values.map((v) => v.toString('utf8')),
        lines,
      );
  }
  // A data dir keeps the format it was made in, whatever is asked later.
  const dataDir = tempDir(t);
  await (await openStore({ dataDir, compression: 'lz4' })).close();
  await (await openStore({ dataDir, compression: 'none' })).close();
  assert.equal((await rawRecords(dataDir)).format, '2');
});

test('a format-2 store: records and rows come back byte for byte, across a reopen, and are held compressed', async (t) => {
  const dataDir = tempDir(t);
  let store = await LmdbStore.open({ dataDir, format: '2' });
  const lines = await writeSome(store, 0, 20);
  assert.deepEqual([...store.exportLines()], lines);
  await store.close();
  store = await LmdbStore.open({ dataDir, format: '1' });
  assert.deepEqual([...store.exportLines()], lines, 'the export lines after a reopen are the texts written');
  for (const [seq, line] of lines.entries()) assert.equal(recordLine(store.getRecord(seq)!), line);
  assert.equal(store.get<{ blob: string }>('executions', 'key-3')!.blob, 'y'.repeat(5000));
  assert.equal([...store.entries('executions')].length, 20);
  lines.push(...(await writeSome(store, 20, 5)));
  assert.deepEqual([...store.exportLines()], lines);
  await store.close();
  const raw = await rawRecords(dataDir);
  assert.equal(raw.format, '2');
  // lmdb-js marks a compressed value with a first byte of 254 or 255, bytes UTF-8 text never starts with.
  const compressed = raw.values.filter((v) => v[0]! >= 254).length;
  assert.equal(compressed, lines.filter((l) => Buffer.byteLength(l) >= 64).length, 'every record of 64 bytes or more is compressed');
});

test('a format-1 store (plain text) opens, verifies, takes new records in its own format, and stays format 1', async (t) => {
  const dataDir = tempDir(t);
  let store = await LmdbStore.open({ dataDir, format: '1' });
  const lines = await writeSome(store, 0, 10);
  await store.close();
  // Opened asking for format 2 (as a config with store_compression "lz4" does): an existing store keeps its own.
  store = await LmdbStore.open({ dataDir, format: '2' });
  assert.deepEqual([...store.exportLines()], lines);
  lines.push(...(await writeSome(store, 10, 10)));
  assert.deepEqual([...store.exportLines()], lines);
  assert.equal(store.get<{ blob: string }>('executions', 'key-12')!.blob, 'y'.repeat(5000));
  await store.close();
  const raw = await rawRecords(dataDir);
  assert.equal(raw.format, '1');
  assert.deepEqual(
    raw.values.map((v) => v.toString('utf8')),
    lines,
    'every record is its plain text, readable by the writ that made the store',
  );
});

test('the same records take fewer pages in format 2 than in format 1, and records fill their pages (appended)', async (t) => {
  const pages: Record<string, number> = {};
  let bytes = 0;
  for (const format of ['1', '2'] as const) {
    const dataDir = tempDir(t);
    const store = await LmdbStore.open({ dataDir, format });
    bytes = 0;
    for (let i = 0; i < 60; i++) bytes += Buffer.byteLength(recordLine((await store.write((tx) => tx.append(recordFields(5 * i + 1)))).record));
    await store.close();
    pages[format] = (await rawRecords(dataDir)).pages;
  }
  // Full 4 KiB leaves (at least 3,500 bytes of text each) and one branch page; pages split in half, as
  // LMDB splits the last page of keys put without MDB_APPEND, would need about twice as many.
  const full = Math.ceil(bytes / 3500) + 1;
  assert.ok(pages['1']! <= full, `format 1: ${pages['1']} pages for 60 records of ${bytes} bytes (full pages: ${full})`);
  assert.ok(pages['2']! < pages['1']!, `format 2: ${pages['2']} pages, format 1: ${pages['1']}`);
});

test('a store of an unknown format is refused as STORE_CORRUPT, naming it', async (t) => {
  const dataDir = tempDir(t);
  const store = await LmdbStore.open({ dataDir });
  await store.close();
  const env = open({ path: join(dataDir, STORE_SUBDIR), maxDbs: 16 });
  await env.openDB<string, string>({ name: 'internal', encoding: 'string' }).put(FORMAT_KEY, '9');
  await env.close();
  await assert.rejects(LmdbStore.open({ dataDir }), (e: unknown) => e instanceof WritError && e.code === 'STORE_CORRUPT' && /format 9/.test(e.message));
});
