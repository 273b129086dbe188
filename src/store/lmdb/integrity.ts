/**
 * Integrity checks over a store's raw sub-databases (startup integrity): the chain tail is
 * re-hashed and re-linked, and the latest checkpoint's root is recomputed from the stored Merkle nodes
 * and its signature checked. A failure names the first bad seq. `scanChain` is the full walk that
 * `writ repair` uses to find the last good record.
 */
import { WritError } from '../../errors.js';
import { jcs } from '../../util/canonical.js';
import { recordHash, ZERO_HASH, type LedgerRecord } from '../../ledger/record.js';
import { bytesToHash, hashToBytes } from '../../ledger/merkle/hasher.js';
import { MerkleAccumulator } from '../../ledger/merkle/compact-range.js';
import { rootAt, type SubtreeReader } from '../../ledger/merkle/tree.js';
import { checkpointPayload, verifyPayload } from '../../ledger/signing.js';
import type { StoreDbs } from '../layout.js';

/** How many records at the end of the chain are re-hashed on every open. */
export const DEFAULT_TAIL_CHECK = 1000;

export interface ChainHead {
  size: number;
  head: string;
}

/** Reads complete-subtree hashes from the stored merkle nodes (committed state). */
export function storedReader(dbs: StoreDbs): SubtreeReader {
  return {
    subtree(level: number, index: number): Buffer {
      const v = dbs.merkle.get([level, index]);
      if (v === undefined || v.length !== 32) throw new Error(`merkle node (${level}, ${index}) is missing`);
      return Buffer.from(v);
    },
  };
}

