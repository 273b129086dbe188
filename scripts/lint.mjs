#!/usr/bin/env node
// `npm run lint`: Biome (format and syntactic rules, biome.jsonc), then ESLint with typescript-eslint's
// type-aware rules (tools/eslint/eslint.config.mjs). `npm run lint:fix` (`--fix`) applies both tools' safe fixes.
//
// ESLint lives in its own package, tools/eslint/, with TypeScript 5.9: typescript-eslint loads the compiler's
// JavaScript API, which the native TypeScript 7 the project builds with does not ship. That package is
// installed here from its lockfile when it is missing or older than the lockfile, so `npm run lint` works on a
// fresh clone as it does in CI (.ci/run installs it first, the same way).
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const tool = join(root, 'tools', 'eslint');
const fix = process.argv.includes('--fix');

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.error) throw r.error;
  return r.status ?? 1;
}

const biome = join(root, 'node_modules', '.bin', 'biome');
const biomeStatus = fix ? run(biome, ['check', '--write', '.']) : run(biome, ['ci', '.']);
if (biomeStatus !== 0) process.exit(biomeStatus);

// npm writes node_modules/.package-lock.json on each install: older than the lockfile means a stale install.
const installed = join(tool, 'node_modules', '.package-lock.json');
if (!existsSync(installed) || statSync(installed).mtimeMs < statSync(join(tool, 'package-lock.json')).mtimeMs) {
  console.error('lint: installing tools/eslint (npm ci --prefix tools/eslint)');
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const status = run(npm, ['ci', '--prefix', tool, '--no-audit', '--no-fund']);
  if (status !== 0) process.exit(status);
}
const eslint = join(tool, 'node_modules', 'eslint', 'bin', 'eslint.js');
const args = [eslint, '--config', join(tool, 'eslint.config.mjs'), ...(fix ? ['--fix'] : []), 'src', 'test', 'bench', 'scripts'];
process.exit(run(process.execPath, args));
