/**
 * The policies the project ships for users to start from (the bundled example, the worked examples) are
 * in `writ policy fmt`'s own format: running the formatter the README suggests on them changes nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const WRIT_BIN = join(REPO, 'bin', 'writ');

const dirs = ['policies', ...readdirSync(join(REPO, 'examples')).map((name) => join('examples', name))].filter((d) =>
  readdirSync(join(REPO, d)).some((f) => f.endsWith('.cedar')),
);

test('every shipped policy dir is in writ policy fmt format', () => {
  assert.ok(dirs.length >= 2, JSON.stringify(dirs));
  for (const dir of dirs) {
    const r = spawnSync(process.execPath, [WRIT_BIN, 'policy', 'fmt', '--check', '--dir', join(REPO, dir)], { encoding: 'utf8' });
    assert.equal(r.status, 0, `${dir}: ${r.stdout}${r.stderr}`);
  }
});
