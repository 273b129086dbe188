/**
 * The witness dir (docs/protocol.md §6): every checkpoint, once durable in the store, is appended as its
 * JCS line to `<witness_dir>/checkpoints.jsonl` — a copy of the signed heads kept outside the store.
 *
 * At start the store is held to it: the ledger must still hold the latest checkpoint the witness saw,
 * byte for byte (its hash at its seq). A store that ends before it was restored from an older copy (or
 * replaced by a fresh one); a store that holds a different record there is another ledger. Either way
 * records this deployment already signed are missing, and serving on would hand out execution ids and
 * seqs a second time — so the start is refused (WITNESS_MISMATCH), naming the file an operator must
 * move aside to start anyway. A checkpoint that an operator repair (`writ store repair`, a
 * `chain_break` record) cut away with the bad tail is explained by that repair and accepted.
 */
import { closeSync, fstatSync, fsyncSync, mkdirSync, openSync, readSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { WritError } from '../errors.js';
import { recordLine, type LedgerRecord } from '../ledger/record.js';
import type { LedgerStore } from '../store/types.js';

export const WITNESS_FILE = 'checkpoints.jsonl';

/** Appends a durable checkpoint's line (fsync'd before the checkpointer moves on). */
export function appendWitness(dir: string, record: LedgerRecord): void {
  mkdirSync(dir, { recursive: true });
  const fd = openSync(join(dir, WITNESS_FILE), 'a+', 0o644);
  try {
    // A line torn by a crash mid-append is left as it is, but ended: the new line stays whole.
    const size = fstatSync(fd).size;
    const last = Buffer.alloc(1);
    const torn = size > 0 && readSync(fd, last, 0, 1, size - 1) === 1 && last[0] !== 0x0a;
    writeSync(fd, `${torn ? '\n' : ''}${recordLine(record)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** How much of the witness file's end is read: it grows by one line per checkpoint, forever. */
const TAIL_BYTES = 256 * 1024;

/**
 * The checkpoint with the highest seq among the complete lines at the end of the witness file, or
 * undefined when there is none (no file, an empty one). A line torn by a crash while it was appended,
 * or one that is not a checkpoint, is skipped. Replicas sharing one witness dir may append out of seq
 * order, hence the highest seq rather than the last line.
 */
export function latestWitnessed(dir: string): { seq: number; hash: string; size: number } | undefined {
  let text: string;
  let fd: number;
  try {
    fd = openSync(join(dir, WITNESS_FILE), 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  try {
    const size = fstatSync(fd).size;
    const start = Math.max(0, size - TAIL_BYTES);
    const buf = Buffer.alloc(size - start);
    let read = 0;
    while (read < buf.length) {
      const n = readSync(fd, buf, read, buf.length - read, start + read);
      if (n === 0) break;
      read += n;
    }
    text = buf.subarray(0, read).toString('utf8');
    // Started mid-file: the first line is a fragment.
    if (start > 0) text = text.slice(text.indexOf('\n') + 1);
  } finally {
    closeSync(fd);
  }
  let best: { seq: number; hash: string; size: number } | undefined;
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let r: Partial<LedgerRecord> & { size?: unknown };
    try {
      r = JSON.parse(line) as typeof r;
    } catch {
      continue;
    }
    if (r?.kind !== 'checkpoint' || !Number.isSafeInteger(r.seq) || typeof r.hash !== 'string' || !Number.isSafeInteger(r.size)) continue;
    if (!best || (r.seq as number) > best.seq) best = { seq: r.seq as number, hash: r.hash, size: r.size as number };
  }
  return best;
}

/**
 * A checkpoint is durable in the store before its witness line is written: a crash between the two
 * leaves a signed checkpoint the witness never saw. On start the embedded store's later checkpoints are
 * appended, in seq order, so every checkpoint record is a witness line. (Replicas, which may share a
 * witness dir, are left as they are: two starting at once would write the same lines twice.)
 */
async function appendUnwitnessed(store: LedgerStore, dir: string, witnessedSeq: number): Promise<void> {
  if (store.shared) return;
  let from: number | null = witnessedSeq + 1;
  while (from !== null) {
    const page: { records: LedgerRecord[]; next: number | null } = await store.listRecords({ kind: 'checkpoint', from, limit: 1000 });
    for (const record of page.records) appendWitness(dir, record);
    from = page.next;
  }
}

/** Refuses (WITNESS_MISMATCH) a store that lacks the latest checkpoint its witness dir holds. */
export async function checkAgainstWitness(store: LedgerStore, dir: string): Promise<void> {
  const witnessed = latestWitnessed(dir);
  if (!witnessed) return;
  const size = await store.size();
  const held = witnessed.seq < size ? await store.getRecord(witnessed.seq) : undefined;
  if (held?.hash === witnessed.hash) {
    await appendUnwitnessed(store, dir, witnessed.seq);
    return;
  }
  const repairs = (await store.listRecords({ kind: 'chain_break', from: 0, limit: 1000 })).records;
  if (repairs.some((r) => typeof r.last_good_seq === 'number' && r.last_good_seq < witnessed.seq)) return;
  const file = join(dir, WITNESS_FILE);
  const what = held
    ? `holds a different record at seq ${witnessed.seq} (${held.hash}) than the checkpoint ${file} witnessed (${witnessed.hash}): it is not the ledger ` +
      `this deployment signed`
    : `ends at seq ${size - 1} (${size} records), but ${file} holds a checkpoint at seq ${witnessed.seq} covering ${witnessed.size} records: the store is ` +
      `older than what this deployment already signed (restored from an older copy, or replaced)`;
  throw new WritError(
    'WITNESS_MISMATCH',
    `the store at ${store.location} ${what}. Restore the store's latest copy; to start on this store anyway, move ${file} aside`,
    {
      details: { witnessed_seq: witnessed.seq, witnessed_hash: witnessed.hash, store_size: size },
    },
  );
}
