/**
 * docs/protocol.md §9 faults, on real processes and a real PostgreSQL: kill -9 of a replica under load
 * loses nothing acknowledged; PostgreSQL stopped under load gives 503s and never an allow, and the
 * same processes serve again when it is back; `writ store copy` keeps an LMDB chain byte for byte.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, REPO, startTestServer, TEST_TOKENS, WRIT_BIN, type TestServer } from '../helpers/server.js';
import pgLib from 'pg';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { waitUntil } from '../helpers/wait.js';

const { Client } = pgLib;
import { lineCount, newDeployment, readBody, startReplicas, verifiedExport } from './helpers.js';
import { frontThreadsSupported } from '../../src/front/node-version.js';

interface Ack {
  id: string;
  seq: number;
  hash: string;
}

/** Concurrent decision workers over the servers until stopped; returns acks and every other answer. */
function load(servers: () => TestServer[], prefix: string, workers = 6) {
  const acks: Ack[] = [];
  const others: Array<{ status: number; code?: string; message?: string; error?: string }> = [];
  let stopped = false;
  let n = 0;
  /** Requests each worker has had answered (or failed). */
  const answered = Array.from({ length: workers }, () => 0);
  const run = async (w: number) => {
    // Each worker takes the servers in turn by its own count. Picking by the shared count (n + w) could
    // lock every worker onto one server: workers that all fail fast and wake in order each see n + w of
    // the same parity, so after a kill every request went to the dead replica and the survivor got none
    // (the 'never reproduced alone' failure of the kill -9 test below).
    let turn = w;
    while (!stopped) {
      const list = servers();
      const s = list[turn++ % list.length]!;
      const id = `${prefix}-${n++}`;
      try {
        const r = await call(s, 'POST', '/v1/decisions', { token: s.tokens.pep, body: readBody(id), timeoutMs: 15_000 });
        if (r.status === 200) {
          assert.equal(r.body.decision, 'allow');
          acks.push({ id, seq: r.body.record.seq, hash: r.body.record.hash });
        } else others.push({ status: r.status, code: r.body?.error?.code, message: r.body?.error?.message });
      } catch (e) {
        // The connection died with the process: not acknowledged. (Which server and why, for a failure's message.)
        others.push({ status: 0, error: `${s.url}: ${(e as Error).message}` });
        // A retry's pace, so a dead server is not hammered; nothing waits on it.
        await new Promise((r) => setTimeout(r, 20));
      }
      answered[w]!++;
    }
  };
  const done = Promise.all(Array.from({ length: workers }, (_, w) => run(w)));
  // stop() may be called more than once (the test body, then its finally).
  return {
    acks,
    others,
    answered,
    stop: async () => {
      stopped = true;
      await done;
    },
  };
}

/** Waits for `cond` (a failing probe counts as not yet). */
function until(cond: () => Promise<boolean>, ms: number, what: () => string = () => ''): Promise<void> {
  return waitUntil(
    () => cond().catch(() => false),
    () => `the condition ${what()}`,
    ms,
    100,
  );
}

