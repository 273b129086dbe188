/**
 * Export lines at the byte level, shared by the sequential verifier (src/cli/verify.ts) and the
 * parallel one (verify-parallel.ts, verify-worker.ts): UTF-8 decoding of one line, and the per-line
 * examination of a whole block of lines that a worker thread does.
 */
import { examineLine, KINDS_CHECKED_AGAINST_STATE, type ExportVerifier, type LineFacts, type VerifyResult } from './verify.js';

export const NEWLINE = 0x0a;
const REPLACEMENT_CHAR = '\uFFFD';

/**
 * The text of the line in bytes [start, end), or undefined when those bytes are not UTF-8. Invalid
 * UTF-8 would decode to U+FFFD and could then pass as text, so a line containing U+FFFD is accepted
 * only if it re-encodes to the same bytes.
 */
export function decodeLine(buf: Buffer, start: number, end: number): string | undefined {
  const text = buf.toString('utf8', start, end);
  if (text.includes(REPLACEMENT_CHAR) && !Buffer.from(text, 'utf8').equals(buf.subarray(start, end))) return undefined;
  return text;
}

/** Feeds the line in bytes [start, end) to the verifier. */
export function pushLineBytes(verifier: ExportVerifier, buf: Buffer, start: number, end: number): VerifyResult | undefined {
  const text = decodeLine(buf, start, end);
  return text === undefined ? verifier.pushMalformed('the line is not valid UTF-8') : verifier.push(text);
}

/**
 * What a worker found in one block. The block's lines are split on \n; a block ending in \n has no
 * empty line after it (the final block of an export may lack the \n). Each line is either
 *  - linked: its facts were all good, its kind needs no ledger state, and it links to the line
 *    before it in the block (seq one more, prev = that line's hash) — the main thread only has to
 *    accept its hash (ExportVerifier.pushLinked), which is `push`'s verdict whenever the line before
 *    was accepted, and if it was not, verification stopped there; or
 *  - unlinked: anything else (the first line of a block, a failure, a key/checkpoint/chain_break
 *    record, bytes that are not UTF-8): the main thread pushes its bytes through the sequential path.
 */
export interface BlockFindings {
  lineCount: number;
  /** The hashes of the linked lines in line order, concatenated (each is `sha256:` + 64 hex). */
  linkedHashes: string;
  /** The state-machine facts of each linked line (ExportVerifier.pushLinked), '' for none, in line order. */
  linkedTransitions: string[];
  /** [line index, start byte, end byte] of every unlinked line, in line order. */
  unlinked: number[];
}

/** Length of a linked line's hash: a hash that passed the leaf-hash check is `sha256:` + 64 hex. */
export const LINKED_HASH_LENGTH = 71;

/** Examines every line of `block` (a view of exactly the block's bytes) on its own. */
export function examineBlock(block: Buffer): BlockFindings {
  const hashes: string[] = [];
  const transitions: string[] = [];
  const unlinked: number[] = [];
  // The facts of the line before, when it could be accepted (main stops at it otherwise).
  let before: Extract<LineFacts, { recordSeq: number }> | undefined;
  let lineCount = 0;
  for (let start = 0; start < block.length; lineCount++) {
    let end = block.indexOf(NEWLINE, start);
    if (end < 0) end = block.length;
    const text = decodeLine(block, start, end);
    const facts = text === undefined ? undefined : examineLine(text);
    const good = facts !== undefined && facts.malformed === undefined && facts.hashMismatch === undefined ? facts : undefined;
    if (
      good !== undefined &&
      before !== undefined &&
      good.bindingMismatch === undefined &&
      !KINDS_CHECKED_AGAINST_STATE.has(good.kind) &&
      good.recordSeq === before.recordSeq + 1 &&
      good.prev === before.hash
    ) {
      hashes.push(good.hash);
      transitions.push(good.transition ?? '');
    } else {
      unlinked.push(lineCount, start, end);
    }
    before = good;
    start = end + 1;
  }
  return { lineCount, linkedHashes: hashes.join(''), linkedTransitions: transitions, unlinked };
}
