#!/usr/bin/env node
// Benchmark: writ-bind/1 admission + binding (lossless parse, §3 admission, JCS, SHA-256, Cedar view)
// of a 1 KiB and a 64 KiB argument object, as a ratio to plain `JSON.parse` + `canonicalize` measured in
// the same run. Also shows lossless-json's parse alone, for the parser choice in src/binding/parse.ts.
// Writes bench/results/binding.md.
//
// Run: npx tsc -p . && node bench/binding.mjs
import { writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import canonicalize from 'canonicalize';
import { parse as losslessParse } from 'lossless-json';
import { admitArgumentsText } from '../dist/src/binding/index.js';

const RUNS = 7;

/** A deterministic argument object of at most `bytes` bytes (the largest below it): strings (some non-ASCII and escaped),
 *  integers, decimals, booleans, nulls, nested records and arrays — what tool calls look like. */
function makeArguments(bytes) {
  let i = 0;
  const out = {};
  const item = (n) => ({
    id: `item-${n}`,
    qty: n * 7,
    price: Number(`${n}.${(n * 37) % 100 || 5}`.replace(/0+$/, '')),
    tags: ['a', 'b\u00e9', `t${n % 5}`],
    active: n % 2 === 0,
    note: n % 3 === 0 ? null : `line ${n}\nwith "quotes" and caf\u00e9`,
    meta: { created: '2026-08-24T17:00:00Z', rank: n % 11, ratio: 0.25 },
  });
  let text = '{}';
  for (;;) {
    out[`k${String(i).padStart(4, '0')}`] = item(i + 1);
    i++;
    const next = JSON.stringify(out, null, 1);
    if (Buffer.byteLength(next) > bytes) return text;
    text = next;
  }
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}
function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

/** Median per-op µs over RUNS timed batches, plus p50/p99 of single-op latencies. */
function measure(fn, iterations) {
  for (let i = 0; i < Math.min(200, iterations); i++) fn(); // warm-up
  const batch = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) fn();
    batch.push(Number(process.hrtime.bigint() - t0) / 1000 / iterations);
  }
  const single = [];
  for (let i = 0; i < iterations; i++) {
    const t0 = process.hrtime.bigint();
    fn();
    single.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  return { median: median(batch), p50: percentile(single, 50), p99: percentile(single, 99) };
}

const cases = [
  { label: '1 KiB', text: makeArguments(1024), iterations: 5000 },
  { label: '64 KiB', text: makeArguments(64 * 1024), iterations: 200 },
];

const rows = [];
for (const c of cases) {
  // Sanity: the benchmarked input is admitted, so the full path is measured.
  const bound = admitArgumentsText(c.text, 'bench', 'tool');
  if (!bound.binding.startsWith('writ-bind/1:sha256:')) throw new Error('not admitted');
  const baseline = measure(() => canonicalize(JSON.parse(c.text)), c.iterations);
  const writ = measure(() => admitArgumentsText(c.text, 'bench', 'tool'), c.iterations);
  const lossless = measure(() => losslessParse(c.text), c.iterations);
  rows.push({ ...c, bytes: Buffer.byteLength(c.text), baseline, writ, lossless });
}

const fmt = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const lines = [
  '## writ-bind/1 admission + binding',
  '',
  `Machine: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), Node ${process.version}. ` +
    `Median of ${RUNS} timed batches; p50/p99 over single operations. Reproduce: \`npx tsc -p . && node bench/binding.mjs\`.`,
  '',
  'writ = `admitArgumentsText` (lossless parse with duplicate/surrogate/depth checks, §3 number admission, JCS, ' +
    'SHA-256 binding, Cedar view). Baseline = `canonicalize(JSON.parse(text))` (no checks, no hash, no Cedar view).',
  '',
  '| input | bytes | baseline µs/op | writ µs/op | **ratio writ / baseline** | writ p50 µs | writ p99 µs | lossless-json parse only µs/op (ratio) |',
  '|---|---:|---:|---:|---:|---:|---:|---:|',
  ...rows.map(
    (r) =>
      `| ${r.label} | ${r.bytes} | ${fmt(r.baseline.median)} | ${fmt(r.writ.median)} | **${(r.writ.median / r.baseline.median).toFixed(2)}×** | ` +
      `${fmt(r.writ.p50)} | ${fmt(r.writ.p99)} | ${fmt(r.lossless.median)} (${(r.lossless.median / r.baseline.median).toFixed(2)}×) |`,
  ),
  '',
];
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(new URL('./results/binding.md', import.meta.url), lines.join('\n'));
process.stdout.write(lines.join('\n'));