/** Why the text stored at `seq` is not a valid record following `prev`, or the record itself. */
export function checkRecordText(text: string | undefined, seq: number, prev: string): { record: LedgerRecord } | { problem: string } {
  if (text === undefined) return { problem: 'record is missing' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { problem: 'record is not JSON' };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return { problem: 'record is not an object' };
  const r = parsed as LedgerRecord;
  if (jcs(r) !== text) return { problem: 'record text is not canonical (JCS)' };
  if (r.seq !== seq) return { problem: `record claims seq ${String(r.seq)}` };
  if (r.v !== 1 || typeof r.kind !== 'string' || typeof r.ts !== 'string') return { problem: 'record header is malformed' };
  if (r.prev !== prev) return { problem: 'prev does not link to the previous record' };
  if (typeof r.hash !== 'string' || recordHash(r) !== r.hash) return { problem: 'hash does not match the record' };
  return { record: r };
}

/** The record stored at `seq` when it parses and its hash matches, else why not (links unchecked). */
function parseHashed(text: string | undefined, seq: number): LedgerRecord | string {
  const checked = checkRecordText(text, seq, '');
  if ('record' in checked) return checked.record;
  if (checked.problem !== 'prev does not link to the previous record') return checked.problem;
  const r = JSON.parse(text!) as LedgerRecord;
  return recordHash(r) === r.hash ? r : 'hash does not match the record';
}

/** Size and head of the stored chain, from its last record (no checking). */
export function readHead(dbs: StoreDbs): ChainHead {
  for (const { key, value } of dbs.records.getRange({ reverse: true, limit: 1 })) {
    let head = ZERO_HASH;
    try {
      head = (JSON.parse(value) as LedgerRecord).hash;
    } catch {
      // left as ZERO_HASH: the integrity check reports the record
    }
    return { size: key + 1, head };
  }
  return { size: 0, head: ZERO_HASH };
}

function corrupt(dataDir: string, seq: number | null, why: string): WritError {
  const where = seq === null ? '' : ` at seq ${seq}`;
  return new WritError(
    'STORE_CORRUPT',
    `store in ${dataDir} is corrupt${where}: ${why}; run 'writ repair --data-dir ${dataDir}' to cut the chain at the last good record`,
    {
      details: { seq },
    },
  );
}

function leafMatches(dbs: StoreDbs, seq: number, hash: string): boolean {
  const leaf = dbs.merkle.get([0, seq]);
  return leaf !== undefined && Buffer.from(leaf).equals(hashToBytes(hash));
}

/** The latest record of a kind, via the kind index. */
export function latestOfKind(dbs: StoreDbs, kind: string): LedgerRecord | undefined {
  for (const key of dbs.indexes.idx_kind.getKeys({ start: [kind, Number.MAX_SAFE_INTEGER], end: [kind, -1], reverse: true, limit: 1 })) {
    const text = dbs.records.get(key[1]);
    if (text !== undefined) return JSON.parse(text) as LedgerRecord;
  }
  return undefined;
}

/** Every record of a kind in seq order, via the kind index. */
export function* recordsOfKind(dbs: StoreDbs, kind: string): Iterable<LedgerRecord> {
  for (const key of dbs.indexes.idx_kind.getKeys({ start: [kind, 0], end: [kind, Number.MAX_SAFE_INTEGER] })) {
    const text = dbs.records.get(key[1]);
    if (text !== undefined) yield JSON.parse(text) as LedgerRecord;
  }
}

/** Public keys of the ledger's key records (raw bytes by key_id). */
export function ledgerKeys(dbs: StoreDbs): Map<string, Buffer> {
  const keys = new Map<string, Buffer>();
  for (const r of recordsOfKind(dbs, 'key')) {
    if (typeof r.key_id === 'string' && typeof r.public_key === 'string') keys.set(r.key_id, Buffer.from(r.public_key, 'base64'));
  }
  return keys;
}

/**
 * The check run on every open: contiguous seqs, the last `tail` records re-hashed and linked (and
 * matching their Merkle leaves), and the latest checkpoint's root and signature. Returns the head;
 * throws WritError STORE_CORRUPT with details {seq} naming the first bad seq.
 */
export function checkIntegrity(dbs: StoreDbs, dataDir: string, tail = DEFAULT_TAIL_CHECK): ChainHead {
  const { size, head } = readHead(dbs);
  if (size === 0) return { size, head };
  // Gaps anywhere: the entry count of a contiguous 0..size-1 chain is exactly size.
  const count = (dbs.records.getStats() as { entryCount: number }).entryCount;
  if (count !== size) {
    let expected = 0;
    for (const key of dbs.records.getKeys({ start: 0 })) {
      if (key !== expected) break;
      expected++;
    }
    throw corrupt(dataDir, expected, `seqs are not contiguous (${count} records up to seq ${size - 1})`);
  }
  const start = Math.max(0, size - tail);
  let prev = ZERO_HASH;
  if (start > 0) {
    // The record just before the window: only its own hash matters (its link is outside the window).
    const before = parseHashed(dbs.records.get(start - 1), start - 1);
    if (typeof before === 'string') throw corrupt(dataDir, start - 1, before);
    prev = before.hash;
  }
  let seq = start;
  for (const { key, value } of dbs.records.getRange({ start })) {
    if (key !== seq) throw corrupt(dataDir, seq, 'record is missing');
    const checked = checkRecordText(value, seq, prev);
    if ('problem' in checked) throw corrupt(dataDir, seq, checked.problem);
    if (!leafMatches(dbs, seq, checked.record.hash)) throw corrupt(dataDir, seq, 'Merkle leaf does not match the record hash');
    prev = checked.record.hash;
    seq++;
  }
  // A Merkle leaf past the last record: records were lost from the end (a truncated store).
  if (dbs.merkle.get([0, size]) !== undefined) throw corrupt(dataDir, size, 'records are missing from the end of the chain (truncated)');
  checkLatestCheckpoint(dbs, dataDir, size);
  return { size, head };
}

function checkLatestCheckpoint(dbs: StoreDbs, dataDir: string, chainSize: number): void {
  let cpSeq: number | undefined;
  for (const key of dbs.indexes.idx_kind.getKeys({ start: ['checkpoint', Number.MAX_SAFE_INTEGER], end: ['checkpoint', -1], reverse: true, limit: 1 }))
    cpSeq = key[1];
  if (cpSeq === undefined) return;
  if (cpSeq >= chainSize) throw corrupt(dataDir, chainSize, `records are missing from the end of the chain (a checkpoint was at seq ${cpSeq})`);
  const cp = parseHashed(dbs.records.get(cpSeq), cpSeq);
  if (typeof cp === 'string') throw corrupt(dataDir, cpSeq, cp);
  const size = cp.size;
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0 || size > cpSeq) throw corrupt(dataDir, cpSeq, 'checkpoint size is invalid');
  let root: string;
  try {
    root = bytesToHash(rootAt(size, storedReader(dbs)));
  } catch (e) {
    throw corrupt(dataDir, cpSeq, (e as Error).message);
  }
  if (root !== cp.root) {
    const bad = firstBadBelow(dbs, size);
    throw corrupt(dataDir, bad ?? cpSeq, `the latest checkpoint (seq ${cpSeq}) root ${String(cp.root)} differs from the stored tree's ${root}`);
  }
  const publicKey = ledgerKeys(dbs).get(String(cp.key_id));
  if (publicKey === undefined) throw corrupt(dataDir, cpSeq, `checkpoint is signed by unknown key ${String(cp.key_id)}`);
  if (typeof cp.signature !== 'string' || !verifyPayload(publicKey, checkpointPayload({ key_id: String(cp.key_id), root: cp.root, size }), cp.signature)) {
    throw corrupt(dataDir, cpSeq, 'checkpoint signature does not verify');
  }
}

