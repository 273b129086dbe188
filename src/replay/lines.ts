/**
 * Reading a ledger export line by line at the byte level, holding only the current partial line, so a
 * pass over an export of any length runs in bounded memory. Lines are split on \n; a final line
 * without one still counts, an empty final segment does not.
 */
import { createReadStream } from 'node:fs';
import { splitLines } from '../util/lines.js';

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
  try {
    await splitLines(
      stream as AsyncIterable<Buffer>,
      (buf, start, end) => {
        onLine(buf, start, end);
        return undefined;
      },
      afterChunk,
    );
  } finally {
    stream.destroy();
  }
}
