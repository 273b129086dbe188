#!/usr/bin/env node
// The build: TypeScript into dist/, then every file under src/ that is not TypeScript (static assets,
// e.g. a web page's HTML, CSS, icons) copied to the same place under dist/src/, so compiled code finds
// its assets beside it (new URL('./static/…', import.meta.url)) in a checkout and in the package alike.
//   node scripts/build.mjs           src only (tsconfig.build.json): what `npm pack` ships (prepare)
//   node scripts/build.mjs --tests   src and test (tsconfig.json): what `npm test` runs
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const project = process.argv.includes('--tests') ? 'tsconfig.json' : 'tsconfig.build.json';
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
// An installed package ships dist/ already built and has no TypeScript: should a package manager run
// `prepare` there, there is nothing to do (and nothing to build with).
if (!existsSync(tsc) && existsSync(join(root, 'dist', 'src', 'cli', 'index.js')) && !existsSync(join(root, 'src'))) process.exit(0);
const build = spawnSync(process.execPath, [tsc, '-p', join(root, project)], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);

function copyAssets(dir) {
  for (const name of readdirSync(dir)) {
    const from = join(dir, name);
    if (statSync(from).isDirectory()) copyAssets(from);
    else if (!name.endsWith('.ts')) {
      const to = join(root, 'dist', relative(root, from));
      mkdirSync(dirname(to), { recursive: true });
      copyFileSync(from, to);
    }
  }
}
copyAssets(join(root, 'src'));
