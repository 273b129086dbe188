#!/usr/bin/env node
// bench/storage.mjs — bytes on disk per decision: N decisions (default 50,000) through the real decision
// path (the sidecar in-process: admission, Cedar, commit with revalidation, the store's group commit)
// into a fresh LMDB data dir and a fresh PostgreSQL database, against the mean length of a record's
// text (its JCS export line) in the same run.
//   LMDB: data.mdb's size and the pages each sub-database holds (env.getStats / db.getStats).
//   PostgreSQL: pg_total_relation_size of every table (heap, indexes, TOAST) after VACUUM and CHECKPOINT.
// LMDB: `--layout 1` writes a format-1 store (plain text: a new data dir by default), `--layout 2` a
// format-2 one (LZ4: a new data dir with store_compression "lz4"); by default both, in the same run. Writes its own section of bench/RESULTS.md.
// Reproduce: `npm run build -- --tests && node bench/storage.mjs [--decisions 50000] [--backend lmdb|postgres]`
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { open } from 'lmdb';
import pg from 'pg';
import { DEFAULTS } from '../dist/src/config/config.js';
import { loadPolicyDir } from '../dist/src/policy/load.js';
import { pdpServices } from '../dist/src/pdp/services.js';
import { LmdbStore } from '../dist/src/store/lmdb/lmdb-store.js';
import { PgStore } from '../dist/src/store/postgres/pg-store.js';
import { startPostgres } from '../dist/test/helpers/postgres.js';
import { offboardingBody, REPO } from '../dist/test/helpers/server.js';