/** pg_stat_activity and ungranted locks, for a failure's message. */
async function databaseActivity(pg: TestPostgres): Promise<string> {
  const client = new Client({ connectionString: pg.url() });
  try {
    await client.connect();
    const activity = await client.query(
      `SELECT pid, datname, state, wait_event_type, wait_event, now() - xact_start AS in_xact, left(query, 120) AS query FROM pg_stat_activity WHERE datname IS NOT NULL AND pid <> pg_backend_pid()`,
    );
    const waiting = await client.query(`SELECT pid, locktype, mode, relation::regclass::text AS relation FROM pg_locks WHERE NOT granted`);
    return `pg_stat_activity: ${JSON.stringify(activity.rows)}\nungranted locks: ${JSON.stringify(waiting.rows)}`;
  } catch (e) {
    return `(database activity unavailable: ${(e as Error).message})`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function assertAcknowledged(s: TestServer, acks: Ack[]): Promise<void> {
  for (const a of acks) {
    const r = await call(s, 'GET', `/v1/ledger/records/${a.seq}`, { token: s.tokens.auditor });
    assert.equal(r.status, 200, `acknowledged record ${a.seq} is missing`);
    assert.equal(r.body.hash, a.hash);
    assert.equal(r.body.execution_id, a.id);
  }
}

describe('replica faults on one PostgreSQL', () => {
  let pg: TestPostgres;
  before(async () => {
    pg = await startPostgres();
  });
  after(() => pg?.stop());

  test('kill -9 of a replica under load: every acknowledged record is in the ledger, the chain verifies, the replica restarts', async () => {
    const d = newDeployment(await pg.createDatabase());
    let rs = await startReplicas(d, 2);
    // Started outside the try so the finally always stops it: a failed wait must not leave the load
    // running (the test process would never end).
    const l = load(() => rs, 'KILL');
    try {
      await until(
        async () => l.acks.length >= 8,
        90_000,
        () => JSON.stringify([l.acks.length, l.others.slice(-3)]),
      );
      await rs[0]!.kill();
      const acksAtKill = l.acks.length;
      // On failure, say what became of the survivor too (seen once: it stopped acknowledging after the kill).
      const survivor = () => {
        const c = rs[1]!.child;
        return `survivor pid ${c.pid} exit ${c.exitCode} signal ${c.signalCode}; its output ends:\n${rs[1]!.output().slice(-3000)}`;
      };
      try {
        await until(
          async () => l.acks.length >= acksAtKill + 8,
          90_000,
          () => `${JSON.stringify([l.acks.length, l.others.length, l.others.slice(-3)])}\n${survivor()}`,
        );
      } catch (e) {
        // Seen twice on a heavily loaded machine, never reproduced alone: say what the database was doing
        // and what the survivor answered last, for the next time.
        const survivorAnswers = l.others.filter((o) => !o.error?.startsWith(rs[0]!.url)).slice(-5);
        throw new Error(`${(e as Error).message}\nsurvivor's last other answers: ${JSON.stringify(survivorAnswers)}\n${await databaseActivity(pg)}`, {
          cause: e,
        });
      }
      await l.stop();
      await assertAcknowledged(rs[1]!, l.acks);
      await verifiedExport(rs[1]!);
      const [again] = await startReplicas(d, 1);
      rs = [again!, rs[1]!];
      const r = await call(again!, 'POST', '/v1/decisions', { token: again!.tokens.pep, body: readBody('AFTER-KILL') });
      assert.equal(r.status, 200, r.text);
      const exported = await verifiedExport(again!);
      assert.equal(await verifiedExport(rs[1]!, lineCount(exported)), exported);
    } finally {
      await l.stop();
      for (const s of rs) await s.stop();
      d.remove();
    }
  });

  test('PostgreSQL stopped under load: 503 STORE_UNAVAILABLE, never an allow, then the same processes recover', async () => {
    const d = newDeployment(await pg.createDatabase());
    const rs = await startReplicas(d, 2);
    // Started outside the try so the finally always stops it: a failed wait must not leave the load
    // running (the test process would never end).
    const l = load(() => rs, 'DOWN');
    try {
      await until(
        async () => l.acks.length >= 8,
        90_000,
        () => JSON.stringify([l.acks.length, l.others.slice(-3)]),
      );
      pg.pause();
      const acksAtStop = l.acks.length;
      await until(
        async () => l.others.filter((o) => o.status === 503).length >= 4,
        90_000,
        () => JSON.stringify([l.acks.length, l.others.length, l.others.slice(-3)]),
      );
      // While it is down nothing is acknowledged and readiness says so. Once every worker has been answered
      // again, no request sent before the stop is still in flight; after one more round each, none was acked.
      const everyWorkerAnswered = async (what: string) => {
        const from = [...l.answered];
        await until(
          async () => l.answered.every((n, w) => n > from[w]!),
          90_000,
          () => what,
        );
      };
      await everyWorkerAnswered('the requests in flight at the stop');
      const acksDown = l.acks.length;
      await everyWorkerAnswered('a round of requests while down');
      assert.equal(l.acks.length, acksDown, 'no decision is acknowledged while the database is down');
      assert.ok(acksDown - acksAtStop <= 12, 'at most the commits in flight at the stop');
      for (const s of rs) assert.equal((await call(s, 'GET', '/readyz')).status, 503);
      // Monitoring keeps working while the database is down (§8: /metrics, no auth, Prometheus text).
      for (const s of rs) {
        const m = await call(s, 'GET', '/metrics');
        assert.equal(m.status, 200, m.text);
        assert.match(m.text, /^writ_ledger_records \d+$/m);
      }
      pg.resume();
      for (const s of rs) await until(async () => (await call(s, 'GET', '/readyz')).status === 200, 90_000);
      const before = l.acks.length;
      await until(async () => l.acks.length >= before + 5, 90_000);
      await l.stop();
      for (const o of l.others) {
        assert.equal(o.status, 503, JSON.stringify(o));
        assert.equal(o.code, 'STORE_UNAVAILABLE');
        // The driver's words (which name the database's address) go to the log, not to API clients.
        assert.doesNotMatch(o.message ?? '', new RegExp(`:${pg.port}\\b|ECONNREFUSED \\d`), JSON.stringify(o));
      }
      await assertAcknowledged(rs[0]!, l.acks);
      const exported = await verifiedExport(rs[0]!);
      assert.equal(await verifiedExport(rs[1]!, lineCount(exported)), exported);
    } finally {
      pg.resume();
      await l.stop();
      for (const s of rs) await s.stop();
      d.remove();
    }
  });

  test('a replica started while PostgreSQL is down answers on its address (healthz 200, readyz 503, the console page, AuthZEN discovery and openapi.json; 401/403/404/405 as a running one; 503 STORE_UNAVAILABLE for the rest), starts by itself once the database is back; SIGTERM while it waits exits 0', async () => {
    const d = newDeployment(await pg.createDatabase());
    const dir = mkdtempSync(join(tmpdir(), 'writ-wait-'));
    const configPath = join(dir, 'config.json');
    writeFileSync(
      configPath,
      JSON.stringify({
        listen: '127.0.0.1:0',
        policy_dir: join(REPO, 'policies'),
        data_dir: join(dir, 'data'),
        database_url: d.databaseUrl,
        signing_key_file: d.keyFile,
        tokens: [
          { token: TEST_TOKENS.pep, role: 'pep', actor: { type: 'Agent', id: 'offboarding-agent-prod' } },
          { token: TEST_TOKENS.auditor, role: 'auditor' },
        ],
      }),
    );
    const start = () => {
      const child = spawn(process.execPath, [WRIT_BIN, 'serve', '--config', configPath], { stdio: ['ignore', 'pipe', 'pipe'] });
      const p = { child, out: '', exited: new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code))) };
      child.stdout.on('data', (b) => (p.out += b));
      child.stderr.on('data', (b) => (p.out += b));
      return p;
    };
    const WAITING = /waiting for it on (http:\/\/\S+),/;
    pg.pause();
    const first = start();
    try {
      await until(
        async () => WAITING.test(first.out),
        30_000,
        () => first.out,
      );
      const s = { url: WAITING.exec(first.out)![1]! };
      assert.equal((await call(s, 'GET', '/healthz')).status, 200);
      assert.equal((await call(s, 'GET', '/readyz')).status, 503);
      assert.equal((await call(s, 'GET', '/metrics')).status, 200);
      const refused = await call(s, 'POST', '/v1/decisions', { token: TEST_TOKENS.pep, body: readBody('WAIT-1'), headers: { 'x-request-id': 'wait-1' } });
      assert.equal(refused.status, 503, refused.text);
      assert.equal(refused.body.error.code, 'STORE_UNAVAILABLE');
      // What needs no database is served while waiting: AuthZEN discovery, and the console's page and
      // sign-in check (its data calls are refused like any other until the database answers).
      const discovery = await call(s, 'GET', '/.well-known/authzen-configuration');
      assert.equal(discovery.status, 200, discovery.text);
      assert.deepEqual(discovery.body, {
        policy_decision_point: s.url,
        access_evaluation_endpoint: `${s.url}/access/v1/evaluation`,
        access_evaluations_endpoint: `${s.url}/access/v1/evaluations`,
        search_subject_endpoint: `${s.url}/access/v1/search/subject`,
        search_resource_endpoint: `${s.url}/access/v1/search/resource`,
        search_action_endpoint: `${s.url}/access/v1/search/action`,
      });
      const page = await fetch(`${s.url}/console/`);
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(await page.text(), /auditor console/);
      assert.equal((await fetch(`${s.url}/console/app.js`)).status, 200);
      assert.deepEqual((await call(s, 'GET', '/console/session', { token: TEST_TOKENS.auditor })).body, { auditor: true });
      assert.deepEqual((await call(s, 'GET', '/console/session', { token: 'wrong' })).body, { auditor: false });
      const ledger = await call(s, 'GET', '/v1/ledger/records', { token: TEST_TOKENS.auditor });
      assert.equal(ledger.status, 503, ledger.text);
      assert.equal(ledger.body.error.code, 'STORE_UNAVAILABLE');
      const evaluation = await call(s, 'POST', '/access/v1/evaluation', {
        token: TEST_TOKENS.pep,
        body: { subject: { type: 'Agent', id: 'offboarding-agent-prod' }, action: { name: 'x' }, resource: { type: 'T', id: 'r' } },
      });
      assert.equal(evaluation.status, 503, evaluation.text);
      assert.equal(evaluation.body.error.code, 'STORE_UNAVAILABLE');
      // What a running replica refuses before it reads the database is refused alike while waiting.
      const refusals: Array<[string, string, string | undefined, number, string]> = [
        ['POST', '/v1/decisions', undefined, 401, 'UNAUTHENTICATED'],
        ['POST', '/v1/decisions', 'not-a-token', 401, 'UNAUTHENTICATED'],
        ['GET', '/v1/ledger/records', TEST_TOKENS.pep, 403, 'FORBIDDEN_ROLE'],
        ['GET', '/v1/executions/WAIT-1', TEST_TOKENS.auditor, 503, 'STORE_UNAVAILABLE'],
        ['GET', '/v1/no-such-route', TEST_TOKENS.auditor, 404, 'NOT_FOUND'],
        ['GET', '/console/no-such-file.js', undefined, 404, 'NOT_FOUND'],
        ['GET', '/v1/decisions', TEST_TOKENS.pep, 405, 'METHOD_NOT_ALLOWED'],
      ];
      for (const [method, path, token, status, code] of refusals) {
        const r = await call(s, method, path, token === undefined ? {} : { token });
        assert.equal(r.status, status, `${method} ${path}: ${r.text}`);
        assert.equal(r.body.error.code, code, `${method} ${path}`);
      }
      const openapi = await call(s, 'GET', '/openapi.json');
      assert.equal(openapi.status, 200);
      assert.equal(openapi.body.openapi, '3.1.0');
      // From the database's return until the real start listens, the address never refuses a connection:
      // the waiting listener keeps it until the HTTP front is loaded and about to bind it.
      let polling = true;
      const polls = { answered: 0, refused: [] as string[] };
      const poller = (async () => {
        while (polling) {
          try {
            const r = await fetch(`${s.url}/healthz`);
            await r.arrayBuffer();
            polls.answered++;
          } catch (e) {
            polls.refused.push(String((e as { cause?: { code?: string } }).cause?.code ?? e));
          }
        }
      })();
      pg.resume();
      await until(
        async () => first.out.includes(`listening on ${s.url}`),
        60_000,
        () => first.out,
      );
      polling = false;
      await poller;
      const notListening = polls.refused.filter((code) => code === 'ECONNREFUSED').length;
      if (frontThreadsSupported()) {
        // The front thread binds beside the waiting listener (SO_REUSEPORT) before it closes. Closing a
        // listener of such a group resets what waits in its own accept queue: at most a stray reset.
        assert.equal(notListening, 0, JSON.stringify(polls));
        assert.ok(polls.refused.length <= 1, JSON.stringify(polls));
      } else {
        // Without SO_REUSEPORT (Node 20) the address is free between the waiting listener's close and
        // the loaded front's bind: a few polls, where the front's whole start (~0.5 s) was before.
        assert.ok(polls.refused.length < 200, JSON.stringify(polls));
      }
      const allowed = await call(s, 'POST', '/v1/decisions', { token: TEST_TOKENS.pep, body: readBody('WAIT-2') });
      assert.equal(allowed.status, 200, allowed.text);
      assert.equal(allowed.body.decision, 'allow');
      first.child.kill('SIGTERM');
      assert.equal(await first.exited, 0, first.out);

      pg.pause();
      const second = start();
      await until(
        async () => WAITING.test(second.out),
        30_000,
        () => second.out,
      );
      second.child.kill('SIGTERM');
      assert.equal(await second.exited, 0, second.out);
      assert.match(second.out, /stopped while waiting for the database/);
    } finally {
      first.child.kill('SIGKILL');
      pg.resume();
      d.remove();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('store copy: an LMDB chain moves byte for byte, a second copy is refused, new decisions extend it', async () => {
    const lmdb = await startTestServer();
    let lmdbExport: string;
    try {
      for (let i = 0; i < 5; i++)
        assert.equal((await call(lmdb, 'POST', '/v1/decisions', { token: lmdb.tokens.pep, body: readBody(`COPY-${i}`) })).status, 200);
    } finally {
      assert.equal(await lmdb.stop({ keepData: true }), 0);
    }
    // The export as the stopped sidecar left it (its final checkpoint included).
    const url = await pg.createDatabase();
    // A wrong --data-dir (absent, or a directory with no store) is refused and leaves no trace: neither
    // files in the directory nor rows in the database, so the real copy below still finds it empty.
    const emptyDir = mkdtempSync(join(tmpdir(), 'writ-copy-empty-'));
    try {
      for (const dir of [join(emptyDir, 'absent'), emptyDir]) {
        const wrong = spawnSync(process.execPath, [WRIT_BIN, 'store', 'copy', '--data-dir', dir, '--database-url', url], { encoding: 'utf8' });
        assert.equal(wrong.status, 1, wrong.stdout + wrong.stderr);
        assert.match(wrong.stderr, /does not exist|holds no writ store/);
      }
      assert.deepEqual(readdirSync(emptyDir), []);
    } finally {
      rmSync(emptyDir, { recursive: true, force: true });
    }
    const copy = spawnSync(process.execPath, [WRIT_BIN, 'store', 'copy', '--data-dir', lmdb.dataDir, '--database-url', url], { encoding: 'utf8' });
    assert.equal(copy.status, 0, copy.stdout + copy.stderr);
    const again = spawnSync(process.execPath, [WRIT_BIN, 'store', 'copy', '--data-dir', lmdb.dataDir, '--database-url', url], { encoding: 'utf8' });
    assert.equal(again.status, 1, 'a database holding records is refused');
    const migrate = spawnSync(process.execPath, [WRIT_BIN, 'store', 'migrate', '--database-url', url], { encoding: 'utf8' });
    assert.equal(migrate.status, 0, migrate.stderr);
    const relaunched = await startTestServer({ dataDir: lmdb.dataDir });
    try {
      lmdbExport = await verifiedExport(relaunched);
    } finally {
      await relaunched.stop({ keepData: true });
    }
    const [replica] = await startReplicas({ databaseUrl: url, keyFile: join(lmdb.dataDir, 'signing-key.json'), dir: lmdb.dataDir, remove: () => undefined }, 1);
    try {
      const copied = await verifiedExport(replica!);
      const lmdbLines = lmdbExport.trim().split('\n');
      // The relaunched LMDB sidecar appended only its own checkpoint after the copy was taken.
      assert.ok(lmdbExport.startsWith(copied) || copied.startsWith(lmdbLines.slice(0, -1).join('\n')), 'the copied chain is the LMDB chain, byte for byte');
      const next = await call(replica!, 'POST', '/v1/decisions', { token: replica!.tokens.pep, body: readBody('AFTER-COPY') });
      assert.equal(next.status, 200, next.text);
      const extended = await verifiedExport(replica!);
      assert.ok(extended.startsWith(copied), 'new decisions extend the copied chain');
      assert.equal(JSON.parse(extended.trim().split('\n').at(-1)!).seq >= next.body.record.seq, true);
    } finally {
      await replica!.stop();
    }
  });
});
