/**
 * The project stands on its own (issue 12): no file reads or links anything outside the repository
 * (the contract's folder beside it, in particular), every "§N" reference in the README, the policies'
 * README, the help texts and the sources resolves to a section of docs/protocol.md, and the relative
 * links of the project's Markdown point at files that exist.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const WRIT_BIN = join(REPO, 'bin', 'writ');

/** Not project files: installed, built, generated at run time, VCS. */
const SKIP_DIRS = new Set(['node_modules', 'dist', '.git', '.writ']);
/**
 * bench/ is exempt: its HTTP benchmark starts a peer product (Cerbos) from the folder where the peers
 * were provided, for comparison only; no test, no build and no run of writ touches bench/.
 */
const EXEMPT_DIRS = new Set(['bench']);

function projectFiles(dir = REPO): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) {
      if (SKIP_DIRS.has(name) || (dir === REPO && EXEMPT_DIRS.has(name))) continue;
      out.push(...projectFiles(p));
    } else if (st.isFile() && st.size < 8 * 1024 * 1024) {
      out.push(p);
    }
  }
  return out;
}

function textOf(file: string): string | undefined {
  const buf = readFileSync(file);
  if (buf.includes(0)) return undefined; // binary
  return buf.toString('utf8');
}

// Built from pieces so that this file does not match itself.
const SHARED = ['..' + '/shared', '/work' + '/shared', 'shared' + '/golden', 'shared' + '/CONTRACT'];

test('no project file reads or links the folder beside the repository (the contract, the golden files)', () => {
  const offenders: string[] = [];
  const files = projectFiles();
  assert.ok(files.length > 100, `walked the repository (${files.length} files)`);
  for (const file of files) {
    const rel = relative(REPO, file);
    // The golden copies keep their original `about` text verbatim (they name the contract's section).
    if (rel.startsWith(`${join('vectors', 'golden')}/`) && rel.endsWith('.json')) continue;
    const text = textOf(file);
    if (text === undefined) continue;
    text.split('\n').forEach((line, i) => {
      if (SHARED.some((needle) => line.includes(needle))) offenders.push(`${rel}:${i + 1}: ${line.trim().slice(0, 160)}`);
    });
  }
  assert.deepEqual(offenders, [], `files referring outside the repository:\n${offenders.join('\n')}`);
});

/** Section numbers defined by docs/protocol.md headings: "## 3. …" → 3, "### 3.1 …" → 3.1. */
function protocolSections(): Set<string> {
  const text = readFileSync(join(REPO, 'docs', 'protocol.md'), 'utf8');
  const out = new Set<string>();
  for (const m of text.matchAll(/^#{2,3} (\d+(?:\.\d+)?)\.? /gm)) out.add(m[1]!);
  return out;
}

/** "§N" references that are not an RFC's own sections ("RFC 9162 §2.1"). */
function sectionRefs(text: string): string[] {
  return [...text.matchAll(/(?<!RFC ?\d+,? )§(\d+(?:\.\d+)?)/g)].map((m) => m[1]!);
}

test('every §N in the README, policies/README.md, the help texts and the sources resolves in docs/protocol.md', () => {
  const sections = protocolSections();
  for (const n of ['1', '2', '3', '3.1', '4', '5', '6', '7', '8', '9', '10', '11', '12']) assert.ok(sections.has(n), `docs/protocol.md has §${n}`);
  const missing: string[] = [];
  const check = (where: string, text: string, refs = sectionRefs(text)) => {
    for (const n of refs) if (!sections.has(n)) missing.push(`${where}: §${n}`);
  };
  for (const doc of ['README.md', join('policies', 'README.md'), join('docs', 'protocol.md')]) {
    check(doc, readFileSync(join(REPO, doc), 'utf8'));
  }
  // Help texts: the top level and every subcommand's --help.
  const top = spawnSync(process.execPath, [WRIT_BIN, '--help'], { encoding: 'utf8' });
  assert.equal(top.status, 0);
  assert.match(top.stdout, /docs\/protocol\.md/);
  check('writ --help', top.stdout);
  const commands = [...top.stdout.matchAll(/^ {2}([a-z]+) {2,}/gm)].map((m) => m[1]!);
  assert.ok(commands.includes('proxy') && commands.includes('verify'), commands.join(' '));
  for (const cmd of commands) {
    const args = cmd === 'keys' ? ['keys', 'rotate', '--help'] : [cmd, '--help'];
    const r = spawnSync(process.execPath, [WRIT_BIN, ...args], { encoding: 'utf8' });
    const text = r.stdout + r.stderr;
    if (/§/.test(text)) assert.match(text, /docs\/protocol\.md/, `writ ${cmd} --help: a § reference names docs/protocol.md`);
    check(`writ ${args.join(' ')}`, text);
  }
  // Sources, schemas and tests: "docs/protocol.md §N".
  for (const file of projectFiles()) {
    const rel = relative(REPO, file);
    if (!/^(src|test|schemas|policies|scripts|vectors)\//.test(rel)) continue;
    const text = textOf(file);
    if (text === undefined) continue;
    check(
      rel,
      text,
      [...text.matchAll(/docs\/protocol\.md §(\d+(?:\.\d+)?)/g)].map((m) => m[1]!),
    );
  }
  assert.deepEqual(missing, [], `unresolved section references:\n${missing.join('\n')}`);
});

test('relative links in the project Markdown point at files that exist', () => {
  const broken: string[] = [];
  for (const doc of projectFiles().filter((f) => f.endsWith('.md'))) {
    const text = readFileSync(doc, 'utf8');
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!;
      if (/^[a-z]+:/i.test(target) || target.startsWith('#')) continue;
      const path = resolve(dirname(doc), target.split('#')[0]!);
      if (!existsSync(path)) broken.push(`${relative(REPO, doc)}: ${target}`);
    }
  }
  assert.deepEqual(broken, [], `broken links:\n${broken.join('\n')}`);
});
