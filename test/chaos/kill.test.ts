/**
 * Chaos (issue 7, docs/protocol.md §4 "crash anywhere", §6): 16+ concurrent clients drive
 * propose → execute → outcome against the real `writ serve`, which is SIGKILLed at seeded random
 * moments (≥ 5 times) and restarted on the same data dir. Clients keep every ACKNOWLEDGED answer;
 * after a request that got no answer they ask the server (GET /v1/executions/{id}) what happened and
 * carry on from there, as a real PEP would. About half of the restarts are themselves SIGKILLed
 * 30–530 ms into startup (store open, integrity check, startup records) before the real restart.
 *
 * Afterwards, on the last server:
 *   - every acknowledged record is served at its seq with the same hash, kind and execution id;
 *   - the export has contiguous seqs and `writ verify` passes with the keys and with every checkpoint
 *     held before a kill (so each later ledger extends what an auditor saw before the crash);
 *   - each checkpoint held before a kill is consistent with the first one after the restart (RFC 9162
 *     consistency proof checked with verifyConsistency);
 *   - acknowledged `invoking` executions still refuse execute (409 EXECUTION_IN_FLIGHT), terminal ones
 *     refuse execute and outcome (409 EXECUTION_TERMINAL) and keep their state, `proposed` stay proposed;
 *   - the ledger (acknowledged or not) never shows an execution moved to invoking twice, nor a
 *     decision after its terminal outcome.
 *
 * Knobs: CHAOS_SEED, CHAOS_CLIENTS (16), CHAOS_KILLS (6), CHAOS_REPORT (append a JSON summary line).
 * The store matrix: with WRIT_TEST_STORE=postgres (kill.postgres.test.ts) the same test runs with every
 * server life on one PostgreSQL database; everything is checked through the HTTP API, so nothing here
 * reads the store directly.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { startTestServer, TEST_TOKENS, WRIT_BIN, type TestServer } from '../helpers/server.js';
import { AGENT_Q, assertConsistent, assertLedgerVerifies, prng, readBody, req, sleep, type Reply } from './harness.js';

const SEED = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));
const CLIENTS = Number(process.env.CHAOS_CLIENTS ?? 16);
const KILLS = Number(process.env.CHAOS_KILLS ?? 6);
/** Acknowledged records each server life must carry before it is killed. */
const MIN_ACKS = 15;
const STORE = process.env.WRIT_TEST_STORE === 'postgres' ? 'postgres' : 'lmdb';
const TERMINAL = new Set(['committed', 'rejected', 'unknown', 'reconciled']);

type Target = 'proposed' | 'invoking' | 'committed' | 'rejected' | 'unknown';

interface Ack {
  seq: number;
  hash: string;
  kind: string;
  execution_id: string;
}

interface Known {
  /** Last state learnt from an acknowledged answer. */
  state: string;
  acked: Set<number>;
}

interface Ctl {
  server: TestServer;
  /** Bumped just before every kill: a client whose request failed waits for a newer, live server. */
  gen: number;
  up: boolean;
  stop: boolean;
}

