#!/usr/bin/env node
// `npm run test:chaos`: builds once, then runs the chaos suite. The kill test (SIGKILL under load) runs
// CHAOS_RUNS consecutive times (default 1), each with its own seed (CHAOS_SEED + i, default random);
// the fault, integrity and limits tests run once after it unless CHAOS_ONLY_KILL=1.
// Prints one line per run and a summary {runs, passed, kills}; exits 1 on any failure.
//   CHAOS_RUNS=20 node scripts/chaos.mjs
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const runs = Number(process.env.CHAOS_RUNS ?? 1);
const baseSeed = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 30));
if (!Number.isSafeInteger(runs) || runs < 1) {
  process.stderr.write('CHAOS_RUNS must be a positive integer\n');
  process.exit(2);
}

if (process.env.CHAOS_NO_BUILD !== '1') {
  const build = spawnSync(process.execPath, ['scripts/build.mjs', '--tests'], { stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
}

const dir = mkdtempSync(join(tmpdir(), 'writ-chaos-runs-'));
const report = join(dir, 'report.jsonl');
let passed = 0;
let kills = 0;
let startupKills = 0;
const failures = [];
const t0 = Date.now();
for (let i = 0; i < runs; i++) {
  const seed = baseSeed + i;
  const started = Date.now();
  const r = spawnSync(process.execPath, ['--test', 'dist/test/chaos/kill.test.js'], {
    env: { ...process.env, CHAOS_SEED: String(seed), CHAOS_REPORT: report },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const lines = existsSync(report)
    ? readFileSync(report, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];
  const mine = lines.filter((l) => l.seed === seed).at(-1);
  const ok = r.status === 0 && mine?.ok === true;
  if (mine) kills += mine.kills ?? 0;
  if (mine) startupKills += mine.startup_kills ?? 0;
  if (ok) passed++;
  else failures.push({ run: i + 1, seed, status: r.status, error: mine?.error, tail: `${r.stdout}\n${r.stderr}`.slice(-3000) });
  process.stdout.write(
    `chaos run ${i + 1}/${runs} seed ${seed}: ${ok ? 'ok' : 'FAILED'} (${mine?.kills ?? '?'} kills under load + ${mine?.startup_kills ?? '?'} during startup, ` +
      `${mine?.acknowledged ?? '?'} acknowledged, ${mine?.unanswered ?? '?'} unanswered, ledger ${mine?.ledger ?? '?'}, ` +
      `${Math.round((Date.now() - started) / 100) / 10} s)\n`,
  );
}
rmSync(dir, { recursive: true, force: true });
for (const f of failures) process.stdout.write(`\n--- run ${f.run} (seed ${f.seed}) failed: ${f.error ?? `exit ${f.status}`}\n${f.tail}\n`);
process.stdout.write(
  `chaos summary ${JSON.stringify({ runs, passed, kills, startup_kills: startupKills, base_seed: baseSeed, seconds: Math.round((Date.now() - t0) / 1000) })}\n`,
);

let rest = 0;
if (process.env.CHAOS_ONLY_KILL !== '1') {
  const files = ['faults', 'integrity', 'limits'].map((f) => `dist/test/chaos/${f}.test.js`);
  rest = spawnSync(process.execPath, ['--test', ...files], { stdio: 'inherit' }).status ?? 1;
}
process.exit(passed === runs && rest === 0 ? 0 : 1);
