/**
 * Explicit operator repair of a corrupt store: walk the chain from seq 0, keep the good
 * prefix, move the bad tail out of the live store (its raw text is saved beside it for forensics),
 * rebuild the Merkle nodes and indexes of what is kept, and append a `chain_break` record chaining
 * from the last good hash, signed with the data dir key over
 * `"writ-chain-break/1\n" + JCS({last_good_hash, last_good_seq, reason})`. All in one LMDB transaction:
 * a repair that fails leaves the store as it was. Of the state tables, only what names the cut tail is
 * changed: executions' record lists, and approvals whose `approval` record was cut (removed).
 */
import { closeSync, fsyncSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { WritError } from '../../errors.js';
import { jcs } from '../../util/canonical.js';
import { uidKey } from '../../util/uid.js';
import { recordHash, ZERO_HASH, type LedgerRecord } from '../../ledger/record.js';
import { hashToBytes } from '../../ledger/merkle/hasher.js';
import { memoryReader, subtreesCompletedBy, type SubtreeReader } from '../../ledger/merkle/tree.js';
import { chainBreakPayload, signPayload } from '../../ledger/signing.js';
import { loadSigningKey, SIGNING_KEY_FILE } from '../../checkpoints/keys.js';
import { lockDataDir } from '../lock.js';
import { INDEXES, indexTermsOf, openStoreDbs, requireExistingStore, settleCommitError, type StoreDbs } from '../layout.js';
import { scanChain } from './integrity.js';
import { indexTerm } from '../seal.js';

export { chainBreakPayload } from '../../ledger/signing.js';

export interface RepairReport {
  /** 'intact': nothing to do; 'rebuilt': records good, derived data (Merkle nodes, indexes) rewritten;
   *  'cut': a bad tail was dropped and a chain_break appended. */
  outcome: 'intact' | 'rebuilt' | 'cut';
  records: number;
  last_good_seq: number;
  last_good_hash: string;
  dropped_from_seq?: number;
  dropped_records?: number;
  dropped_file?: string;
  problem?: string;
  chain_break?: LedgerRecord;
}

/** Repairs the store of a stopped data dir (takes its lock). */
export async function repairStore(dataDir: string, o: { reason?: string; now?: () => Date } = {}): Promise<RepairReport> {
  requireExistingStore(dataDir);
  const lock = await lockDataDir(dataDir);
  let dbs: StoreDbs | undefined;
  /** The saved tail, kept only if the repair commits: a failed repair leaves the store, and the dir, as they were. */
  let droppedFile: string | undefined;
  let committed = false;
  try {
    dbs = openStoreDbs(dataDir);
    const goodHashes: Buffer[] = [];
    let indexEntries = 0;
    /** Approvals whose `approval` record is kept: only these may still authorize after a cut. */
    const keptApprovals = new Set<string>();
    const scan = scanChain(dbs, {
      onGood: (r) => {
        goodHashes.push(hashToBytes(r.hash));
        indexEntries += indexTermsOf(r, uidKey).length;
        if (r.kind === 'approval' && typeof r.approval_id === 'string') keptApprovals.add(r.approval_id);
      },
    });
    let firstBad = scan.firstBad;
    let problem = scan.problem;
    if (firstBad === null && pointsPast(dbs, goodHashes.length)) {
      // Derived data names records that are gone: the end of the chain was lost.
      firstBad = goodHashes.length;
      problem = 'records are missing from the end of the chain (truncated)';
    }
    if (firstBad === null && derivedDataMatches(dbs, goodHashes, indexEntries)) {
      return { outcome: 'intact', records: goodHashes.length, last_good_seq: scan.lastGoodSeq, last_good_hash: scan.lastGoodHash };
    }
    const d = dbs;
    let chainBreak: LedgerRecord | undefined;
    let dropped = 0;
    if (firstBad !== null) {
      const key = loadSigningKey(dataDir);
      if (!key) throw new WritError('INVALID_REQUEST', `no ${SIGNING_KEY_FILE} in ${dataDir}: a chain_break record must be signed by the data dir key`);
      const reason = o.reason ?? `operator repair: ${problem ?? 'bad record'} at seq ${firstBad}`;
      // Save the raw tail before it leaves the live store.
      droppedFile = join(dataDir, `repair-${(o.now?.() ?? new Date()).toISOString().replace(/[:.]/g, '-')}-dropped.jsonl`);
      const fd = openSync(droppedFile, 'wx', 0o600);
      try {
        for (const { key: seq, value } of d.records.getRange({ start: firstBad })) {
          writeSync(fd, `${JSON.stringify({ seq, text: value })}\n`);
          dropped++;
        }
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      const body = {
        kind: 'chain_break',
        last_good_seq: scan.lastGoodSeq,
        last_good_hash: scan.lastGoodHash,
        dropped_from_seq: firstBad,
        reason,
        key_id: key.key_id,
        signature: signPayload(key.privateKey, chainBreakPayload({ last_good_hash: scan.lastGoodHash, last_good_seq: scan.lastGoodSeq, reason })),
        v: 1,
        seq: firstBad,
        ts: (o.now?.() ?? new Date()).toISOString(),
        prev: scan.lastGoodSeq >= 0 ? scan.lastGoodHash : ZERO_HASH,
      };
      chainBreak = JSON.parse(jcs({ ...body, hash: recordHash(body) })) as LedgerRecord;
      goodHashes.push(hashToBytes(chainBreak.hash));
    }
    try {
      // Inside the transaction LMDB writes at once and throws on failure: the promises its put() and remove()
      // return only report an ifVersion condition, which none of these set.
      await d.env.childTransaction(() => {
        if (firstBad !== null) {
          for (const seq of [...d.records.getKeys({ start: firstBad })]) void d.records.remove(seq);
          void d.records.put(chainBreak!.seq, jcs(chainBreak));
          // Executions keep their state (an acknowledged reservation is never reusable) but must not
          // list seqs that now hold the chain_break and later, unrelated records, nor approvals whose
          // record was cut: an approval the ledger no longer holds must not authorize anything (its row
          // goes too). A revocation that was cut stays in force: revoked is the safe side.
          for (const { key, value } of [...d.tables.executions.getRange({})]) {
            const e = JSON.parse(value) as { records?: unknown; approvals?: unknown };
            const cutRecords = Array.isArray(e.records) && e.records.some((q) => typeof q === 'number' && q >= firstBad);
            const cutApprovals = Array.isArray(e.approvals) && e.approvals.some((id) => !keptApprovals.has(id as string));
            if (cutRecords || cutApprovals) {
              const kept: Record<string, unknown> = { ...e };
              if (Array.isArray(e.records)) kept.records = e.records.filter((q) => typeof q === 'number' && q < firstBad);
              if (Array.isArray(e.approvals)) kept.approvals = e.approvals.filter((id) => keptApprovals.has(id as string));
              if (cutApprovals) kept.rev = (typeof (e as { rev?: unknown }).rev === 'number' ? (e as { rev: number }).rev : 0) + 1;
              void d.tables.executions.put(key, JSON.stringify(kept));
            }
          }
          for (const id of [...d.tables.approvals.getKeys({})]) if (!keptApprovals.has(id)) void d.tables.approvals.remove(id);
        }
        // Derived data, rebuilt from the kept records: Merkle nodes and the three indexes.
        d.merkle.clearSync();
        const reader: SubtreeReader = memoryReader(goodHashes);
        for (let i = 0; i < goodHashes.length; i++) {
          void d.merkle.put([0, i], goodHashes[i]!);
          for (const n of subtreesCompletedBy(i, goodHashes[i]!, reader)) void d.merkle.put([n.level, n.index], n.hash);
        }
        for (const name of INDEXES) d.indexes[name].clearSync();
        for (const { key: seq, value } of d.records.getRange({ start: 0 })) {
          const r = JSON.parse(value) as LedgerRecord;
          for (const [name, term] of indexTermsOf(r, uidKey)) void d.indexes[name].put([indexTerm(term), seq], '');
        }
      });
      await d.env.flushed;
      committed = true;
    } catch (e) {
      settleCommitError(e);
      throw new WritError('STORE_UNAVAILABLE', `repair of ${dataDir} failed, store unchanged: ${(e as Error).message}`, { cause: e });
    }
    const report: RepairReport = {
      outcome: firstBad === null ? 'rebuilt' : 'cut',
      records: goodHashes.length,
      last_good_seq: scan.lastGoodSeq,
      last_good_hash: scan.lastGoodHash,
    };
    if (firstBad !== null) {
      report.dropped_from_seq = firstBad;
      report.dropped_records = dropped;
      report.dropped_file = droppedFile!;
      report.problem = problem ?? 'bad record';
      report.chain_break = chainBreak!;
    }
    return report;
  } catch (e) {
    if (droppedFile !== undefined && !committed) rmSync(droppedFile, { force: true });
    if (e instanceof WritError) throw e;
    // LMDB pages themselves are damaged (a key that is no ordered-binary number, a broken B-tree):
    // nothing a repair can cut past. Say so, rather than the reader's own words.
    throw new WritError(
      'STORE_CORRUPT',
      `repair of ${dataDir} cannot read the store (${(e as Error)?.message ?? String(e)}): the store is unchanged; restore it from a backup or a ledger export`,
      { cause: e, details: { seq: null } },
    );
  } finally {
    if (dbs) await dbs.env.close().catch(() => undefined);
    lock.release();
  }
}

/** Whether a Merkle leaf or an index entry names a seq at or past `size`. */
function pointsPast(dbs: StoreDbs, size: number): boolean {
  if (dbs.merkle.get([0, size]) !== undefined) return true;
  for (const name of INDEXES) {
    for (const key of dbs.indexes[name].getKeys()) if (key[1] >= size) return true;
  }
  return false;
}

/** Whether the stored Merkle nodes and indexes agree with the good records (so no rebuild is needed). */
function derivedDataMatches(dbs: StoreDbs, leaves: Buffer[], indexEntries: number): boolean {
  let indexed = 0;
  for (const name of INDEXES) indexed += (dbs.indexes[name].getStats() as { entryCount: number }).entryCount;
  if (indexed !== indexEntries) return false;
  let nodes = 0;
  const reader = memoryReader(leaves);
  for (let i = 0; i < leaves.length; i++) {
    const leaf = dbs.merkle.get([0, i]);
    if (!leaf || !Buffer.from(leaf).equals(leaves[i]!)) return false;
    nodes++;
    for (const n of subtreesCompletedBy(i, leaves[i]!, reader)) {
      const stored = dbs.merkle.get([n.level, n.index]);
      if (!stored || !Buffer.from(stored).equals(n.hash)) return false;
      nodes++;
    }
  }
  return (dbs.merkle.getStats() as { entryCount: number }).entryCount === nodes;
}
