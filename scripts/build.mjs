#!/usr/bin/env node
// The build: TypeScript into dist/, then every file under src/ that is not TypeScript (static assets,
// e.g. a web page's HTML, CSS, icons) copied to the same place under dist/src/, so compiled code finds
// its assets beside it (new URL('./static/…', import.meta.url)) in a checkout and in the package alike.
//   node scripts/build.mjs           src only (tsconfig.build.json): what `npm pack` ships (prepare)
//   node scripts/build.mjs --tests   src and test (tsconfig.json): what `npm test` runs
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
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

// Outputs whose source is gone (a module moved or deleted) would otherwise stay in dist/ and ship in
// the package: remove them after the build (not before, so that a running `writ` never finds dist/
// half-empty). A compiled file's source is the same path under the root with `.ts` for `.js`/`.d.ts`;
// a copied asset's source is the same path.
function hasSource(file) {
  const rel = relative(join(root, 'dist'), file);
  if (existsSync(join(root, rel))) return true;
  for (const ext of ['.d.ts.map', '.js.map', '.d.ts', '.js']) if (rel.endsWith(ext)) return existsSync(join(root, `${rel.slice(0, -ext.length)}.ts`));
  return false;
}
function removeStale(dir) {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    const file = join(dir, name);
    if (statSync(file).isDirectory()) removeStale(file);
    else if (!hasSource(file)) rmSync(file);
  }
}
removeStale(join(root, 'dist', 'src'));
removeStale(join(root, 'dist', 'test'));
