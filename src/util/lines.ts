/**
 * The one byte-level line splitter: lines are split on \n, a line cut across chunks is carried over
 * (only the current partial line is buffered, so memory stays bounded whatever the input's length),
 * a final line without \n still counts and an empty final segment does not. Empty lines at the very end
 * (an export saved with an extra newline by an editor or `echo >>`) are not lines; an empty line with a
 * line after it is one, and is the caller's to judge.
 */
const NEWLINE = 0x0a;
const EMPTY = Buffer.alloc(0);

/**
 * Calls `onLine(buf, start, end)` for the bytes of each line (`buf` is only valid during the call).
 * The first result other than undefined stops the split and is returned (the iteration is closed, so a
 * stream source is destroyed); undefined when every line was taken. `afterChunk` is awaited after each
 * chunk (except one that only extends a carried partial line) and once more at the end.
 */
export async function splitLines<T>(
  chunks: AsyncIterable<Buffer>,
  onLine: (buf: Buffer, start: number, end: number) => T | undefined,
  afterChunk?: () => Promise<void> | void,
): Promise<T | undefined> {
  let carry: Buffer | undefined;
  // Empty lines seen but not yet delivered: only a non-empty line after them makes them lines.
  let heldEmpty = 0;
  const deliver = (buf: Buffer, start: number, end: number): T | undefined => {
    if (start === end) {
      heldEmpty++;
      return undefined;
    }
    for (; heldEmpty > 0; heldEmpty--) {
      const stop = onLine(EMPTY, 0, 0);
      if (stop !== undefined) return stop;
    }
    return onLine(buf, start, end);
  };
  for await (const chunk of chunks) {
    let pos = 0;
    if (carry) {
      const nl = chunk.indexOf(NEWLINE);
      if (nl < 0) {
        carry = Buffer.concat([carry, chunk]);
        continue;
      }
      const line = Buffer.concat([carry, chunk.subarray(0, nl)]);
      carry = undefined;
      const stop = deliver(line, 0, line.length);
      if (stop !== undefined) return stop;
      pos = nl + 1;
    }
    for (;;) {
      const nl = chunk.indexOf(NEWLINE, pos);
      if (nl < 0) break;
      const stop = deliver(chunk, pos, nl);
      if (stop !== undefined) return stop;
      pos = nl + 1;
    }
    if (pos < chunk.length) carry = Buffer.from(chunk.subarray(pos));
    if (afterChunk) await afterChunk();
  }
  if (carry && carry.length > 0) {
    const stop = deliver(carry, 0, carry.length);
    if (stop !== undefined) return stop;
  }
  if (afterChunk) await afterChunk();
  return undefined;
}
