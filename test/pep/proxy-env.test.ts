// `writ proxy` as real MCP clients start it (issue 12): every option from WRIT_* environment variables,
// the server command without `--`, flags winning over variables, and a default deny explained to the
// client while `reasons` stay as the PDP gave them.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { defaultPolicy } from './fake-pdp.js';
import { envelope, fakePdpPerTestFile, HOSTILE, meta, readEffects } from './helpers.js';
import { runProxy } from '../helpers/proxy-process.js';

// `silent` gets Cedar's default deny: no determining policy, no error.
const fx = fakePdpPerTestFile({ policy: (input) => (input.tool === 'silent' ? { decision: 'deny', reasons: [] } : defaultPolicy(input)) });

function callLine(id: number, args: string, m?: Record<string, unknown>, name = 'apply'): string {
  const metaText = m ? `,"_meta":${JSON.stringify(m)}` : '';
  return `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":${JSON.stringify(name)},"arguments":${args}${metaText}}}`;
}

/** Runs `writ proxy ...args` with `env` added, sends `lines`, and returns the answers by id (early if the proxy exits). */
function session(args: string[], env: Record<string, string>, lines: string[], ids: number[]) {
  return runProxy({ args, env, send: lines, awaitIds: ids, stopWaitingOnExit: true });
}

test('every proxy option can come from the environment; the command needs no --', { timeout: 30_000 }, async () => {
  const tokenFile = join(fx.dir, 'token');
  writeFileSync(tokenFile, `  ${fx.pdp.tokens.pep}\n`);
  const defaults = join(fx.dir, 'defaults.json');
  writeFileSync(defaults, JSON.stringify(envelope()));
  const effects = join(fx.dir, 'e-env.jsonl');
  const env = {
    WRIT_PDP: fx.pdp.url,
    WRIT_TOKEN_FILE: tokenFile,
    WRIT_SERVER: 'from-env',
    WRIT_DEFAULTS: defaults,
    WRIT_CALL_TIMEOUT: '5000',
    WRIT_PDP_TIMEOUT: '5000',
    HOSTILE_EFFECTS: effects,
  };
  const before = fx.pdp.log.length;
  const r = await session([process.execPath, HOSTILE], env, [callLine(1, '{"key":"k"}')], [1]);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(r.answers.get(1).result, { content: [{ type: 'text', text: 'applied k' }] }, r.err);
  const decide = JSON.parse(fx.pdp.log.slice(before).find((e) => e.path === '/v1/decisions')!.body);
  assert.equal(decide.action.server, 'from-env');
  assert.equal(decide.envelope.task_id, envelope().task_id, 'the envelope came from WRIT_DEFAULTS');
  assert.equal(readEffects(effects).length, 1);

  // A flag wins over its variable.
  const before2 = fx.pdp.log.length;
  const r2 = await session(['--server', 'from-flag', '--', process.execPath, HOSTILE], env, [callLine(2, '{"key":"k2"}')], [2]);
  assert.equal(r2.code, 0, r2.err);
  assert.equal(JSON.parse(fx.pdp.log.slice(before2).find((e) => e.path === '/v1/decisions')!.body).action.server, 'from-flag');

  // Missing everything: the message names the variable too.
  const bare = await session([process.execPath, HOSTILE], { WRIT_PDP: '', WRIT_TOKEN_FILE: '', WRIT_SERVER: '' }, [], []);
  assert.equal(bare.code, 2);
  assert.match(bare.err, /WRIT_PDP/);
});

test('a default deny tells the client that no policy permits the call; reasons stay as the PDP gave them', { timeout: 30_000 }, async () => {
  const tokenFile = join(fx.dir, 'token2');
  writeFileSync(tokenFile, fx.pdp.tokens.pep);
  const effects = join(fx.dir, 'e-deny.jsonl');
  const r = await session(
    ['--pdp', fx.pdp.url, '--token-file', tokenFile, '--server', 'hostile', '--', process.execPath, HOSTILE],
    { HOSTILE_EFFECTS: effects },
    [callLine(1, '{"key":"x"}', meta('silent-1'), 'silent'), callLine(2, '{"key":"x"}', meta('forbid-1'), 'forbidden')],
    [1, 2],
  );
  const silent = r.answers.get(1).result;
  assert.equal(silent.isError, true);
  assert.match(silent.content[0].text, /no policy permits this call/);
  assert.deepEqual(silent._meta['io.writ/decision'].reasons, []);
  assert.equal(silent._meta['io.writ/decision'].code, 'DENIED');
  const forbidden = r.answers.get(2).result;
  assert.match(forbidden.content[0].text, /denied by forbid-tool/);
  assert.doesNotMatch(forbidden.content[0].text, /no policy permits/);
  assert.equal(readEffects(effects).length, 0);
});
