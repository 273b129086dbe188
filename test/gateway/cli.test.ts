// `writ gateway` as a command: usage and config errors exit 2 with the problem named; it never starts on
// a config it would misread.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { WRIT_BIN } from '../helpers/server.js';
import { tempDir } from '../pep/helpers.js';

test('writ gateway: --help, a missing --config, an unreadable or invalid config', () => {
  const t = tempDir('writ-gateway-cli-');
  try {
    const run = (...args: string[]) => spawnSync(process.execPath, [WRIT_BIN, 'gateway', ...args], { encoding: 'utf8', timeout: 30_000 });
    const help = run('--help');
    assert.equal(help.status, 0);
    assert.match(help.stdout, /usage: writ gateway --config FILE/);
    const none = run();
    assert.equal(none.status, 2);
    assert.match(none.stderr, /--config is required/);
    assert.equal(run('--config', join(t.dir, 'nope.json')).status, 2);
    const file = join(t.dir, 'gw.json');
    writeFileSync(file, JSON.stringify({ public_url: 'https://gw.test', servers: {} }));
    const bad = run('--config', file);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /pdp must be/);
  } finally {
    t.cleanup();
  }
});
