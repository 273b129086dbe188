#!/usr/bin/env node
// The C2SP ledger (issue 54, docs/protocol.md §16), on a real sidecar (bin/writ serve, LMDB) and real
// witnesses (bin/writ witness serve), all on this machine:
//   1. checkpoint-to-cosigned latency with 3 witnesses: from the answer of the write that makes a
//      checkpoint (every_records 100) to the moment GET /ledger/checkpoint carries all 3 cosignatures
//      of it (polled every 2 ms); median, p99 over the rounds;
//   2. tiles served per second (a ledger of 3,000 entity records: entity upserts slow down as the
//      entity store grows, so the bench does not fill more): GET /ledger/tile/0/<N> (8 KiB) and /ledger/tile/entries/<N> (256
//      records) over 16 keep-alive connections, against the JSON page of the same 256 records
//      (GET /v1/ledger/records?from=&limit=256) measured in the same run as the baseline.
//
//   node bench/transparency.mjs [--rounds 30] [--records 3000] [--seconds 5]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const WRIT = join(root, 'bin', 'writ');
const { values: a } = parseArgs({
  options: { rounds: { type: 'string', default: '30' }, records: { type: 'string', default: '3000' }, seconds: { type: 'string', default: '5' } },
});
const ROUNDS = Number(a.rounds);
const RECORDS = Number(a.records);
const SECONDS = Number(a.seconds);
const dir = mkdtempSync(join(tmpdir(), 'writ-bench-c2sp-'));
const children = [];

function start(args, pattern) {
  const child = spawn(process.execPath, [WRIT, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  let out = '';
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      const m = pattern.exec(out);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`writ ${args[0]} exited ${code}: ${out}`)));
  });
}

