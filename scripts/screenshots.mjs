#!/usr/bin/env node
// `npm run docs:screenshots`: refresh docs/console-*.png from the console's browser test, which runs the
// offboarding story against a real sidecar in Chromium. `npm test` runs the same test but keeps its
// screenshots in a temp dir, so only this command changes the checked-in pictures.
import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('..', import.meta.url));
const docs = join(repo, 'docs');
const pictures = ['console-execution.png', 'console-ledger.png'];
const started = Date.now();

const build = spawnSync(process.execPath, ['scripts/build.mjs', '--tests'], { cwd: repo, stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);

const run = spawnSync(process.execPath, ['--test', 'dist/test/console/console.test.js'], {
  cwd: repo,
  stdio: 'inherit',
  env: { ...process.env, WRIT_SCREENSHOT_DIR: docs },
});
if (run.status !== 0) process.exit(run.status ?? 1);

// The test skips itself without Chromium; a skipped run must not pass for a refresh.
const stale = pictures.filter((name) => {
  try {
    return statSync(join(docs, name)).mtimeMs < started;
  } catch {
    return true;
  }
});
if (stale.length > 0) {
  process.stderr.write(`docs:screenshots: not written: ${stale.join(', ')} (is Chromium installed? see test/console/browser.ts)\n`);
  process.exit(1);
}
process.stdout.write(`docs:screenshots: wrote ${pictures.map((name) => `docs/${name}`).join(', ')}\n`);