/** First seq below `size` whose record or Merkle leaf is bad (full walk; only on a failure path). */
function firstBadBelow(dbs: StoreDbs, size: number): number | undefined {
  const scan = scanChain(dbs, { limit: size });
  if (scan.firstBad !== null) return scan.firstBad;
  for (let seq = 0; seq < size; seq++) {
    const r = JSON.parse(dbs.records.get(seq)!) as LedgerRecord;
    if (!leafMatches(dbs, seq, r.hash)) return seq;
  }
  return undefined;
}

export interface ChainScan {
  /** First seq that is missing or bad, null when the whole chain is good. */
  firstBad: number | null;
  problem: string | null;
  /** Last good record (seq -1 / ZERO_HASH when none). */
  lastGoodSeq: number;
  lastGoodHash: string;
  /** Stored records, good or bad (the last key + 1). */
  storedSize: number;
  /** Merkle accumulator over the good prefix: its root at every size along the way checks checkpoints. */
  accumulator: MerkleAccumulator;
}

/**
 * Full walk from seq 0: every record parsed, canonical, linked and hashed; every checkpoint's root
 * recomputed and its signature checked against the key records before it. Stops at the first bad
 * record. `limit` stops early after that many records.
 */
export function scanChain(dbs: StoreDbs, o: { limit?: number; onGood?: (r: LedgerRecord, text: string) => void } = {}): ChainScan {
  const { size: storedSize } = readHead(dbs);
  const acc = new MerkleAccumulator();
  const keys = new Map<string, Buffer>();
  let prev = ZERO_HASH;
  let seq = 0;
  const limit = o.limit ?? Number.MAX_SAFE_INTEGER;
  let firstBad: number | null = null;
  let problem: string | null = null;
  for (const { key, value } of dbs.records.getRange({ start: 0 })) {
    if (seq >= limit) break;
    if (key !== seq) {
      firstBad = seq;
      problem = 'record is missing';
      break;
    }
    const checked = checkRecordText(value, seq, prev);
    if ('problem' in checked) {
      firstBad = seq;
      problem = checked.problem;
      break;
    }
    const r = checked.record;
    if (r.kind === 'checkpoint') {
      const size = r.size as number;
      if (size !== seq) {
        // A checkpoint written by writ covers exactly the records before it.
        firstBad = seq;
        problem = `checkpoint covers ${String(size)} records, not the ${seq} before it`;
        break;
      }
      if (bytesToHash(acc.root()) !== r.root) {
        firstBad = seq;
        problem = 'checkpoint root does not match the records before it';
        break;
      }
      const pk = keys.get(String(r.key_id));
      if (
        !pk ||
        typeof r.signature !== 'string' ||
        !verifyPayload(pk, checkpointPayload({ key_id: String(r.key_id), root: String(r.root), size }), r.signature)
      ) {
        firstBad = seq;
        problem = pk ? 'checkpoint signature does not verify' : `checkpoint is signed by unknown key ${String(r.key_id)}`;
        break;
      }
    }
    if (r.kind === 'key' && typeof r.key_id === 'string' && typeof r.public_key === 'string') keys.set(r.key_id, Buffer.from(r.public_key, 'base64'));
    o.onGood?.(r, value);
    acc.append(hashToBytes(r.hash));
    prev = r.hash;
    seq++;
  }
  return { firstBad, problem, lastGoodSeq: seq - 1, lastGoodHash: prev, storedSize, accumulator: acc };
}
