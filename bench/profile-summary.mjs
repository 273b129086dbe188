#!/usr/bin/env node
// Summarises a V8 .cpuprofile of `writ serve` (bench/http.mjs --cpu-prof DIR) by where the decision
// path spends its CPU: each sample goes to the innermost matching category of its stack.
//   node bench/profile-summary.mjs FILE.cpuprofile [REQUESTS]   (REQUESTS: answered in the profile, for ms/request)
import { readFileSync } from 'node:fs';
const p = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const dt = new Map();
for (let i = 0; i < p.samples.length; i++) dt.set(p.samples[i], (dt.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0));
// categories by first matching ancestor (innermost wins)
const cats = [
  ['Cedar evaluation (statefulIsAuthorized)', (f) => f.functionName === 'statefulIsAuthorized'],
  ['engine: entity slice + context build', (f) => /policy\/(engine|entities|datetime)\.js/.test(f.url)],
  ['store.write (record seal, Merkle, buffers)', (f) => f.functionName === 'write' && /store\/store\.js/.test(f.url)],
  ['LMDB commit (apply + lmdb-js)', (f) => /lmdb\//.test(f.url) || f.functionName === '#apply'],
  [
    'admission: lossless parse, schema, binding, digests',
    (f) => /binding\/|schemas\/validate|ajv/.test(f.url) || ['parseLossless', 'toPlain', 'admitValue', 'bindCall', 'envelopeDigest'].includes(f.functionName),
  ],
  ['reading the body', (f) => f.functionName === 'readJsonText'],
  [
    'HTTP: node http parse, hono, node-server, socket writes',
    (f) => /node:_http|node:net|hono|node-server|streams\/|webstreams|undici|node:events/.test(f.url) || /hono/.test(f.url),
  ],
  ['GC', (f) => f.functionName === '(garbage collector)'],
  ['idle', (f) => f.functionName === '(idle)'],
];
const tot = new Map();
let total = 0;
for (const n of p.nodes) {
  const t = dt.get(n.id) ?? 0;
  if (!t) continue;
  total += t;
  let id = n.id,
    cat = 'other (startup, timers, sidecar glue)';
  outer: while (id !== undefined) {
    const f = byId.get(id).callFrame;
    for (const [name, test] of cats)
      if (test(f)) {
        cat = name;
        break outer;
      }
    id = parent.get(id);
  }
  tot.set(cat, (tot.get(cat) ?? 0) + t);
}
const reqs = Number(process.argv[3] ?? NaN);
const idle = tot.get('idle') ?? 0;
const busy = total - idle;
console.log(`profile ${(total / 1e6).toFixed(1)} s, busy ${(busy / 1e6).toFixed(1)} s`);
for (const [k, v] of [...tot].sort((a, b) => b[1] - a[1]))
  if (k !== 'idle')
    console.log(`${((100 * v) / busy).toFixed(1).padStart(5)}%  ${Number.isFinite(reqs) ? `${(v / 1000 / reqs).toFixed(3)} ms/req  ` : ''}${k}`);
