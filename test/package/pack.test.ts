/**
 * The installable package (issue 12), by exactly the user's path: `npm pack` (which builds through
 * `prepare`), install the tarball into an empty folder, then `npx writ --help`, `npx writ serve` on
 * its bundled example, `npx writ verify` of that server's ledger export, and
 * `import { guardMcpServer } from 'writ/pep'` at run time and with types.
 *
 * The pack runs in a copy of the checkout (sharing its node_modules) so that its build cannot touch
 * the dist/ the other tests are running from. The install prefers the local npm cache (`npm ci` filled
 * it) and reaches the registry only for what is missing there.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { builtinModules } from 'node:module';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const NPX = process.platform === 'win32' ? 'npx.cmd' : 'npx';
const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

let work: string;
let tarball: string;
let installDir: string;

function run(cmd: string, args: string[], cwd: string, timeout = 300_000): SpawnSyncReturns<string> {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    timeout,
    env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' },
  });
  return r;
}
const show = (r: SpawnSyncReturns<string>) => `exit ${r.status} ${r.signal ?? ''}\n${r.stdout}\n${r.stderr}`;

before(() => {
  work = mkdtempSync(join(tmpdir(), 'writ-pack-'));
  // A copy of the checkout without what a clone would not have; node_modules is shared by a link.
  const source = join(work, 'source');
  mkdirSync(source);
  for (const name of readdirSync(REPO)) {
    if (['node_modules', 'dist', '.git', '.writ'].includes(name)) continue;
    cpSync(join(REPO, name), join(source, name), { recursive: true });
  }
  symlinkSync(join(REPO, 'node_modules'), join(source, 'node_modules'), 'dir');
  const packed = run(NPM, ['pack', '--pack-destination', work], source);
  assert.equal(packed.status, 0, show(packed));
  tarball = join(work, `${pkg.name}-${pkg.version}.tgz`);
  assert.ok(existsSync(tarball), show(packed));
  installDir = join(work, 'user');
  mkdirSync(installDir);
  const installed = run(NPM, ['install', '--prefer-offline', tarball], installDir);
  assert.equal(installed.status, 0, show(installed));
});
after(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

test('the tarball ships the built code, bin, policies, schemas and docs — no tests, no benches, no sources', () => {
  const list = spawnSync('tar', ['tzf', tarball], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter(Boolean)
    .map((f) => f.replace(/^package\//, ''));
  for (const f of [
    'bin/writ',
    'dist/src/cli/index.js',
    'dist/src/pep/index.js',
    'dist/src/pep/index.d.ts',
    'docs/protocol.md',
    'policies/offboarding.cedar',
    'schemas/envelope.json',
    'README.md',
    'package.json',
    'LICENSE',
    // The console's page and assets, where the built code looks for them (an installed package has no src/).
    'dist/src/console/static/index.html',
    'dist/src/console/static/console.css',
    'dist/src/console/web/app.js',
    // What the README and docs/protocol.md point at: the AuthZEN example and the vectors.
    'examples/authzen-todo/README.md',
    'vectors/binding/numbers.json',
  ]) {
    assert.ok(list.includes(f), `ships ${f}`);
  }
  // No tests, benches or sources; no screenshots (most of the bytes, and only for the repository's README).
  const unwanted = list.filter((f) => /^(test|bench|src|\.ci)\//.test(f) || /\.test\.|\.map$|^dist\/test\/|^docs\/.*\.png$/.test(f));
  assert.deepEqual(unwanted, []);
  // Nothing compiled from a source that no longer exists (the build removes such leftovers).
  const compiled = list.filter((f) => /^dist\/src\/.*\.js$/.test(f));
  const stale = compiled.filter((f) => !existsSync(join(REPO, f.replace(/^dist\//, '').replace(/\.js$/, '.ts'))));
  assert.deepEqual(stale, []);
});

test('npx writ --help', () => {
  const r = run(NPX, ['writ', '--help'], installDir);
  assert.equal(r.status, 0, show(r));
  assert.match(r.stdout, /^usage: writ <command>/);
  assert.match(r.stdout, /docs\/protocol\.md/);
  assert.ok(existsSync(join(installDir, 'node_modules', 'writ', 'docs', 'protocol.md')), 'the help text names a file that is there');
});

test('npx writ serve on the bundled example, then npx writ verify of its export', { timeout: 120_000 }, async () => {
  const child = spawn(NPX, ['writ', 'serve', '--listen', '127.0.0.1:0'], { cwd: installDir, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no listening line in 60 s:\n${out}`)), 60_000);
      const check = () => {
        // The start-up lines: listening, policies, data dir (the last one we read).
        const m = /listening on (http:\/\/\S+)[\s\S]*data dir .*\n/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      };
      child.stdout.on('data', check);
      void exited.then((code) => reject(new Error(`serve exited ${code}:\n${out}`)));
    });
    assert.match(out, /policies \S*node_modules\/writ\/policies /, `serves the bundled example:\n${out}`);
    const ready = await fetch(`${url}/readyz`);
    assert.equal(ready.status, 200);
    // The auditor console is served from the package (its files are found beside the built code).
    for (const [path, type] of [
      ['/console/', 'text/html'],
      ['/console/console.css', 'text/css'],
      ['/console/app.js', 'text/javascript'],
      ['/favicon.ico', 'image/svg+xml'],
    ] as const) {
      const asset = await fetch(`${url}${path}`);
      assert.equal(asset.status, 200, `${path}: ${await asset.clone().text()}`);
      assert.ok(asset.headers.get('content-type')?.startsWith(type), `${path}: ${asset.headers.get('content-type')}`);
    }
    const tokens = JSON.parse(readFileSync(join(installDir, '.writ', 'tokens.json'), 'utf8')) as Record<string, string>;
    // One decision of the bundled story, so the export holds a decision whose binding verify recomputes.
    const decision = await fetch(`${url}/v1/decisions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.pep}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        execution_id: 'PKG-1:disable-sign-in',
        phase: 'propose',
        envelope: {
          task_id: 'PKG-1',
          purpose: 'scheduled_employee_offboarding',
          requester: { type: 'User', id: 'manager-1842' },
          actor: { type: 'Agent', id: 'offboarding-agent-prod' },
          subject: { type: 'Employee', id: '7721' },
        },
        action: { server: 'idp', tool: 'disable_sign_in', arguments: { employee_id: '7721' } },
      }),
    });
    assert.equal(decision.status, 200, await decision.clone().text());
    const exportRes = await fetch(`${url}/v1/ledger/export`, { headers: { authorization: `Bearer ${tokens.auditor}` } });
    assert.equal(exportRes.status, 200);
    const exportText = await exportRes.text();
    writeFileSync(join(installDir, 'export.jsonl'), exportText);
    const verified = run(NPX, ['writ', 'verify', 'export.jsonl'], installDir);
    assert.equal(verified.status, 0, show(verified));
    const lines = exportText.trim().split('\n');
    assert.deepEqual(JSON.parse(verified.stdout), { ok: true, records: lines.length, head: JSON.parse(lines.at(-1)!).hash });
  } finally {
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      /* already gone */
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
    }, 15_000);
    await exited;
    clearTimeout(timer);
  }
});

