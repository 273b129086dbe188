/**
 * Whether this Node needs V8's `--no-turbo-inline-js-wasm-calls`, and setting it when it does.
 *
 * Node 20's V8 (11.3) inlines JS→Wasm calls into optimized callers; when such a caller is lazily
 * deoptimized while cedar-wasm's glue runs (its string getters change object maps), the process
 * aborts (V8_Fatal "unreachable code" in Deoptimizer::DoComputeBuiltinContinuation). The flag prevents
 * it, but makes every bare cedar-wasm call about 2.3× slower (a trivial
 * statefulIsAuthorized takes 97 µs with it, 41 µs without, on Node 20; 22 µs on Node 24 without it),
 * so it is applied only where the abort exists.
 *
 * Where that is was established by trying, not guessed: `node scripts/wasm-inline-check.mjs` runs
 * bench/decide.mjs (the call pattern that aborted) with the flag forced off
 * (WRIT_WASM_INLINE_GUARD=off) and reports whether the process survived. Results (Linux x64, 2 shared
 * cores, cedar-wasm 4.13.0):
 *   Node 20.20.2 (V8 11.3.244)  aborted ("unreachable code" in Deoptimizer::DoComputeBuiltinContinuation)
 *   Node 22.23.5 (V8 12.4.254)  aborted the same way, 2 runs of 2 (after 84 s and 86 s)
 *   Node 24.22.3 (V8 13.6.233)  ran clean, 2 runs of 2 (396 s and 662 s, the whole benchmark)
 * So the flag stays on Node 20 and 22 and is dropped from Node 24 on. Re-run the check when adopting a
 * new Node major or cedar-wasm version (e.g. a later 22.x whose V8 carries the fix).
 *
 * WRIT_WASM_INLINE_GUARD=on|off overrides the decision (for the check itself, and as an escape hatch).
 */
import { setFlagsFromString } from 'node:v8';

export const WASM_INLINE_GUARD_FLAG = '--no-turbo-inline-js-wasm-calls';

/** The first Node major on which the check ran clean (see above). */
export const FIRST_CLEAN_MAJOR = 24;

export function wasmInlineGuardNeeded(nodeVersion: string = process.versions.node, env: NodeJS.ProcessEnv = process.env): boolean {
  const forced = env.WRIT_WASM_INLINE_GUARD;
  if (forced === 'on') return true;
  if (forced === 'off') return false;
  return Number(nodeVersion.split('.')[0]) < FIRST_CLEAN_MAJOR;
}

let applied: boolean | undefined;

/**
 * Sets the flag when this Node needs it (once per process: V8 flags are process-wide, so worker
 * threads started afterwards have it too). Only code optimized after the call is affected, so call it
 * before the first Cedar call. Returns whether the flag is set.
 */
export function applyWasmInlineGuard(): boolean {
  if (applied === undefined) {
    applied = wasmInlineGuardNeeded();
    if (applied) setFlagsFromString(WASM_INLINE_GUARD_FLAG);
  }
  return applied;
}
