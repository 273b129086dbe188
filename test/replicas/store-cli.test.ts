// `writ store migrate|copy` usage errors (docs/protocol.md §9): each says what is wrong, exit 2, and
// none needs a database. (Runs against PostgreSQL are in faults.test.ts.)
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { WRIT_BIN } from '../helpers/server.js';

const dataDir = mkdtempSync(join(tmpdir(), 'writ-store-cli-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

function store(args: string[], env: Record<string, string | undefined> = {}) {
  const childEnv: Record<string, string | undefined> = { ...process.env, WRIT_DATABASE_URL: undefined, ...env };
  for (const k of Object.keys(childEnv)) if (childEnv[k] === undefined) delete childEnv[k];
  const r = spawnSync(process.execPath, [WRIT_BIN, 'store', ...args], { encoding: 'utf8', env: childEnv, timeout: 30_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The first line on stderr (the usage text follows it). */
const firstLine = (stderr: string) => stderr.split('\n')[0]!;

test('a --database-url that is not postgres:// is named as such, for migrate and copy, exit 2', () => {
  for (const url of ['mysql://user:s3cret@db.example/writ', 'sqlite:///tmp/x.db', 'http://db.example/', 'postgres:/one-slash', 'db.example:5432/writ']) {
    for (const args of [
      ['migrate', '--database-url', url],
      ['copy', '--data-dir', dataDir, '--database-url', url],
      ['copy', '--database-url', url, '--data-dir', dataDir],
    ]) {
      const r = store(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stdout, '');
      assert.match(firstLine(r.stderr), /^writ store: --database-url is not a postgres:\/\/ \(or postgresql:\/\/\) URL: /, args.join(' '));
      assert.doesNotMatch(r.stderr, /unknown or incomplete command/);
      assert.doesNotMatch(r.stderr, /s3cret/, 'no credentials in the message');
      assert.match(r.stderr, /usage: writ store migrate/);
    }
  }
  assert.match(firstLine(store(['migrate', '--database-url', 'mysql://h/db']).stderr), /its scheme is mysql:$/);
  // A postgres:// URL the driver cannot parse (a port past 65535) is a usage error too, not "cannot connect".
  for (const url of ['postgres://writ:s3cret@127.0.0.1:99999/db', 'postgres://writ@[::1/db']) {
    const r = store(['migrate', '--database-url', url]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(firstLine(r.stderr), /URL: it cannot be parsed: check its host and port/);
    assert.doesNotMatch(r.stderr, /s3cret/);
  }
});

test('WRIT_DATABASE_URL that is not postgres:// is named as the source', () => {
  for (const args of [['migrate'], ['copy', '--data-dir', dataDir]]) {
    const r = store(args, { WRIT_DATABASE_URL: 'mysql://h/db' });
    assert.equal(r.code, 2);
    assert.match(firstLine(r.stderr), /^writ store: WRIT_DATABASE_URL is not a postgres:\/\/ \(or postgresql:\/\/\) URL/);
  }
  // The flag wins over the environment, and is what the message names.
  const r = store(['migrate', '--database-url', 'mysql://h/db'], { WRIT_DATABASE_URL: 'postgres://127.0.0.1:1/x' });
  assert.match(firstLine(r.stderr), /^writ store: --database-url is not/);
});

test('the other usage errors say what is missing', () => {
  const cases: Array<[string[], RegExp]> = [
    [[], /^writ store: a command is needed: migrate or copy$/],
    [['frobnicate', '--database-url', 'postgres://h/db'], /^writ store: unknown command 'frobnicate' \(migrate or copy\)$/],
    [['migrate'], /^writ store: a postgres:\/\/ --database-url \(or WRIT_DATABASE_URL\) is needed$/],
    [['copy', '--data-dir', dataDir], /^writ store: a postgres:\/\/ --database-url \(or WRIT_DATABASE_URL\) is needed$/],
    [['copy', '--database-url', 'postgresql://h/db'], /^writ store: copy needs --data-dir DIR/],
    [['migrate', '--bogus'], /^writ store: Unknown option '--bogus'/],
  ];
  for (const [args, expect] of cases) {
    const r = store(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '');
    assert.match(firstLine(r.stderr), expect, args.join(' '));
  }
});

test('postgres:// and postgresql:// URLs pass the usage check (an unreachable server is exit 1, not a usage error)', () => {
  for (const url of ['postgres://127.0.0.1:1/writ', 'postgresql://127.0.0.1:1/writ']) {
    const r = store(['migrate', '--database-url', url]);
    assert.equal(r.code, 1, `${url}: ${r.stderr}`);
    assert.match(r.stderr, /^writ store migrate: /);
  }
});
