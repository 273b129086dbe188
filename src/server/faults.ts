/**
 * Test-only fault injection for a running server (issue 7): when WRIT_FAULT_FILE names a file, every
 * durable write reads it first. The file holds `{"label"?: "reserve"|"decision"|"terminal"|...,
 * "mode": "fail"|"enospc"|"timeout", "remaining"?: N}`; a matching write fails that way (before its
 * commit, so nothing of it is written) and `remaining` counts down (the file is removed at 0).
 * Without the variable this module does nothing; production never sets it.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { FaultHooks } from '../store/store.js';

interface FaultSpec {
  label?: string;
  mode: 'fail' | 'enospc' | 'timeout';
  remaining?: number;
  timeout_ms?: number;
}

export function faultHooksFromEnv(env: NodeJS.ProcessEnv = process.env): FaultHooks | undefined {
  const file = env.WRIT_FAULT_FILE;
  if (!file) return undefined;
  return {
    async beforeCommit(label) {
      let spec: FaultSpec;
      try {
        spec = JSON.parse(readFileSync(file, 'utf8'));
      } catch {
        return;
      }
      if (spec.label !== undefined && spec.label !== label) return;
      if (spec.remaining !== undefined) {
        if (spec.remaining <= 1) rmSync(file, { force: true });
        else writeFileSync(file, JSON.stringify({ ...spec, remaining: spec.remaining - 1 }));
      }
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
