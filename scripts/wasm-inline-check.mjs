#!/usr/bin/env node
// Does this Node's V8 abort on cedar-wasm calls without --no-turbo-inline-js-wasm-calls?
// The check behind src/policy/wasm-inline-guard.ts: runs bench/decide.mjs (PolicyEngine.evaluate and the
// bare cedar-wasm calls on the bundled story over 10 and 1000 policies, interleaved in measured rounds:
// the call pattern that made Node 20 abort) with the guard forced off (WRIT_WASM_INLINE_GUARD=off),
// --runs times, and reports whether each run survived. A simpler tight loop of the same calls did NOT
// reproduce the abort on Node 20 in 2 × 20 s, so the check is the benchmark itself. Needs a build.
//
//   node scripts/wasm-inline-check.mjs [--node PATH] [--runs 2]
// Exit 0: every run clean (this Node does not need the flag); 1: some run aborted (it does).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { node: { type: 'string' }, runs: { type: 'string', default: '2' } } });
const node = values.node ?? process.execPath;
const bench = fileURLToPath(new URL('../bench/decide.mjs', import.meta.url));
// biome-ignore lint/suspicious/noTemplateCurlyInString: the template is evaluated by the child node (-p), not here.
const version = spawnSync(node, ['-p', '`Node ${process.versions.node} (V8 ${process.versions.v8})`'], { encoding: 'utf8' }).stdout.trim();
const scratch = mkdtempSync(join(tmpdir(), 'writ-wasm-check-'));
let aborted = 0;
const runs = Number(values.runs);
for (let r = 1; r <= runs; r++) {
  const started = Date.now();
  const child = spawnSync(node, [bench], {
    env: { ...process.env, WRIT_WASM_INLINE_GUARD: 'off', WRIT_BENCH_DECIDE_OUT: join(scratch, 'decide.md') },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const seconds = Math.round((Date.now() - started) / 1000);
  const clean = child.status === 0 && child.signal === null;
  if (!clean) aborted++;
  const fatal = (child.stderr.match(/unreachable code|Fatal error[^\n]*|Deoptimizer::\w+/g) ?? []).slice(0, 2).join('; ');
  const how = clean ? 'clean' : `ABORTED (${child.signal ?? `exit ${child.status}`}${fatal ? `: ${fatal}` : ''})`;
  process.stdout.write(`${version}, run ${r}/${runs} of bench/decide.mjs without --no-turbo-inline-js-wasm-calls: ${how} after ${seconds} s\n`);
}
rmSync(scratch, { recursive: true, force: true });
process.exit(aborted ? 1 : 0);