test("import { guardMcpServer } from 'writ/pep' runs, and its types check (a wrong option is a type error)", () => {
  const runtime = run(
    process.execPath,
    ['--input-type=module', '-e', "import { guardMcpServer, PdpClient } from 'writ/pep'; console.log(typeof guardMcpServer, typeof PdpClient)"],
    installDir,
  );
  assert.equal(runtime.status, 0, show(runtime));
  assert.equal(runtime.stdout.trim(), 'function function');

  const tsc = join(REPO, 'node_modules', 'typescript', 'bin', 'tsc');
  const compilerOptions = { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, skipLibCheck: true, types: [] };
  writeFileSync(
    join(installDir, 'good.ts'),
    [
      "import { guardMcpServer, type GuardOptions } from 'writ/pep';",
      "const options: GuardOptions = { pdp: 'http://127.0.0.1:8700', token: 'dev-pep', server: 'idp' };",
      'export const guard: (server: Parameters<typeof guardMcpServer>[0]) => unknown = (server) => guardMcpServer(server, options);',
      // An McpServer from another copy of the SDK (a project on another 1.x release) has private members
      // of its own class: the guard takes it by shape.
      'class OtherSdkMcpServer { private readonly _registeredTools = {}; readonly server = {}; size() { return Object.keys(this._registeredTools).length; } }',
      'export const other = () => guardMcpServer(new OtherSdkMcpServer(), options);',
      '',
    ].join('\n'),
  );
  writeFileSync(
    join(installDir, 'bad.ts'),
    ["import { type GuardOptions } from 'writ/pep';", "export const options: GuardOptions = { pdp: 8700, token: 'dev-pep', server: 'idp' };", ''].join('\n'),
  );
  writeFileSync(join(installDir, 'tsconfig.good.json'), JSON.stringify({ compilerOptions, files: ['good.ts'] }));
  writeFileSync(join(installDir, 'tsconfig.bad.json'), JSON.stringify({ compilerOptions, files: ['bad.ts'] }));
  const good = run(process.execPath, [tsc, '-p', 'tsconfig.good.json'], installDir);
  assert.equal(good.status, 0, show(good));
  const bad = run(process.execPath, [tsc, '-p', 'tsconfig.bad.json'], installDir);
  assert.notEqual(bad.status, 0, 'a number where the PDP URL goes does not type-check');
  assert.match(bad.stdout + bad.stderr, /bad\.ts.*pdp|pdp.*string|number.*string/s, show(bad));
});

test('dependencies are exactly what the shipped code imports (nothing dev-only ships)', () => {
  const builtins = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
  const imported = new Set<string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      // Declarations count: a type the public API names (McpServer) must resolve for the user too.
      else if ((p.endsWith('.js') || p.endsWith('.d.ts')) && !p.includes('.test.')) {
        const text = readFileSync(p, 'utf8');
        for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)['"]([^'"]+)['"]/g)) {
          const spec = m[1]!;
          if (spec.startsWith('.') || builtins.has(spec) || spec.startsWith('node:')) continue;
          imported.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
        }
      }
    }
  };
  walk(join(installDir, 'node_modules', 'writ', 'dist', 'src'));
  const declared = Object.keys(pkg.dependencies).sort();
  const missing = [...imported].filter((d) => !declared.includes(d)).sort();
  assert.deepEqual(missing, [], 'every package the shipped code or its types import is a dependency');
  const unused = declared.filter((d) => !imported.has(d));
  assert.deepEqual(unused, [], `dependencies the shipped code never imports (dev-only?): ${unused.join(', ')}`);
  assert.ok(relative(REPO, installDir).startsWith('..'));
});
