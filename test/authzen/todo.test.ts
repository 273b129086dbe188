/**
 * The worked example examples/authzen-todo (the AuthZEN interop "Todo" scenario): its policy tests
 * pass under `writ policy test`, its schema with lower-case entity types validates, and an AuthZEN
 * client that knows nothing about writ gets the scenario's decision table from a served sidecar.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, REPO, startTestServer, WRIT_BIN, type TestServer } from '../helpers/server.js';

const EXAMPLE = join(REPO, 'examples', 'authzen-todo');
const TOKEN = 'todo-app-backend';
const PID = {
  rick: 'CiRmZDA2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs',
  morty: 'CiRmZDE2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs',
  summer: 'CiRmZDI2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs',
  beth: 'CiRmZDM2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs',
  jerry: 'CiRmZDQ2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs',
};

let server: TestServer;
before(async () => {
  server = await startTestServer({ policyDir: EXAMPLE, config: { tokens: [{ token: TOKEN, role: 'evaluator' }] } });
});
after(async () => {
  await server?.stop();
});

test('writ policy validate and writ policy test pass on the example (AuthZEN cases, lower-case schema types)', () => {
  const validate = spawnSync(process.execPath, [WRIT_BIN, 'policy', 'validate', '--dir', EXAMPLE], { encoding: 'utf8' });
  assert.equal(validate.status, 0, validate.stdout + validate.stderr);
  assert.match(validate.stdout, /schema validated \(strict\)/);
  const run = spawnSync(process.execPath, [WRIT_BIN, 'policy', 'test', '--dir', EXAMPLE, '--coverage'], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stdout + run.stderr);
  assert.match(run.stdout, /^(\d+) passed, 0 failed$/m);
  assert.match(run.stdout, /coverage: 7\/7 policies/);
});

test('a failing AuthZEN case fails writ policy test (exit 1)', async () => {
  const { mkdtempSync, cpSync, writeFileSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(join(tmpdir(), 'writ-todo-'));
  try {
    cpSync(EXAMPLE, dir, { recursive: true });
    writeFileSync(
      join(dir, 'tests', 'todo.json'),
      JSON.stringify([
        {
          name: 'Beth cannot create (expected wrongly)',
          now: '2026-01-15T12:00:00Z',
          authzen: { subject: { type: 'user', id: PID.beth }, action: { name: 'can_create_todo' }, resource: { type: 'todo', id: 't' } },
          expect: { decision: 'allow' },
        },
        {
          name: 'malformed authzen request',
          authzen: { subject: { type: 'user' }, action: { name: 'x' }, resource: { type: 'todo', id: 't' } },
          expect: { decision: 'deny' },
        },
      ]),
    );
    const run = spawnSync(process.execPath, [WRIT_BIN, 'policy', 'test', '--dir', dir], { encoding: 'utf8' });
    assert.equal(run.status, 1);
    assert.match(run.stdout, /FAIL Beth cannot create \(expected wrongly\): expected allow got deny/);
    assert.match(run.stdout, /FAIL malformed authzen request: .*authzen\/subject\/id/);
    assert.match(run.stdout, /0 passed, 2 failed/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an AuthZEN client gets the Todo decision table over HTTP (every case of the example)', async () => {
  const cases = JSON.parse(readFileSync(join(EXAMPLE, 'tests', 'todo.json'), 'utf8')) as Array<{
    name: string;
    authzen: unknown;
    expect: { decision: string; reasons?: string[] };
  }>;
  assert.ok(cases.length >= 40);
  for (const c of cases) {
    const r = await call(server, 'POST', '/access/v1/evaluation', { token: TOKEN, body: c.authzen });
    assert.equal(r.status, 200, `${c.name}: ${r.text}`);
    assert.equal(r.body.decision, c.expect.decision === 'allow', c.name);
    if (c.expect.reasons) assert.deepEqual([...r.body.context.reasons].sort(), [...c.expect.reasons].sort(), c.name);
  }
});

test('the interop payloads as published: discovery, then the evaluations boxcar for Morty', async () => {
  const config = (await call(server, 'GET', '/.well-known/authzen-configuration')).body;
  const path = new URL(config.access_evaluations_endpoint).pathname;
  const r = await call(server, 'POST', path, {
    token: TOKEN,
    body: {
      subject: { type: 'user', id: PID.morty },
      action: { name: 'can_update_todo' },
      resource: {},
      context: {},
      evaluations: [
        { resource: { type: 'todo', id: '7240d0db-8ff0-41ec-98b2-34a096273b9f', properties: { ownerID: 'rick@the-citadel.com' } } },
        { resource: { type: 'todo', id: '7240d0db-8ff0-41ec-98b2-34a096273b9e', properties: { ownerID: 'morty@the-citadel.com' } } },
      ],
    },
  });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(
    r.body.evaluations.map((e: { decision: boolean }) => e.decision),
    [false, true],
  );
  // The rest of the table, spot-checked by role.
  const ask = async (who: keyof typeof PID, name: string, ownerID?: string) =>
    (
      await call(server, 'POST', '/access/v1/evaluation', {
        token: TOKEN,
        body: {
          subject: { type: 'user', id: PID[who] },
          action: { name },
          resource: { type: 'todo', id: 'x', ...(ownerID ? { properties: { ownerID } } : {}) },
          context: {},
        },
      })
    ).body.decision;
  assert.equal(await ask('rick', 'can_update_todo', 'summer@the-smiths.com'), true); // evil_genius
  assert.equal(await ask('rick', 'can_delete_todo', 'summer@the-smiths.com'), true); // admin
  assert.equal(await ask('summer', 'can_delete_todo', 'morty@the-citadel.com'), false);
  assert.equal(await ask('summer', 'can_delete_todo', 'summer@the-smiths.com'), true);
  assert.equal(await ask('jerry', 'can_create_todo'), false);
  assert.equal(await ask('beth', 'can_read_todos'), true);
});
