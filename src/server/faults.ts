/**
 * Test-only fault injection for a running server: when WRIT_FAULT_FILE names a file, every
 * durable write reads it first. The file holds `{"label"?: "reserve"|"decision"|"terminal"|...,
 * "mode": "fail"|"enospc"|"timeout"|"hang", "remaining"?: N, "timeout_ms"?: MS}`; a matching write fails
 * that way (before its commit, so nothing of it is written) and `remaining` counts down (the file is
 * removed at 0). `hang` is a disk that stops answering inside the commit: the committing thread is held
 * for `timeout_ms`, then the commit completes (LMDB store only).
 * Without the variable this module does nothing; production never sets it.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { FaultHooks } from '../store/machine/group-commit.js';

interface FaultSpec {
  label?: string;
  mode: 'fail' | 'enospc' | 'timeout' | 'hang';
  remaining?: number;
  timeout_ms?: number;
}

export function faultHooksFromEnv(env: NodeJS.ProcessEnv = process.env): FaultHooks | undefined {
  const file = env.WRIT_FAULT_FILE;
  if (!file) return undefined;
  const read = (): FaultSpec | undefined => {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as FaultSpec;
    } catch {
      return undefined;
    }
  };
  const countDown = (spec: FaultSpec): void => {
    if (spec.remaining === undefined) return;
    if (spec.remaining <= 1) rmSync(file, { force: true });
    else writeFileSync(file, JSON.stringify({ ...spec, remaining: spec.remaining - 1 }));
  };
  return {
    insideCommit(labels) {
      const spec = read();
      if (spec?.mode !== 'hang' || (spec.label !== undefined && !labels.includes(spec.label))) return;
      countDown(spec);
      // Holds the committing thread as a hung fsync would (nothing else runs on it meanwhile).
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, spec.timeout_ms ?? 60_000);
    },
    async beforeCommit(label) {
      const spec = read();
      if (spec === undefined || spec.mode === 'hang') return;
      if (spec.label !== undefined && spec.label !== label) return;
      countDown(spec);
      if (spec.mode === 'timeout') await new Promise((r) => setTimeout(r, spec.timeout_ms ?? 60_000));
      if (spec.mode === 'enospc') {
        const e = new Error(`ENOSPC: no space left on device (injected at ${label ?? 'write'})`) as NodeJS.ErrnoException;
        e.code = 'ENOSPC';
        throw e;
      }
      throw new Error(`injected store failure at ${label ?? 'write'}`);
    },
  };
}
