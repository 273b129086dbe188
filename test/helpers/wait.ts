/**
 * Waiting in tests: on a condition polled until it holds, never for a fixed time. A test that must see
 * something NOT happen waits for an event that comes after the thing would have happened (a later
 * record, a later poll), not for a pause.
 */

/** Calls `check` every `everyMs` until `done` accepts its value; `ok` is false once `timeoutMs` passed first. */
async function poll<T>(check: () => Promise<T> | T, done: (v: T) => boolean, timeoutMs: number, everyMs: number): Promise<{ ok: boolean; value: T }> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (done(value)) return { ok: true, value };
    if (Date.now() > end) return { ok: false, value };
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Polls `check` until it returns a truthy value or `ms` elapse (then returns the last value, for the caller to assert). */
export async function waitFor<T>(check: () => Promise<T> | T, ms = 10_000, every = 50): Promise<T> {
  return (await poll(check, Boolean, ms, every)).value;
}

/** Polls `probe` every 100 ms until it gives a value; fails after `tries` polls, naming `what`. */
export async function until<T>(probe: () => Promise<T | undefined>, what: string, tries = 150): Promise<T> {
  const r = await poll(probe, (v) => v !== undefined, tries * 100, 100);
  if (!r.ok) throw new Error(`timed out waiting for ${what}`);
  return r.value as T;
}

/** Polls `check` until it holds; fails after `timeoutMs`, naming `what` (a function: said as it stands then). */
export async function waitUntil(check: () => Promise<boolean> | boolean, what: string | (() => string), timeoutMs = 15_000, everyMs = 20): Promise<void> {
  if ((await poll(check, Boolean, timeoutMs, everyMs)).ok) return;
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'string' ? what : what()}`);
}

/**
 * One turn of the event loop: every promise callback already queued (and those they queue) has run. For a
 * test that a promise-based wait has NOT ended yet, where nothing but promises could end it.
 */
export function nextTurn(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}
