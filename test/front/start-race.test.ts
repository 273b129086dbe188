/**
 * Fronts that are still starting when the first requests arrive: an entity change made through one
 * front is broadcast to every front, and a front process (Node without SO_REUSEPORT) that had not yet
 * been sent its start data took that broadcast for it and died ("an HTTP front thread exited before
 * listening"; found by a crash-consistency review). Requests fired the moment the port accepts must
 * all be answered, and the sidecar must come up, every time.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO, WRIT_BIN } from '../helpers/server.js';
import { freePort } from '../helpers/postgres.js';
import { waitUntil } from '../helpers/wait.js';

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, '127.0.0.1', () => {
      // A port in the ephemeral range can "accept" by connecting to itself (TCP simultaneous open).
      const self = s.localPort === port;
      s.destroy();
      resolve(!self);
    });
    s.on('error', () => resolve(false));
  });

test('entity changes while the HTTP fronts start: every start comes up and every request is answered', { timeout: 180_000 }, async () => {
  for (let round = 0; round < 4; round++) {
    const dir = mkdtempSync(join(tmpdir(), 'writ-front-start-'));
    const port = await freePort();
    writeFileSync(
      join(dir, 'config.json'),
      JSON.stringify({
        listen: `127.0.0.1:${port}`,
        policy_dir: join(REPO, 'policies'),
        data_dir: join(dir, 'data'),
        http_threads: 2,
        tokens: [{ token: 'start-race-admin', role: 'admin' }],
      }),
    );
    const child = spawn(process.execPath, [WRIT_BIN, 'serve', '--config', join(dir, 'config.json')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    let exitCode: number | null | undefined;
    const exited = new Promise<void>((r) =>
      child.on('exit', (code) => {
        exitCode = code;
        r();
      }),
    );
    try {
      const deadline = Date.now() + 30_000;
      while (!(await accepts(port))) {
        assert.equal(exitCode, undefined, `the sidecar exited while starting:\n${out}`);
        assert.ok(Date.now() < deadline, `the port never accepted:\n${out}`);
      }
      // The sidecar first binds the port for a moment to check it is free (then the fronts listen): a
      // connection refused, or reset by that probe's close, before the sidecar says it listens is retried.
      // Once it has said so, any failure is one.
      const putOnce = async (path: string): Promise<number> => {
        for (;;) {
          try {
            const r = await fetch(`http://127.0.0.1:${port}${path}`, {
              method: 'PUT',
              headers: { authorization: 'Bearer start-race-admin', 'content-type': 'application/json' },
              body: JSON.stringify({ attrs: { round }, parents: [] }),
            });
            return r.status;
          } catch (e) {
            const code = (e as { cause?: { code?: string } }).cause?.code;
            const starting = !/listening on/.test(out) && (code === 'ECONNREFUSED' || code === 'ECONNRESET');
            if (!starting || exitCode !== undefined || Date.now() > deadline) throw new Error(`PUT failed: ${code ?? String(e)}\n${out}`, { cause: e });
            await new Promise((r) => setTimeout(r, 5)); // a retry's pace while the port is not ours yet
          }
        }
      };
      const statuses: number[] = [];
      for (let burst = 0; burst < 4; burst++) {
        statuses.push(...(await Promise.all(Array.from({ length: 10 }, (_, i) => putOnce(`/v1/entities/User/start-race-${burst}-${i}`)))));
      }
      assert.deepEqual([...new Set(statuses)], [200], `round ${round}:\n${out}`);
      // The start ends one way or the other: it says it listens, or it exits (a front that died starting).
      await waitUntil(
        () => /listening on/.test(out) || exitCode !== undefined,
        () => `round ${round}: the start to end:\n${out}`,
        30_000,
      );
      assert.equal(exitCode, undefined, `round ${round}: the sidecar exited:\n${out}`);
      assert.match(out, /listening on/);
    } finally {
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    }
  }
});
