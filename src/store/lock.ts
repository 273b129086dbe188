/**
 * The exclusive lock on a data dir: one process owns a data dir (docs/protocol.md §1).
 *
 * A lock file `<dataDir>/writ.lock` holds `{pid, started, host}`; it is created atomically (written
 * to a private temp file, then hard-linked into place, so a reader never sees a half-written lock).
 * A lock is stale — and taken over — when its process is gone: no such pid, a zombie, or a pid that
 * now belongs to a different process (its start time in /proc differs: pid reuse after a SIGKILL and
 * a restart). A lock naming this very pid that this process did not take is stale too (pid 1 in a
 * restarted container). A second live process gets WritError STORE_LOCKED naming the holder.
 *
 * Taking over a stale lock file is read–judge–remove–create, which two processes can interleave (both
 * judge the same stale file; one removes it and links its own; the other then removes that one), and
 * both would own the dir. So on Linux the lock file is guarded by a kernel lock first: a listening
 * socket in the abstract namespace named after the dir's device and inode. Binding it is atomic and
 * exclusive, and the kernel frees it when the process dies however it dies — so only one process at a
 * time runs the file logic, and no stale socket is ever left. The file stays the lock seen across
 * network namespaces (containers sharing a volume) and the record of who holds the dir.
 */
import { createHash } from 'node:crypto';
import { linkSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { WritError } from '../errors.js';

export const LOCK_FILE = 'writ.lock';

interface LockInfo {
  pid: number;
  /** Start time of the process (clock ticks since boot, /proc/<pid>/stat field 22); null off Linux. */
  started: string | null;
  host: string;
}

/** Data dirs locked by this process (absolute paths), so a second open in-process is refused too. */
const heldByThisProcess = new Set<string>();

/** Start time and state of a live process from /proc, or undefined when /proc does not know it. */
function procStat(pid: number): { started: string; zombie: boolean } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'.
    const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { zombie: rest[0] === 'Z' || rest[0] === 'X', started: rest[19] ?? '' };
  } catch {
    return undefined;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether the process a lock names still holds it. */
function holderAlive(info: LockInfo, dir: string): boolean {
  if (info.host !== hostname()) return true; // another machine on a shared disk: we cannot tell, so respect it
  if (info.pid === process.pid) return heldByThisProcess.has(dir);
  if (!processAlive(info.pid)) return false;
  const stat = procStat(info.pid);
  if (stat === undefined) return true; // no /proc: trust the pid
  if (stat.zombie) return false;
  return info.started === null || info.started === stat.started;
}

function readLock(path: string): { text: string; info: LockInfo | undefined } | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  try {
    const info = JSON.parse(text) as LockInfo;
    if (!Number.isSafeInteger(info.pid) || info.pid <= 0) return { text, info: undefined };
    return { text, info };
  } catch {
    return { text, info: undefined };
  }
}

export interface DirLock {
  readonly path: string;
  release(): void;
}

/** The kernel lock's name: the dir's device and inode (two paths to one dir agree), Linux only. */
function kernelLockName(dir: string): string | undefined {
  if (process.platform !== 'linux') return undefined;
  const st = statSync(dir);
  return `\0writ-data-dir-${createHash('sha256').update(`${st.dev}:${st.ino}`).digest('hex').slice(0, 40)}`;
}

/**
 * Binds the kernel lock: the listening socket, or 'busy' when another process holds it, or undefined
 * where abstract sockets are not available (then the lock file alone decides, as it did before).
 */
function bindKernelLock(name: string): Promise<Server | 'busy' | undefined> {
  return new Promise((resolvePromise) => {
    const server = createServer();
    server.once('error', (e: NodeJS.ErrnoException) => resolvePromise(e.code === 'EADDRINUSE' ? 'busy' : undefined));
    // exclusive: never share the handle with cluster workers. unref: the lock must not keep the process alive.
    server.listen({ path: name, exclusive: true }, () => resolvePromise(server.unref()));
  });
}

/** The pid a lock file names, waiting briefly for a holder that has its kernel lock but no file yet. */
async function holderPid(lockPath: string): Promise<number | undefined> {
  for (let i = 0; i < 20; i++) {
    const held = readLock(lockPath);
    if (held?.info !== undefined) return held.info.pid;
    await new Promise((r) => setTimeout(r, 25));
  }
  return undefined;
}

/**
 * Takes the exclusive lock on `dataDir` (which must exist), or throws WritError STORE_LOCKED
 * `data dir D is in use by pid N`.
 */
export async function lockDataDir(dataDir: string): Promise<DirLock> {
  const dir = resolve(dataDir);
  const lockPath = join(dir, LOCK_FILE);
  if (heldByThisProcess.has(dir)) throw inUse(dataDir, process.pid);
  const name = kernelLockName(dir);
  const kernel = name === undefined ? undefined : await bindKernelLock(name);
  if (kernel === 'busy') {
    const pid = await holderPid(lockPath);
    throw pid === undefined ? new WritError('STORE_LOCKED', `data dir ${dataDir} is in use by another process`) : inUse(dataDir, pid);
  }
  if (heldByThisProcess.has(dir)) {
    kernel?.close();
    throw inUse(dataDir, process.pid);
  }
  try {
    const lock = lockFile(dataDir, dir, lockPath);
    return {
      path: lock.path,
      release() {
        lock.release();
        kernel?.close();
      },
    };
  } catch (e) {
    kernel?.close();
    throw e;
  }
}

/** The lock file's part (see the module comment); the caller holds the kernel lock where there is one. */
function lockFile(dataDir: string, dir: string, lockPath: string): DirLock {
  const mine: LockInfo = { pid: process.pid, started: procStat(process.pid)?.started ?? null, host: hostname() };
  const myText = `${JSON.stringify(mine)}\n`;
  const tmp = `${lockPath}.${process.pid}.${Date.now()}.tmp`;
  writeFileSync(tmp, myText, { mode: 0o600 });
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        linkSync(tmp, lockPath);
        heldByThisProcess.add(dir);
        return {
          path: lockPath,
          release() {
            heldByThisProcess.delete(dir);
            const now = readLock(lockPath);
            if (now?.text === myText) unlinkSync(lockPath);
          },
        };
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      const held = readLock(lockPath);
      if (held === undefined) continue; // released meanwhile: try again
      // A lock we cannot parse was not written by writ's atomic link: treat it as stale.
      if (held.info !== undefined && holderAlive(held.info, dir)) throw inUse(dataDir, held.info.pid);
      // Stale: remove it only if it is still the same file content we judged.
      const again = readLock(lockPath);
      if (again?.text === held.text) {
        try {
          unlinkSync(lockPath);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
        }
      }
    }
    throw new WritError('STORE_LOCKED', `data dir ${dataDir} is in use: could not take ${lockPath}`);
  } finally {
    try {
      unlinkSync(tmp);
    } catch {
      // already gone
    }
  }
}

function inUse(dataDir: string, pid: number): WritError {
  return new WritError('STORE_LOCKED', `data dir ${dataDir} is in use by pid ${pid}`, { details: { pid } });
}
