/**
 * A witness's durable state (docs/protocol.md §16): per log origin, the latest checkpoint it cosigned,
 * `{origin, size, root}` in `<state>/logs/<sha256(origin)>.json`, written durably (fsync) before the
 * witness answers. The state dir is locked (one witness process per state dir), and every check and
 * update runs synchronously on one thread, so two requests cannot interleave between them.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { WritError } from '../errors.js';
import { lockDataDir, type DirLock } from '../store/lock.js';
import { writeFileDurably } from '../util/durable-file.js';
import type { CosignedState } from './add-checkpoint.js';

export class WitnessState {
  readonly #byOrigin = new Map<string, CosignedState>();

  private constructor(
    readonly dir: string,
    readonly lock: DirLock,
  ) {}

  static async open(dir: string): Promise<WitnessState> {
    mkdirSync(join(dir, 'logs'), { recursive: true, mode: 0o700 });
    const state = new WitnessState(dir, await lockDataDir(dir));
    for (const name of readdirSync(join(dir, 'logs'))) {
      if (!name.endsWith('.json')) continue;
      let v: { origin?: unknown; size?: unknown; root?: unknown };
      try {
        v = JSON.parse(readFileSync(join(dir, 'logs', name), 'utf8'));
      } catch (e) {
        state.lock.release();
        // Never start from a guess: a lost state would let the witness cosign a fork.
        throw new WritError('STORE_CORRUPT', `witness state ${join(dir, 'logs', name)} cannot be read: ${(e as Error).message}`, { details: { seq: null } });
      }
      if (typeof v.origin !== 'string' || !Number.isSafeInteger(v.size) || typeof v.root !== 'string') {
        state.lock.release();
        throw new WritError('STORE_CORRUPT', `witness state ${join(dir, 'logs', name)} is not {origin, size, root}`, { details: { seq: null } });
      }
      state.#byOrigin.set(v.origin, { size: v.size as number, root: v.root });
    }
    return state;
  }

  get(origin: string): CosignedState | undefined {
    return this.#byOrigin.get(origin);
  }

  /** Durable before it returns. */
  put(origin: string, s: CosignedState): void {
    const file = join(this.dir, 'logs', `${createHash('sha256').update(origin).digest('hex')}.json`);
    writeFileDurably(file, `${JSON.stringify({ origin, size: s.size, root: s.root })}\n`, { mode: 0o600 });
    this.#byOrigin.set(origin, s);
  }

  close(): void {
    this.lock.release();
  }
}
