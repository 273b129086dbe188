/**
 * C2SP tlog-proof (c2sp.org/tlog-proof@v1): `c2sp.org/tlog-proof@v1`, optional `extra <base64>`,
 * `index N`, the inclusion proof hashes (base64, leaf's sibling first), a blank line, then the
 * checkpoint note verbatim. Pure.
 */
import { NoteError, strictBase64 } from './note.js';

export const TLOG_PROOF_HEADER = 'c2sp.org/tlog-proof@v1';

export interface TlogProof {
  index: number;
  path: Buffer[];
  /** The signed checkpoint note, verbatim. */
  note: string;
  extra?: Buffer;
}

export function formatTlogProof(p: TlogProof): string {
  const extra = p.extra ? `extra ${p.extra.toString('base64')}\n` : '';
  return `${TLOG_PROOF_HEADER}\n${extra}index ${p.index}\n${p.path.map((h) => `${h.toString('base64')}\n`).join('')}\n${p.note}`;
}

export function parseTlogProof(text: string): TlogProof {
  const bad = (why: string) => new NoteError('MALFORMED', `not a tlog-proof: ${why}`);
  const blank = text.indexOf('\n\n');
  if (blank < 0) throw bad('no blank line before the checkpoint');
  const head = text.slice(0, blank).split('\n');
  const note = text.slice(blank + 2);
  if (head.shift() !== TLOG_PROOF_HEADER) throw bad(`the first line is ${TLOG_PROOF_HEADER}`);
  let extra: Buffer | undefined;
  if (head[0]?.startsWith('extra ')) {
    extra = strictBase64(head.shift()!.slice(6));
    if (!extra) throw bad('extra is base64');
  }
  const m = /^index (0|[1-9][0-9]{0,15})$/.exec(head.shift() ?? '');
  if (!m || !Number.isSafeInteger(Number(m[1]))) throw bad('an index line');
  const path = head.map((l) => {
    const h = strictBase64(l);
    if (h?.length !== 32) throw bad('each proof line is base64 of 32 bytes');
    return h;
  });
  return { index: Number(m[1]), path, note, ...(extra ? { extra } : {}) };
}
