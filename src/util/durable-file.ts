/**
 * Whole-file writes that survive a crash: the bytes go to a temp file that is fsync'd, renamed over the
 * target, and the directory fsync'd, so a reader (or the next start) sees the old file or the new one,
 * never a torn one, and a write that returned is on disk.
 */
import { closeSync, fsyncSync, openSync, renameSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

export function writeFileDurably(path: string, data: string | Uint8Array, o: { mode?: number; exclusive?: boolean } = {}): void {
  const mode = o.mode ?? 0o644;
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  if (o.exclusive) {
    // Refuses an existing file (EEXIST): a key file is never overwritten.
    const fd = openSync(path, 'wx', mode);
    try {
      writeSync(fd, bytes);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } else {
    const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
    const fd = openSync(tmp, 'w', mode);
    try {
      writeSync(fd, bytes);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  }
  const dir = openSync(dirname(path), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}
