// The MCP Inspector CLI (@modelcontextprotocol/inspector 2.12, a client that parses its own command
// line and owns `--server`) starts `writ proxy` from the mcpServers entry in examples/inspector/ —
// options from the environment, no `--` — at the legacy and the modern (2026-07-28) protocol era, in
// front of an SDK 2.x server, against the real PDP (issue 47).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startBackend, type Backend } from './backends.js';
import { REPO, WRIT_BIN, tempDir } from './helpers.js';

const INSPECTOR = join(REPO, 'node_modules', '@modelcontextprotocol', 'inspector', 'clients', 'launcher', 'build', 'index.js');
const EXAMPLE = join(REPO, 'examples', 'inspector');
const SDK2_SERVER = join(REPO, 'test', 'pep', 'fixtures', 'sdk2-server.mjs');
let pdp: Backend;
const t = tempDir();
before(async () => {
  pdp = await startBackend('real');
});
after(async () => {
  await pdp.stop();
  t.cleanup();
});

/** The example's entry, with `npx writ` as this checkout's bin/writ and the example server as the SDK 2.x fixture. */
function configFile(): string {
  const cfg = JSON.parse(readFileSync(join(EXAMPLE, 'mcp.json'), 'utf8'));
  const entry = cfg.mcpServers['hris-behind-writ'];
  assert.deepEqual(entry.args.slice(0, 2), ['writ', 'proxy'], 'the example starts the proxy with only the server command after it');
  assert.ok(!entry.args.includes('--') && !entry.args.includes('--server'), 'no option the Inspector would take as its own');
  entry.command = process.execPath;
  entry.args = [WRIT_BIN, 'proxy', process.execPath, SDK2_SERVER];
  const token = join(t.dir, 'pep-token');
  writeFileSync(token, pdp.tokens.pep);
  entry.env = { ...entry.env, WRIT_PDP: pdp.url, WRIT_TOKEN_FILE: token, WRIT_SERVER: 'sdk', WRIT_DEFAULTS: join(EXAMPLE, 'defaults.json') };
  const file = join(t.dir, 'mcp.json');
  writeFileSync(file, JSON.stringify(cfg));
  return file;
}

function inspect(era: string, args: string[]): { status: number | null; json: any; stderr: string } {
  const r = spawnSync(
    process.execPath,
    [INSPECTOR, '--cli', '--config', configFile(), '--server', 'hris-behind-writ', '--protocol-era', era, '--format', 'json', '--quiet', ...args],
    {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, HOME: t.dir, MCP_INSPECTOR_SECRET_STORE: 'memory' },
    },
  );
  const line = r.stdout
    .trim()
    .split('\n')
    .find((l) => l.startsWith('{"result"'));
  return { status: r.status, json: line ? JSON.parse(line) : undefined, stderr: r.stderr };
}

for (const era of ['legacy', 'modern']) {
  test(`MCP Inspector CLI (${era} era) runs writ proxy from the example mcpServers entry: tools, an allowed call, a refusal it can show`, {
    timeout: 120_000,
  }, () => {
    const list = inspect(era, ['--method', 'tools/list']);
    assert.equal(list.status, 0, list.stderr);
    // One policy hides and blocks (§15): `forbidden`, which no policy permits, is not listed — and still refused when called.
    assert.deepEqual(list.json.result.tools.map((x: any) => x.name).sort(), ['approve_me', 'boom', 'echo', 'fail', 'lock_mailbox', 'slow']);
    const ok = inspect(era, ['--method', 'tools/call', '--tool-name', 'echo', '--tool-arg', 'text=hi']);
    assert.equal(ok.status, 0, ok.stderr);
    assert.deepEqual(ok.json.result.content, [{ type: 'text', text: 'echo:hi' }]);
    // A listed tool whose call this policy refuses: the refusal is a result the Inspector shows.
    const denied = inspect(era, ['--method', 'tools/call', '--tool-name', 'echo', '--tool-arg', 'text=blocked']);
    assert.equal(denied.json.result.isError, true, denied.stderr);
    assert.equal(denied.json.result._meta['io.writ/decision'].code, 'DENIED');
    assert.match(denied.json.result._meta['io.writ/decision'].execution_id, /^inspector:/);
  });
}
