/**
 * The PDP clock pinned through `clock_file`: a file holding the time the server takes as now, which a
 * test moves forward to replay a story at its hours.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface PinnedClock {
  /** The file to give as `clockFile`. */
  file: string;
  /** Sets the time the server reads as now (RFC 3339). */
  set(time: string): void;
  /** Removes the clock's own temp dir (nothing when it was given one). */
  dispose(): void;
}

/** A clock at `time`, in `dir/now` (or in a temp dir of its own). */
export function pinnedClock(time: string, dir?: string): PinnedClock {
  const home = dir ?? mkdtempSync(join(tmpdir(), 'writ-clock-'));
  const file = join(home, 'now');
  const set = (t: string) => writeFileSync(file, t);
  set(time);
  return { file, set, dispose: () => dir === undefined && rmSync(home, { recursive: true, force: true }) };
}
