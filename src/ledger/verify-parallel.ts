/**
 * The parallel form of `writ verify`: the same verdict as feeding every line to ExportVerifier.push,
 * with the per-line work spread over worker threads.
 *
 * The main thread reads the export in blocks of whole lines and hands them out round robin; each
 * worker examines every line of a block on its own (canonical form, header fields, leaf hash,
 * binding: examineLine) and whether it links to the line before it (verify-block.ts). The main
 * thread takes the findings in block order and keeps everything that depends on order: a linked line
 * is accepted by its hash (pushLinked); every other line — the first of each block, key, checkpoint
 * and chain_break records, and any line with a failure — goes through the sequential `push` from its
 * bytes, so every failure is named by exactly the code that names it sequentially.
 *
 * Memory stays bounded: at most IN_FLIGHT_PER_WORKER blocks per worker are out at once, and their
 * buffers are reused. A read error is raised only after every block read before it has been
 * checked, so an earlier failure is still the verdict, as it would be sequentially.
 */
import { Worker } from 'node:worker_threads';
import { ExportVerifier, type VerifyOptions, type VerifyResult } from './verify.js';
import { LINKED_HASH_LENGTH, NEWLINE, pushLineBytes, type BlockFindings } from './verify-block.js';

/** Reads up to `length` bytes into `into` at `offset`; 0 means the end of the input. */
export type ReadBytes = (into: Buffer, offset: number, length: number) => Promise<number>;

export interface ParallelOptions {
  /** How many worker threads to start (at least 1), or running ones to use (they are left running). */
  workers: number | VerifyWorkers;
  /** Bytes per block (a block grows to hold a longer line). */
  blockBytes?: number;
}

export const DEFAULT_BLOCK_BYTES = 1 << 20;
/** Enough blocks queued per worker that none waits for the main thread to hand out the next. */
const IN_FLIGHT_PER_WORKER = 3;

/** Sent to a worker: a block of lines, its memory transferred. */
export interface BlockRequest {
  id: number;
  buffer: ArrayBuffer;
  length: number;
}

/** A worker's answer: its findings, and the block's memory transferred back. */
export interface BlockReport extends BlockFindings {
  id: number;
  buffer: ArrayBuffer;
  length: number;
}

/** A ReadBytes over a stream (e.g. stdin), and `close` to let go of the stream when stopping early. */
export function streamReader(stream: NodeJS.ReadableStream): { read: ReadBytes; close: () => Promise<void> } {
  const chunks = (stream as AsyncIterable<Buffer | string>)[Symbol.asyncIterator]();
  let pending: Buffer = Buffer.alloc(0);
  const read: ReadBytes = async (into, offset, length) => {
    while (pending.length === 0) {
      const next = await chunks.next();
      if (next.done) return 0;
      pending = typeof next.value === 'string' ? Buffer.from(next.value, 'utf8') : next.value;
    }
    const n = pending.copy(into, offset, 0, Math.min(length, pending.length));
    pending = pending.subarray(n);
    return n;
  };
  return { read, close: async () => void (await chunks.return?.()) };
}

/**
 * Cuts the input into blocks of whole lines: each block ends with \n, except the last one when the
 * input does not. The bytes after a block's last \n are carried to the front of the next block.
 */
class BlockReader {
  #carry: Buffer | undefined;
  #ended = false;
  #error: { error: unknown } | undefined;

  constructor(readonly read: ReadBytes) {}