test(`chaos (${STORE}): SIGKILL under load, ${KILLS} kills, ${CLIENTS} clients, seed ${SEED}`, { timeout: 150_000 }, async () => {
  const rand = prng(SEED);
  const base = mkdtempSync(join(tmpdir(), 'writ-chaos-kill-'));
  const dataDir = join(base, 'data');
  mkdirSync(dataDir);
  const start = () => startTestServer({ dataDir, config: { checkpoint: { every_records: 40, every_ms: 300 } } });
  const first = await start().catch((e) => {
    rmSync(base, { recursive: true, force: true });
    throw e;
  });
  const ctl: Ctl = { server: first, gen: 0, up: true, stop: false };
  const acks: Ack[] = [];
  const known = new Map<string, Known>();
  const anomalies: string[] = [];
  const held: Array<Record<string, any>> = [];
  const t0 = Date.now();
  let unanswered = 0;
  let kills = 0;
  let executions = 0;
  let startupKills = 0;
  const epochAcks: number[] = [];

  const note = (id: string, r: Reply) => {
    const rec = r.body?.record;
    if (r.status === 200 && rec && typeof rec.seq === 'number') {
      acks.push({ seq: rec.seq, hash: rec.hash, kind: r.body.decision !== undefined ? 'decision' : 'outcome', execution_id: id });
      known.get(id)!.acked.add(rec.seq);
    }
  };

  /** Waits for a live server newer than generation `gen` (or the same one if it was never killed). */
  const liveServer = async (gen: number) => {
    while (!(ctl.up && ctl.gen >= gen)) await sleep(20); // a poll's pace
    return ctl.server.url;
  };

  /** Sends a request; on no answer, waits for the restarted server and returns undefined. */
  const send = async (method: string, path: string, o: Parameters<typeof req>[3]): Promise<Reply | undefined> => {
    const gen = ctl.gen;
    const url = await liveServer(gen);
    try {
      return await req(url, method, path, { timeoutMs: 20_000, ...o });
    } catch {
      unanswered++;
      // Killed meanwhile (gen moved on): wait for the restarted server; else retry on this one.
      await liveServer(Math.min(gen + 1, ctl.gen));
      return undefined;
    }
  };

  const client = async (c: number) => {
    const r = prng(SEED ^ ((c + 1) * 0x9e3779b1));
    for (let n = 0; !ctl.stop; n++) {
      const id = `chaos-${SEED}-c${c}-${n}`;
      executions++;
      const roll = r();
      const target: Target = roll < 0.08 ? 'proposed' : roll < 0.3 ? 'invoking' : roll < 0.65 ? 'committed' : roll < 0.82 ? 'rejected' : 'unknown';
      const k: Known = { state: 'none', acked: new Set() };
      known.set(id, k);
      let probeTerminal = r() < 0.25;
      // Steps until the target is reached; an unanswered request is followed by a GET of the truth.
      for (let guard = 0; guard < 50; guard++) {
        let reply: Reply | undefined;
        let expect: string;
        if (k.state === 'none') {
          expect = 'proposed';
          reply = await send('POST', '/v1/decisions', { token: TEST_TOKENS.pep, body: readBody(id, 'propose') });
        } else if (k.state === 'proposed') {
          if (target === 'proposed') break;
          expect = 'invoking';
          reply = await send('POST', '/v1/decisions', { token: TEST_TOKENS.pep, body: readBody(id, 'execute') });
        } else if (k.state === 'invoking') {
          if (target === 'invoking') break;
          expect = target;
          reply = await send('POST', `/v1/executions/${encodeURIComponent(id)}/outcome`, {
            token: TEST_TOKENS.pep,
            body: { status: target, detail: `chaos ${SEED}` },
          });
        } else if (TERMINAL.has(k.state)) {
          if (!probeTerminal) break;
          probeTerminal = false;
          reply = await send('POST', '/v1/decisions', { token: TEST_TOKENS.pep, body: readBody(id, 'execute') });
          if (reply && !(reply.status === 409 && reply.body?.error?.code === 'EXECUTION_TERMINAL')) {
            anomalies.push(`${id}: execute after ${k.state} answered ${reply.status} ${reply.text.slice(0, 200)}`);
          }
          if (reply) break;
          expect = k.state;
        } else {
          anomalies.push(`${id}: unexpected state ${k.state}`);
          break;
        }
        if (reply) {
          if (reply.status === 200 && reply.body?.state === expect) {
            note(id, reply);
            k.state = reply.body.state;
            continue;
          }
          if (reply.status !== 503) {
            anomalies.push(`${id}: in state ${k.state} expected ${expect}, got ${reply.status} ${reply.text.slice(0, 300)}`);
            break;
          }
          // 503 (e.g. shutting down): fall through and ask for the truth.
        }
        // No answer: what did the server keep?
        for (;;) {
          const g = await send('GET', `/v1/executions/${encodeURIComponent(id)}`, { token: TEST_TOKENS.pep });
          if (!g) continue;
          if (g.status === 404 && g.body?.error?.code === 'EXECUTION_NOT_FOUND') {
            if (k.state !== 'none') anomalies.push(`${id}: acknowledged ${k.state} but the server does not know it`);
            k.state = 'none';
          } else if (g.status === 200) {
            for (const s of k.acked) if (!g.body.records.includes(s)) anomalies.push(`${id}: acknowledged record ${s} missing from the execution`);
            k.state = g.body.state;
          } else {
            anomalies.push(`${id}: GET answered ${g.status} ${g.text.slice(0, 200)}`);
            await sleep(50); // a retry's pace
            continue;
          }
          break;
        }
      }
    }
  };

  const controller = async () => {
    // Each life of the server carries real load before it dies, however slow the machine: a seeded
    // random delay, and at least MIN_ACKS acknowledged records since the restart (bounded wait). The random
    // delays here are the scenario (where in its work a kill lands), not waits for something to happen.
    const loaded = async () => {
      const mark = acks.length;
      const since = Date.now();
      await sleep(250 + Math.floor(rand() * 900));
      while (acks.length - mark < MIN_ACKS && Date.now() - since < 20_000) await sleep(20);
      epochAcks.push(acks.length - mark);
    };
    for (let i = 0; i < KILLS; i++) {
      await loaded();
      // An auditor holds the latest signed checkpoint before the crash.
      const cp = await req(ctl.server.url, 'GET', '/v1/ledger/checkpoint', { token: TEST_TOKENS.auditor });
      assert.equal(cp.status, 200, cp.text);
      held.push(cp.body);
      // A little more load after the checkpoint, so the kill lands mid-write.
      await sleep(Math.floor(rand() * 120));
      ctl.up = false;
      ctl.gen++;
      await ctl.server.kill();
      kills++;
      // Sometimes the restart itself is killed too (store open, integrity check, startup records).
      if (rand() < 0.5) {
        const early = spawn(process.execPath, [WRIT_BIN, 'serve', '--config', ctl.server.configPath], { stdio: 'ignore' });
        const exited = new Promise((r) => early.once('exit', r));
        await sleep(30 + Math.floor(rand() * 500));
        early.kill('SIGKILL');
        await exited;
        startupKills++;
      }
      ctl.server = await start();
      const after = await req(ctl.server.url, 'GET', '/v1/ledger/checkpoint', { token: TEST_TOKENS.auditor });
      assert.equal(after.status, 200, after.text);
      await assertConsistent(ctl.server.url, cp.body, after.body);
      ctl.up = true;
    }
    await loaded();
    ctl.stop = true;
  };

  try {
    await Promise.all([controller(), ...Array.from({ length: CLIENTS }, (_, c) => client(c))]);
    const loadMs = Date.now() - t0;
    const url = ctl.server.url;
    assert.deepEqual(anomalies, [], 'clients saw only answers the contract allows');
    assert.equal(kills, KILLS);
    assert.ok(
      epochAcks.every((n) => n >= MIN_ACKS),
      `every server life carried load before its kill (${epochAcks.join(', ')} acknowledged)`,
    );

    // 1. Every acknowledged record is there, unchanged.
    const snap = await assertLedgerVerifies(url, [held[0]!, held.at(-1)!]);
    const missing: string[] = [];
    const queue = [...acks];
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let a = queue.pop(); a; a = queue.pop()) {
          const g = await req(url, 'GET', `/v1/ledger/records/${a.seq}`, { token: TEST_TOKENS.auditor });
          if (g.status !== 200 || g.body.hash !== a.hash || g.body.kind !== a.kind || g.body.execution_id !== a.execution_id) {
            missing.push(`seq ${a.seq}: acknowledged ${a.kind} ${a.hash} of ${a.execution_id}, served ${g.status} ${g.text.slice(0, 200)}`);
          }
          if (snap.records[a.seq]?.hash !== a.hash) missing.push(`seq ${a.seq}: export has ${snap.records[a.seq]?.hash}`);
        }
      }),
    );
    assert.deepEqual(missing, [], 'every acknowledged record survives every crash');
    // Every checkpoint held before a kill is extended by the final ledger.
    for (const cp of held) {
      assert.equal(snap.records[cp.seq]?.hash, cp.hash, `held checkpoint at seq ${cp.seq} is still in the ledger`);
      await assertConsistent(url, cp, snap.checkpoint);
    }

    // 2. Never invoking twice, never a decision after the outcome (acknowledged or not).
    const perExec = new Map<string, { invoking: number; terminalAt: number | null; lateDecision: boolean }>();
    for (const rec of snap.records) {
      if (typeof rec.execution_id !== 'string' || !rec.execution_id.startsWith(`chaos-${SEED}-`)) continue;
      const e = perExec.get(rec.execution_id) ?? { invoking: 0, terminalAt: null, lateDecision: false };
      if (rec.kind === 'decision') {
        if (rec.state === 'invoking') e.invoking++;
        if (e.terminalAt !== null) e.lateDecision = true;
      }
      if (rec.kind === 'outcome') e.terminalAt = rec.seq;
      perExec.set(rec.execution_id, e);
    }
    for (const [id, e] of perExec) {
      assert.ok(e.invoking <= 1, `${id} moved to invoking ${e.invoking} times`);
      assert.ok(!e.lateDecision, `${id} has a decision after its outcome`);
    }

    // 3. Acknowledged states hold.
    const byState: Record<string, number> = {};
    const wrong: string[] = [];
    const ids = [...known.entries()].filter(([, k]) => k.state !== 'none');
    await Promise.all(
      Array.from({ length: 16 }, async (_, w) => {
        for (let i = w; i < ids.length; i += 16) {
          const [id, k] = ids[i]!;
          byState[k.state] = (byState[k.state] ?? 0) + 1;
          const path = `/v1/executions/${encodeURIComponent(id)}`;
          const g = await req(url, 'GET', `${path}?actor=${AGENT_Q}`, { token: TEST_TOKENS.auditor });
          if (g.status !== 200 || g.body.state !== k.state) wrong.push(`${id}: acknowledged ${k.state}, now ${g.status} ${g.text.slice(0, 200)}`);
          for (const s of k.acked) if (g.status === 200 && !g.body.records.includes(s)) wrong.push(`${id}: record ${s} not listed`);
          if (k.state === 'invoking') {
            const x = await req(url, 'POST', '/v1/decisions', { token: TEST_TOKENS.pep, body: readBody(id, 'execute') });
            if (x.status !== 409 || x.body?.error?.code !== 'EXECUTION_IN_FLIGHT')
              wrong.push(`${id}: invoking, execute answered ${x.status} ${x.text.slice(0, 200)}`);
          } else if (TERMINAL.has(k.state)) {
            const x = await req(url, 'POST', '/v1/decisions', { token: TEST_TOKENS.pep, body: readBody(id, 'execute') });
            if (x.status !== 409 || x.body?.error?.code !== 'EXECUTION_TERMINAL')
              wrong.push(`${id}: ${k.state}, execute answered ${x.status} ${x.text.slice(0, 200)}`);
            const o = await req(url, 'POST', `${path}/outcome`, { token: TEST_TOKENS.pep, body: { status: 'committed' } });
            if (o.status !== 409 || o.body?.error?.code !== 'EXECUTION_TERMINAL')
              wrong.push(`${id}: ${k.state}, outcome answered ${o.status} ${o.text.slice(0, 200)}`);
          }
        }
      }),
    );
    assert.deepEqual(wrong, [], 'acknowledged execution states survive every crash');
    assert.ok((byState.invoking ?? 0) > 0, 'some acknowledged executions were left invoking');
    assert.ok((byState.committed ?? 0) + (byState.rejected ?? 0) + (byState.unknown ?? 0) > 0, 'some reached a terminal state');

    // 4. The refusals just written keep the ledger verifiable; a graceful stop still works.
    await assertLedgerVerifies(url, [held[0]!]);
    const summary = {
      store: STORE,
      seed: SEED,
      clients: CLIENTS,
      kills,
      startup_kills: startupKills,
      executions,
      acknowledged: acks.length,
      unanswered,
      ledger: snap.lines.length,
      acks_per_life: epochAcks,
      states: byState,
      load_ms: loadMs,
      total_ms: Date.now() - t0,
    };
    process.stdout.write(`chaos summary ${JSON.stringify(summary)}\n`);
    if (process.env.CHAOS_REPORT) appendFileSync(process.env.CHAOS_REPORT, `${JSON.stringify({ ok: true, ...summary })}\n`);
  } catch (e) {
    process.stdout.write(`chaos failure (seed ${SEED}, ${kills} kills); server output tail:\n${ctl.server.output().slice(-4000)}\n`);
    if (process.env.CHAOS_REPORT)
      appendFileSync(
        process.env.CHAOS_REPORT,
        `${JSON.stringify({ ok: false, seed: SEED, kills, error: String((e as Error)?.message ?? e).slice(0, 2000) })}\n`,
      );
    throw e;
  } finally {
    ctl.stop = true;
    await ctl.server.stop({ keepData: true }).catch(() => undefined);
    rmSync(base, { recursive: true, force: true });
  }
});
