#!/usr/bin/env node
// `npm test`: compile, then run every compiled test file with node's built-in test runner.
// Node 20's runner takes file paths, not globs, so the files are collected here.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const build = spawnSync(process.execPath, ['scripts/build.mjs', '--tests'], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);

function collect(dir) {
  let out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out = out.concat(collect(p));
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}
const filter = process.argv.slice(2);
let files = [...collect('dist/test'), ...collect('dist/src')].sort();
if (filter.length) files = files.filter((f) => filter.some((s) => f.includes(s)));
const run = spawnSync(process.execPath, ['--test', '--test-concurrency=2', ...files], { stdio: 'inherit' });
process.exit(run.status ?? 1);
