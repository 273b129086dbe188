#!/usr/bin/env node
// `npm run bench [-- name…]`: runs the benchmarks (each writes bench/results/<name>.md with its
// figures next to the baseline measured in the same run), then assembles bench/RESULTS.md.
// `npm run bench -- --assemble` only re-assembles from the existing result files.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const ORDER = [
  'binding',
  'decide',
  'memo',
  'visibility',
  'search',
  'store',
  'verify',
  'proof',
  'http',
  'http-wrk',
  'http-notes',
  'authzen',
  'identity',
  'replicas',
  'proxy',
  'gateway',
  'memory',
  'chaos',
  'replay',
  'fairness',
];
const args = process.argv.slice(2);
const assembleOnly = args.includes('--assemble');
const wanted = args.filter((a) => !a.startsWith('--'));
const names = ORDER.filter((n) => existsSync(join(here, `${n}.mjs`)) && (wanted.length === 0 || wanted.includes(n)));

if (!assembleOnly) {
  for (const name of names) {
    process.stderr.write(`\n=== bench/${name}.mjs\n`);
    const r = spawnSync(process.execPath, ['--expose-gc', join(here, `${name}.mjs`)], { stdio: 'inherit' });
    if (r.status !== 0) process.stderr.write(`bench/${name}.mjs exited ${r.status}\n`);
  }
}

const resultsDir = join(here, 'results');
const files = existsSync(resultsDir) ? readdirSync(resultsDir).filter((f) => f.endsWith('.md')) : [];
files.sort((a, b) => {
  const ia = ORDER.indexOf(a.replace(/\.md$/, ''));
  const ib = ORDER.indexOf(b.replace(/\.md$/, ''));
  return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || a.localeCompare(b);
});
const header = `# writ benchmark results

Assembled by \`npm run bench\` from \`bench/results/*.md\`; each section was measured in one run next
to its own baseline and says how to reproduce it. Machine of the last assembly: ${cpus().length} cores
(${cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}. Timing never enters \`npm test\`.
`;
writeFileSync(join(here, 'RESULTS.md'), [header, ...files.map((f) => `${readFileSync(join(resultsDir, f), 'utf8').trim()}\n`)].join('\n'));
process.stderr.write(`wrote bench/RESULTS.md from ${files.length} section(s)\n`);
