/**
 * The C2SP tlog-checkpoint note text (c2sp.org/tlog-checkpoint): origin line, tree size (decimal, no
 * leading zero), base64 root hash, then optional extension lines; every line ends in a newline. Pure.
 */
import { NoteError, strictBase64 } from './note.js';

export interface CheckpointBody {
  origin: string;
  size: number;
  /** The 32-byte RFC 6962 root. */
  root: Buffer;
  extensions?: string[];
}

export function formatCheckpoint(c: CheckpointBody): string {
  if (c.origin === '' || c.origin.includes('\n')) throw new NoteError('MALFORMED', 'a checkpoint origin is one non-empty line');
  if (!Number.isSafeInteger(c.size) || c.size < 0) throw new NoteError('MALFORMED', 'a tree size is a non-negative integer');
  if (c.root.length !== 32) throw new NoteError('MALFORMED', 'a root hash is 32 bytes');
  const ext = (c.extensions ?? []).map((l) => {
    if (l === '' || l.includes('\n')) throw new NoteError('MALFORMED', 'an extension line is one non-empty line');
    return `${l}\n`;
  });
  return `${c.origin}\n${c.size}\n${c.root.toString('base64')}\n${ext.join('')}`;
}

export function parseCheckpoint(text: string): CheckpointBody {
  const bad = (why: string) => new NoteError('MALFORMED', `not a checkpoint: ${why}`);
  if (!text.endsWith('\n')) throw bad('its text ends with a newline');
  const lines = text.slice(0, -1).split('\n');
  if (lines.length < 3) throw bad('it has an origin, a size and a root line');
  const [origin, size, root, ...extensions] = lines as [string, string, string, ...string[]];
  if (origin === '') throw bad('the origin is empty');
  if (!/^(0|[1-9][0-9]{0,15})$/.test(size) || !Number.isSafeInteger(Number(size))) throw bad('the size is a decimal with no leading zero');
  const hash = strictBase64(root);
  if (hash?.length !== 32) throw bad('the root is base64 of 32 bytes');
  if (extensions.some((l) => l === '')) throw bad('an extension line is not empty');
  return { origin, size: Number(size), root: hash, ...(extensions.length ? { extensions } : {}) };
}
