/**
 * Reading the files of a policy dir without letting what is placed there freeze or exhaust the server
 * (docs/protocol.md §8.1). A policy dir is written by people and tools the sidecar does not control: a
 * FIFO where entities.json was blocks a plain read until someone writes to it (the event loop with it),
 * a link to /dev/zero never ends, and a 50 MB file read at every poll costs a core. So a file is opened
 * without blocking (O_NONBLOCK: opening a FIFO returns at once), judged on what the open descriptor is
 * (a regular file, within the size limit) and read at most one byte past the limit (a file still growing
 * cannot make the read go on); anything else is POLICY_INVALID, which the caller treats as a rejected
 * load. And the poll reads nothing at all while no file's size, mtime or inode changed (signatureOf).
 */
import { closeSync, constants, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { WritError } from '../errors.js';

/** The default of config `policy_file_max_bytes`: far above any real policy set or entities file. */
export const DEFAULT_POLICY_FILE_MAX_BYTES = 16 * 1024 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Thrown for a file that is absent (ENOENT): the caller decides whether that is allowed. */
export class PolicyFileAbsent extends Error {}

/** The text of a policy-dir file, or POLICY_INVALID naming why it is not read (PolicyFileAbsent when there is none). */
export function readPolicyFile(path: string, name: string, maxBytes: number = DEFAULT_POLICY_FILE_MAX_BYTES): string {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new PolicyFileAbsent(`${name}: no such file`);
    throw refused(name, `cannot be opened (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw refused(name, `is not a regular file (${kindOf(stats)})`);
    if (stats.size > maxBytes) throw refused(name, `is ${stats.size} bytes, over the ${maxBytes}-byte limit (policy_file_max_bytes)`);
    const buffer = Buffer.allocUnsafe(Math.min(stats.size, maxBytes) + 1);
    let length = 0;
    for (;;) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
      if (length > maxBytes) throw refused(name, `grew past the ${maxBytes}-byte limit (policy_file_max_bytes) while being read`);
      if (length === buffer.length) break; // all the size said, and one byte more is not there or was refused above
    }
    try {
      return utf8.decode(buffer.subarray(0, length));
    } catch {
      throw refused(name, 'is not UTF-8 text');
    }
  } finally {
    closeSync(fd);
  }
}

function refused(name: string, why: string): WritError {
  return new WritError('POLICY_INVALID', `${name} ${why}`, { details: [`${name} ${why}`] });
}

function kindOf(stats: ReturnType<typeof fstatSync>): string {
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isDirectory()) return 'a directory';
  if (stats.isSocket()) return 'a socket';
  return 'not a file';
}

/**
 * What the poll compares between two polls, for the given paths: each one's kind, size, mtime, ctime
 * and inode (following links, so a ConfigMap's link swap shows), without opening anything. Equal
 * signatures: nothing to read again.
 */
export function signatureOf(paths: readonly string[]): string {
  let out = '';
  for (const path of paths) {
    const s = statSync(path, { throwIfNoEntry: false, bigint: true });
    out += s === undefined ? `${path}\0-\n` : `${path}\0${s.mode}:${s.size}:${s.mtimeNs}:${s.ctimeNs}:${s.ino}:${s.dev}\n`;
  }
  return out;
}