const here = dirname(fileURLToPath(import.meta.url));
const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
};
const N = Number(arg('decisions', '50000'));
const BACKENDS = arg('backend', 'lmdb,postgres').split(',');
const LAYOUTS = arg('layout', '1,2').split(',').map(Number);
const CONCURRENCY = 50;
const PEP = { role: 'pep', name: 'bench-pep', actor: { type: 'Agent', id: 'offboarding-agent-prod' } };
const fmt = (n, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

/** N distinct proposals (one execution each), CONCURRENCY at a time, as a PEP sends them. */
async function decide(store) {
  const config = { ...DEFAULTS, tokens: [], policy_dir: join(REPO, 'policies'), data_dir: '/nonexistent', evaluator_threads: 0, http_threads: 0 };
  const pdp = pdpServices(config, store, loadPolicyDir(config.policy_dir));
  await pdp.policy.recordStartup();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < N; i = next++) {
      const body = offboardingBody({ execution_id: `OFF-${100000 + i}:disable-sign-in`, envelope: { task_id: `OFF-${100000 + i}` } });
      const r = await pdp.decisions.decide(PEP, JSON.stringify(body));
      if (typeof r.decision !== 'string') throw new Error(`decision ${i}: ${JSON.stringify(r)}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  await pdp.core.close();
}

/** Records, their mean text length (bytes of the export line, without the newline) and the decisions among them. */
async function textStats(store) {
  let records = 0;
  let bytes = 0;
  let decisions = 0;
  let decisionBytes = 0;
  for await (const line of store.exportLines()) {
    records++;
    const n = Buffer.byteLength(line);
    bytes += n;
    if (line.includes('"kind":"decision"')) {
      decisions++;
      decisionBytes += n;
    }
  }
  return { records, bytes, decisions, decisionBytes };
}

async function lmdbRun(layout) {
  const dir = mkdtempSync(join(os.tmpdir(), 'writ-bench-storage-'));
  const store = await LmdbStore.open({ dataDir: dir, format: String(layout) });
  const t0 = Date.now();
  await decide(store);
  const seconds = (Date.now() - t0) / 1000;
  const text = await textStats(store);
  await store.close();
  const file = statSync(join(dir, 'store', 'data.mdb')).size;
  // Page counts per sub-database, read with a plain lmdb-js handle (the store is closed).
  // The page size is the file's (the first meta page's md_pad, as src/store/layout.ts reads it).
  const pageSize = readFileSync(join(dir, 'store', 'data.mdb')).readUInt32LE(48);
  const env = open({ path: join(dir, 'store'), readOnly: true, maxDbs: 16, pageSize });
  const envStats = env.getStats();
  const parts = {};
  let used = 0;
  // The names are read first: opening a sub-database while the cursor over the names is open can invalidate it.
  for (const key of [...env.getKeys()]) {
    const s = env.openDB({ name: key, create: false }).getStats();
    const pages = s.treeBranchPageCount + s.treeLeafPageCount + s.overflowPages;
    parts[key] = { bytes: pages * pageSize, entries: s.entryCount, leafPages: s.treeLeafPageCount, overflow: s.overflowPages };
    used += pages * pageSize;
  }
  const lastPage = envStats.lastPageNumber + 1;
  await env.close();
  rmSync(dir, { recursive: true, force: true });
  return { backend: 'lmdb', layout, seconds, text, disk: file, used, pageSize, lastPageBytes: lastPage * pageSize, parts };
}

async function pgRun(server, layout) {
  const url = await server.createDatabase();
  const store = await PgStore.open({ url });
  const t0 = Date.now();
  await decide(store);
  const seconds = (Date.now() - t0) / 1000;
  const text = await textStats(store);
  await store.close();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('VACUUM');
  await client.query('CHECKPOINT');
  const { rows } = await client.query(
    `SELECT c.relname AS name, pg_total_relation_size(c.oid)::bigint AS total, pg_relation_size(c.oid)::bigint AS heap,
            pg_indexes_size(c.oid)::bigint AS indexes, COALESCE(pg_total_relation_size(NULLIF(c.reltoastrelid, 0)), 0)::bigint AS toast
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind = 'r' AND n.nspname = current_schema() ORDER BY total DESC`,
  );
  await client.end();
  const parts = {};
  let disk = 0;
  for (const r of rows) {
    parts[r.name] = { bytes: Number(r.total), heap: Number(r.heap), indexes: Number(r.indexes), toast: Number(r.toast) };
    disk += Number(r.total);
  }
  return { backend: 'postgres', layout, seconds, text, disk, used: disk, parts };
}

const results = [];
let server;
try {
  for (const backend of BACKENDS) {
    if (backend === 'postgres') server = await startPostgres();
    // PostgreSQL has one layout (its schema); the LMDB store one per format.
    for (const layout of backend === 'lmdb' ? LAYOUTS : ['-']) {
      const r = backend === 'lmdb' ? await lmdbRun(layout) : await pgRun(server, layout);
      results.push(r);
      const perDecision = r.disk / N;
      const meanText = r.text.bytes / r.text.records;
      console.log(
        `${backend} layout ${layout}: ${fmt(N)} decisions (${fmt(r.text.records)} records) in ${fmt(r.seconds, 1)} s; ` +
          `${fmt(r.disk)} bytes on disk = ${fmt(perDecision)} per decision; mean record text ${fmt(meanText)} bytes; ratio ${fmt(perDecision / meanText, 2)}×`,
      );
      for (const [name, p] of Object.entries(r.parts)) console.log(`  ${name.padEnd(14)} ${fmt(p.bytes / N).padStart(7)} B/decision  ${JSON.stringify(p)}`);
    }
  }
} finally {
  server?.stop();
}

// The section of bench/RESULTS.md this bench owns, replaced in place on each run.
const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
const lines = [
  '## Bytes on disk per decision (LMDB and PostgreSQL)',
  '',
  `${fmt(N)} proposals with distinct execution ids through the sidecar in-process (${CONCURRENCY} at a time), into a fresh store;`,
  `per decision = bytes on disk / decisions; the records also hold the startup records and the checkpoints. ${new Date().toISOString().slice(0, 16)} UTC,`,
  `${os.cpus().length} × ${cpu}, Node ${process.version}. Reproduce: \`npm run build -- --tests && node bench/storage.mjs\`.`,
  '',
  '| backend | layout | records | mean record text (B) | on disk (B) | per decision (B) | × record text |',
  '|---|---|---:|---:|---:|---:|---:|',
];
for (const r of results) {
  const meanText = r.text.bytes / r.text.records;
  lines.push(
    `| ${r.backend} | ${r.layout} | ${fmt(r.text.records)} | ${fmt(meanText)} | ${fmt(r.disk)} | ${fmt(r.disk / N)} | ${fmt(r.disk / N / meanText, 2)} |`,
  );
}
lines.push('', 'Where the bytes go, per decision (LMDB: pages of each sub-database; PostgreSQL: heap + indexes + TOAST of each table):', '');
for (const r of results) {
  const parts = Object.entries(r.parts)
    .filter(([, p]) => p.bytes / N >= 1)
    .map(([name, p]) => `${name} ${fmt(p.bytes / N)}`)
    .join(', ');
  const extra = r.backend === 'lmdb' ? `; data.mdb ${fmt(r.disk / N)}, pages in use ${fmt(r.used / N)} (page size ${r.pageSize})` : '';
  lines.push(`- ${r.backend}, layout ${r.layout}: ${parts}${extra}`);
}
const section = `${lines.join('\n')}\n`;
const resultsFile = join(here, 'RESULTS.md');
const current = readFileSync(resultsFile, 'utf8');
const start = current.indexOf(lines[0]);
let updated;
if (start < 0) updated = `${current.trimEnd()}\n\n${section}`;
else {
  const end = current.indexOf('\n## ', start + lines[0].length);
  updated = current.slice(0, start) + section + (end < 0 ? '' : current.slice(end));
}
writeFileSync(resultsFile, updated);
console.log(`wrote ${resultsFile}`);
