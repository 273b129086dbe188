/**
 * Reading a ledger export line by line at the byte level, holding only the current partial line, so a
 * pass over an export of any length runs in bounded memory. Lines are split on \n; a final line
 * without one still counts, an empty final segment does not.
 */
import { createReadStream } from 'node:fs';
import { NEWLINE } from '../ledger/verify-block.js';

/**
 * Calls `onLine(buf, start, end)` for the bytes of each line (`buf` is only valid during the call), and
 * awaits `afterChunk` after each chunk read (~1 MB) — where a caller flushes output and waits for its
 * drain, so neither input nor output piles up.
 */
export async function forEachLine(
  path: string,
  onLine: (buf: Buffer, start: number, end: number) => void,
  afterChunk?: () => Promise<void> | void,
): Promise<void> {
  const stream = createReadStream(path, { highWaterMark: 1 << 20 });
  let carry: Buffer | undefined;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let pos = 0;
      if (carry) {
        const nl = chunk.indexOf(NEWLINE);
        if (nl < 0) {
          carry = Buffer.concat([carry, chunk]);
          continue;
        }
        const line = Buffer.concat([carry, chunk.subarray(0, nl)]);
        carry = undefined;
        onLine(line, 0, line.length);
        pos = nl + 1;
      }
      for (;;) {
        const nl = chunk.indexOf(NEWLINE, pos);
        if (nl < 0) break;
        onLine(chunk, pos, nl);
        pos = nl + 1;
      }
      if (pos < chunk.length) carry = Buffer.from(chunk.subarray(pos));
      if (afterChunk) await afterChunk();
    }
    if (carry && carry.length > 0) onLine(carry, 0, carry.length);
    if (afterChunk) await afterChunk();
  } finally {
    stream.destroy();
  }
}