  /**
   * The next block in `buffer` (or in a larger one, for a line longer than it), or undefined at the
   * end. When a read fails, the whole lines read before it are still returned first (a sequential
   * reader would check them before meeting the error); the error is thrown by the next call.
   */
  async next(buffer: Buffer): Promise<Buffer | undefined> {
    if (this.#error) throw this.#error.error;
    let buf = buffer;
    let filled = 0;
    if (this.#carry) {
      if (this.#carry.length >= buf.length) buf = Buffer.allocUnsafeSlow(2 * this.#carry.length);
      filled = this.#carry.copy(buf);
      this.#carry = undefined;
    }
    for (;;) {
      while (!this.#ended && filled < buf.length) {
        let n: number;
        try {
          n = await this.read(buf, filled, buf.length - filled);
        } catch (error) {
          this.#error = { error };
          const lastNewline = filled > 0 ? buf.lastIndexOf(NEWLINE, filled - 1) : -1;
          if (lastNewline < 0) throw error;
          return buf.subarray(0, lastNewline + 1);
        }
        if (n === 0) this.#ended = true;
        filled += n;
      }
      if (this.#ended) return filled === 0 ? undefined : buf.subarray(0, filled);
      const lastNewline = buf.lastIndexOf(NEWLINE, filled - 1);
      if (lastNewline >= 0) {
        if (lastNewline + 1 < filled) this.#carry = Buffer.from(buf.subarray(lastNewline + 1, filled));
        return buf.subarray(0, lastNewline + 1);
      }
      // One line fills the whole buffer: grow it.
      const larger = Buffer.allocUnsafeSlow(2 * buf.length);
      buf.copy(larger, 0, 0, filled);
      buf = larger;
    }
  }
}

interface Waiter {
  resolve: (report: BlockReport) => void;
  reject: (err: Error) => void;
}

/**
 * The worker threads. Each answers in the order it was asked and keeps the resolvers of its blocks in
 * that order, so several verifications may share them (e.g. tests, which start workers once).
 */
export class VerifyWorkers {
  readonly #workers: Worker[] = [];
  readonly #waiting: Waiter[][] = [];
  #broken: Error | undefined;

  constructor(count: number) {
    for (let w = 0; w < count; w++) {
      const worker = new Worker(new URL('./verify-worker.js', import.meta.url));
      const waiting: Waiter[] = [];
      worker.on('message', (report: BlockReport) => waiting.shift()?.resolve(report));
      worker.on('error', (err) => this.#fail(err));
      worker.on('exit', (code) => this.#fail(new Error(`a verify worker exited (code ${code})`)));
      this.#workers.push(worker);
      this.#waiting.push(waiting);
    }
  }

  get size(): number {
    return this.#workers.length;
  }

  /** Sends block `id` (its memory is transferred) and resolves with the worker's report. */
  examine(id: number, block: Buffer): Promise<BlockReport> {
    if (this.#broken) return Promise.reject(this.#broken);
    const w = id % this.#workers.length;
    return new Promise((resolve, reject) => {
      this.#waiting[w]!.push({ resolve, reject });
      const request: BlockRequest = { id, buffer: block.buffer as ArrayBuffer, length: block.length };
      this.#workers[w]!.postMessage(request, [request.buffer]);
    });
  }

  #fail(err: Error): void {
    this.#broken ??= err;
    for (const waiting of this.#waiting) for (const { reject } of waiting.splice(0)) reject(this.#broken);
  }

  async close(): Promise<void> {
    this.#broken ??= new Error('the verify workers were closed');
    await Promise.all(this.#workers.map((w) => w.terminate()));
  }
}

/**
 * Takes a worker's findings for one block, in order; returns the failure if a line fails. Empty lines
 * are held (`framing`, across blocks) as src/util/lines.ts holds them: only a line after them makes them
 * lines (MALFORMED); at the end of the export they are not lines.
 */
function takeFindings(verifier: ExportVerifier, report: BlockReport, framing: { heldEmpty: number }): VerifyResult | undefined {
  const bytes = Buffer.from(report.buffer, 0, report.length);
  const { unlinked, linkedHashes, linkedTransitions } = report;
  let nextUnlinked = 0;
  let hashAt = 0;
  for (let line = 0; line < report.lineCount; line++) {
    let failure: VerifyResult | undefined;
    const isUnlinked = unlinked[nextUnlinked] === line;
    if (isUnlinked && unlinked[nextUnlinked + 1] === unlinked[nextUnlinked + 2]) {
      framing.heldEmpty++;
      nextUnlinked += 3;
      continue;
    }
    if (framing.heldEmpty > 0) return pushLineBytes(verifier, bytes, 0, 0);
    if (isUnlinked) {
      failure = pushLineBytes(verifier, bytes, unlinked[nextUnlinked + 1]!, unlinked[nextUnlinked + 2]!);
      nextUnlinked += 3;
    } else {
      failure = verifier.pushLinked(linkedHashes.slice(hashAt, hashAt + LINKED_HASH_LENGTH), linkedTransitions[hashAt / LINKED_HASH_LENGTH] || undefined);
      hashAt += LINKED_HASH_LENGTH;
    }
    if (failure) return failure;
  }
  return undefined;
}

/** Verifies the export `read` yields with `parallel.workers` worker threads (at least 1). */
export async function verifyInParallel(read: ReadBytes, opts: VerifyOptions, parallel: ParallelOptions): Promise<VerifyResult> {
  const verifier = new ExportVerifier(opts);
  const blockBytes = parallel.blockBytes ?? DEFAULT_BLOCK_BYTES;
  const reader = new BlockReader(read);
  const ownWorkers = typeof parallel.workers === 'number';
  const pool = typeof parallel.workers === 'number' ? new VerifyWorkers(Math.max(1, parallel.workers)) : parallel.workers;
  const spare: Buffer[] = [];
  const reports = new Map<number, Promise<BlockReport>>();
  let sent = 0;
  let readError: unknown;
  const framing = { heldEmpty: 0 };
  let ended = false;
  try {
    for (let taken = 0; ; taken++) {
      while (!ended && readError === undefined && sent - taken < IN_FLIGHT_PER_WORKER * pool.size) {
        let block: Buffer | undefined;
        try {
          block = await reader.next(spare.pop() ?? Buffer.allocUnsafeSlow(blockBytes));
        } catch (err) {
          readError = err;
          break;
        }
        if (block === undefined) {
          ended = true;
          break;
        }
        const report = pool.examine(sent, block);
        report.catch(() => {}); // awaited in order below; a failure meanwhile is not unhandled
        reports.set(sent++, report);
      }
      if (taken === sent) break;
      const report = await reports.get(taken)!;
      reports.delete(taken);
      const failure = takeFindings(verifier, report, framing);
      if (failure) return failure;
      if (report.buffer.byteLength === blockBytes) spare.push(Buffer.from(report.buffer));
    }
  } finally {
    if (ownWorkers) await pool.close();
  }
  // What the reader threw, thrown on from here.
  // eslint-disable-next-line @typescript-eslint/only-throw-error
  if (readError !== undefined) throw readError;
  return verifier.finish();
}
