// AuthZEN search (docs/protocol.md §15) over 10,000 candidate entities: a subject search walked page by
// page (limit 1000), next to the same number of single evaluations on the same engine, in one run.
// In process (the engine and the search module; no HTTP, no ledger), so the figure is the search's own.
//
// Usage: npm run build && node bench/search.mjs   → writes bench/results/search.md
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadPolicyDir } from '../dist/src/policy/load.js';
import { PolicyEngine } from '../dist/src/policy/engine.js';
import { StaticEntitySource } from '../dist/src/policy/entities.js';
import { candidatesOf, parseSearchRequest, searchPageSync } from '../dist/src/authzen/search.js';
import { requestInputOf } from '../dist/src/authzen/request.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const EXAMPLE = join(HERE, '..', 'examples', 'authzen-search');
const USERS = 10_000;
const ROUNDS = 3;

const bundle = loadPolicyDir(EXAMPLE);
const groups = ['eng', 'sales', 'ops', 'legal'];
const entities = [...bundle.seedEntities];
for (const g of groups)
  if (!entities.some((e) => e.uid.type === 'group' && e.uid.id === g)) entities.push({ uid: { type: 'group', id: g }, attrs: {}, parents: [] });
for (let i = 0; i < USERS; i++) {
  entities.push({
    uid: { type: 'user', id: `u${String(i).padStart(5, '0')}` },
    attrs: { roles: [i % 50 === 0 ? 'admin' : 'viewer'] },
    parents: [{ type: 'group', id: groups[i % groups.length] }],
  });
}
const source = new StaticEntitySource(entities);
const engine = new PolicyEngine(bundle);
const body = { subject: { type: 'user' }, action: { name: 'can_read' }, resource: { type: 'document', id: 'design-doc' } };
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const searchMs = [];
const evalMs = [];
let found = 0;
let pages = 0;
for (let r = 0; r < ROUNDS; r++) {
  let t = performance.now();
  let token = '';
  found = 0;
  pages = 0;
  do {
    const request = parseSearchRequest(JSON.stringify({ ...body, page: { limit: 1000, token } }), 'subject');
    const page = searchPageSync(request, candidatesOf(request, source.all(), engine.actionNames()), (e) => engine.decideRequest(requestInputOf(e, source)));
    found += page.results.length;
    pages++;
    token = page.next_token;
  } while (token !== '');
  searchMs.push(performance.now() - t);
  const template = parseSearchRequest(JSON.stringify(body), 'subject').template;
  t = performance.now();
  for (let i = 0; i < USERS; i++)
    engine.decideRequest(requestInputOf({ ...template, subject: { type: 'user', id: `u${String(i).padStart(5, '0')}` } }, source));
  evalMs.push(performance.now() - t);
}
const md = `## AuthZEN search over 10,000 candidates

\`node bench/search.mjs\` (after \`npm run build\`), ${new Date().toISOString().slice(0, 16)}Z, ${cpus().length} cores, Node ${process.version}.
Subject search "who may can_read design-doc" over ${USERS.toLocaleString('en')} users (examples/authzen-search plus generated users
in four groups), walked page by page (limit 1000), in process; medians of ${ROUNDS} rounds; load average ${loadavg()[0].toFixed(1)} at the end (read the ratio, not the times, when it is high).

| what | ms | per candidate |
| --- | ---: | ---: |
| the whole search (${pages} pages, ${found} results) | ${median(searchMs).toFixed(0)} | ${((median(searchMs) / USERS) * 1000).toFixed(1)} µs |
| baseline: ${USERS.toLocaleString('en')} single evaluations of the same request | ${median(evalMs).toFixed(0)} | ${((median(evalMs) / USERS) * 1000).toFixed(1)} µs |

A search costs one evaluation per candidate it passes over (linear in the candidates of the searched
type); the difference to the baseline is the candidate listing, sorting and paging. Over HTTP each page
is also one ledger record, and evaluations run on the evaluator threads.
`;
mkdirSync(join(HERE, 'results'), { recursive: true });
writeFileSync(join(HERE, 'results', 'search.md'), md);
process.stdout.write(md);