const quantile = (xs, q) => {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

const ADMIN = 'bench-admin';
const AUDITOR = 'bench-auditor';
async function put(url, i) {
  const r = await fetch(`${url}/v1/entities/Role/r${i}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: '{"attrs":{},"parents":[]}',
  });
  if (r.status !== 200) throw new Error(`PUT ${r.status}`);
  await r.arrayBuffer();
}

try {
  // The log key first, so the witnesses can be told it.
  const dataDir = join(dir, 'data');
  const kg = JSON.parse(spawnSync(process.execPath, [WRIT, 'keygen', '--data-dir', dataDir], { encoding: 'utf8' }).stdout);
  const { encodeVkey, SIG_ED25519, parseVkey, verifyNote } = await import('../dist/src/transparency/note.js');
  const origin = 'bench.example/ledger';
  const logVkey = encodeVkey(origin, SIG_ED25519, Buffer.from(kg.public_key, 'base64'));
  const witnesses = [];
  for (const n of [1, 2, 3]) {
    const vkey = spawnSync(process.execPath, [WRIT, 'witness', 'keygen', '--name', `w${n}.bench`, '--out', join(dir, `w${n}.key`)], {
      encoding: 'utf8',
    }).stdout.trim();
    const url = await start(
      ['witness', 'serve', '--key', join(dir, `w${n}.key`), '--log', logVkey, '--state', join(dir, `w${n}`), '--listen', '127.0.0.1:0'],
      /listening on (http:\/\/\S+)/,
    );
    witnesses.push({ url, vkey });
  }
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      listen: '127.0.0.1:0',
      data_dir: dataDir,
      log_origin: origin,
      public_tiles: true,
      witnesses,
      checkpoint: { every_records: 100, every_ms: 600000 },
      tokens: [
        { token: ADMIN, role: 'admin' },
        { token: AUDITOR, role: 'auditor' },
      ],
    }),
  );
  const url = await start(['serve', '--config', config], /listening on (http:\/\/\S+)/);
  const keys = [parseVkey(logVkey), ...witnesses.map((w) => parseVkey(w.vkey))];

  // 1. Checkpoint → cosigned by all three.
  let next = 0;
  const latencies = [];
  for (let r = 0; r < ROUNDS + 3; r++) {
    for (let i = 0; i < 100; i++) await put(url, next++);
    const t0 = performance.now();
    const cp = await (await fetch(`${url}/v1/ledger/checkpoint`, { headers: { authorization: `Bearer ${AUDITOR}` } })).json();
    for (;;) {
      const note = await (await fetch(`${url}/ledger/checkpoint`)).text();
      const v = verifyNote(note, keys);
      if (process.env.BENCH_DEBUG) process.stderr.write(`${v.verified.length} ${v.text.split('\n')[1]} ${cp.size}\n`);
      if (v.verified.length === 4 && v.text.split('\n')[1] === String(cp.size)) break;
      await new Promise((res) => setTimeout(res, 2));
    }
    if (r >= 3) latencies.push(performance.now() - t0); // the first rounds warm up
    process.stderr.write(`round ${r}: checkpoint ${cp.size} cosigned\n`);
  }

  // 2. Tiles per second, and the JSON page of the same records as the baseline.
  const fill = RECORDS - next;
  for (let i = 0; i < fill; i += 32) {
    await Promise.all(Array.from({ length: Math.min(32, fill - i) }, (_, j) => put(url, next + i + j)));
    if (process.env.BENCH_DEBUG && i % 512 === 0) process.stderr.write(`filled ${i}\n`);
  }
  next += fill;
  const cp = await (await fetch(`${url}/v1/ledger/checkpoint`, { headers: { authorization: `Bearer ${AUDITOR}` } })).json();
  const fullTiles = Math.floor(cp.size / 256);
  const path3 = (n) => String(n).padStart(3, '0');
  async function load(label, pathOf) {
    const lat = [];
    let done = 0;
    let bytes = 0;
    const until = performance.now() + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: 16 }, async (_, c) => {
        for (let i = c; performance.now() < until; i += 16) {
          const s = performance.now();
          const res = await fetch(url + pathOf(i % fullTiles), { headers: { authorization: `Bearer ${AUDITOR}` } });
          bytes += (await res.arrayBuffer()).byteLength;
          if (res.status !== 200) throw new Error(`${label}: ${res.status}`);
          lat.push(performance.now() - s);
          done++;
        }
      }),
    );
    return { label, perSecond: done / SECONDS, p50: quantile(lat, 0.5), p99: quantile(lat, 0.99), bytes: bytes / done };
  }
  const rows = [
    await load('JSON page of 256 records (baseline)', (n) => `/v1/ledger/records?from=${n * 256}&limit=256`),
    await load('entry bundle of 256 records', (n) => `/ledger/tile/entries/${path3(n)}`),
    await load('level-0 tile (256 hashes)', (n) => `/ledger/tile/0/${path3(n)}`),
  ];
  const base = rows[0].perSecond;
  const md = `## C2SP ledger: witnesses and tiles (bench/transparency.mjs)

${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}; one sidecar (LMDB, durability sync) and three
\`writ witness serve\` processes on the same machine. Reproduce: \`npm run build && node bench/transparency.mjs\`
(--rounds ${ROUNDS} --records ${RECORDS} --seconds ${SECONDS}).

**Checkpoint to cosigned by 3 witnesses** (every_records 100; from the answer of the write that makes the
checkpoint to GET /ledger/checkpoint carrying all three cosignatures, polled every 2 ms; ${latencies.length} rounds):
median ${quantile(latencies, 0.5).toFixed(1)} ms, p99 ${quantile(latencies, 0.99).toFixed(1)} ms. Each submission is
one HTTP round trip per witness with a consistency proof, the witness's fsync, and its Ed25519 cosignature.

**Tiles served** (16 keep-alive connections, ${SECONDS} s each, ledger of ${cp.size} records, random full tiles):

| request | per second | × baseline | p50 ms | p99 ms | bytes |
| --- | ---: | ---: | ---: | ---: | ---: |
${rows.map((r) => `| ${r.label} | ${r.perSecond.toFixed(0)} | ${(r.perSecond / base).toFixed(2)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.bytes.toFixed(0)} |`).join('\n')}
`;
  writeFileSync(join(root, 'bench', 'results', 'transparency.md'), md);
  process.stdout.write(md);
} finally {
  // The sidecar first (its final checkpoint still finds its witnesses), then the witnesses.
  for (const c of children.reverse()) {
    if (c.exitCode !== null) continue;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
}
