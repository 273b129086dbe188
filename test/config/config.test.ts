import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUNDLED_POLICIES, generateDevTokens, loadConfig } from '../../src/config/config.js';
import { frontsAreThreads, frontThreadsSupported } from '../../src/front/node-version.js';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

function withConfigFile(content: unknown, fn: (path: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'writ-config-test-'));
  try {
    const path = join(dir, 'config.json');
    // A config file must list its tokens (dev tokens are only for no config at all).
    writeFileSync(path, JSON.stringify(content && typeof content === 'object' && !Array.isArray(content) ? { tokens: [], ...content } : content));
    fn(path);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('evaluator_threads defaults to one per core beyond the first, at most 4', () => {
  withConfigFile({}, (path) => {
    const { config } = loadConfig({ configPath: path });
    assert.equal(config.evaluator_threads, Math.min(Math.max(availableParallelism() - 1, 0), 4));
  });
});

for (const setting of ['evaluator_threads', 'http_threads'] as const) {
  test(`${setting} accepts 0..64 and refuses anything else`, () => {
    for (const ok of [0, 1, 8, 64]) withConfigFile({ [setting]: ok }, (path) => assert.equal(loadConfig({ configPath: path }).config[setting], ok));
    for (const bad of [-1, 1.5, 65, '2', null]) {
      withConfigFile({ [setting]: bad }, (path) => assert.throws(() => loadConfig({ configPath: path }), new RegExp(setting)));
    }
  });
}

test('http_threads defaults to one per core beyond the first, at least 1, at most 4', () => {
  withConfigFile({}, (path) => {
    const { config } = loadConfig({ configPath: path });
    assert.equal(config.http_threads, Math.min(Math.max(availableParallelism() - 1, 1), 4));
  });
});

test('fronts are threads where listen has reusePort (Node 22.12+, 23.1+, 24), else cluster processes', () => {
  for (const v of ['20.20.2', '22.11.0', '23.0.0']) assert.equal(frontThreadsSupported(v), false, v);
  for (const v of ['22.12.0', '22.23.5', '23.1.0', '24.22.3', '25.0.0']) assert.equal(frontThreadsSupported(v), true, v);
  // A single front has the port to itself (no SO_REUSEPORT needed): a thread on every Node.
  for (const v of ['20.20.2', '22.11.0', '24.22.3']) assert.equal(frontsAreThreads(1, v), true, v);
  assert.equal(frontsAreThreads(2, '20.20.2'), false);
  assert.equal(frontsAreThreads(2, '24.22.3'), true);
});

test('an unknown (misspelt) config key is named on stderr, not silently ignored', () => {
  const written: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = (chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  };
  try {
    withConfigFile({ lsten: '127.0.0.1:9', checkpoint: { every_record: 5 } }, (path) => {
      const { config } = loadConfig({ configPath: path });
      assert.equal(config.listen, '127.0.0.1:8700');
    });
  } finally {
    process.stderr.write = write;
  }
  assert.equal(written.length, 2, written.join(''));
  assert.match(written[0]!, /unknown key "lsten" is ignored \(known keys: .*listen/);
  assert.match(written[1]!, /unknown key "checkpoint.every_record" is ignored/);
});

test('a flag given empty is refused, not taken as "use the default" (an empty --database-url would serve from LMDB)', () => {
  const flags = {
    listen: '--listen',
    policyDir: '--policy-dir',
    dataDir: '--data-dir',
    databaseUrl: '--database-url',
    signingKeyFile: '--signing-key-file',
  } as const;
  for (const [key, flag] of Object.entries(flags)) {
    assert.throws(
      () => loadConfig({ [key]: '' }),
      (e: Error & { code?: string }) => e.code === 'INVALID_REQUEST' && e.message.includes(`${flag} is empty`),
      flag,
    );
  }
  // WRIT_DATABASE_URL set but empty stays "unset", as an empty environment variable usually means.
  const before = process.env.WRIT_DATABASE_URL;
  process.env.WRIT_DATABASE_URL = '';
  try {
    assert.equal(loadConfig({}).config.database_url, null);
  } finally {
    if (before === undefined) delete process.env.WRIT_DATABASE_URL;
    else process.env.WRIT_DATABASE_URL = before;
  }
});

test('database_url: a postgres:// URL the driver cannot parse is refused at start, without quoting it (it may hold a password)', () => {
  for (const databaseUrl of ['postgres://writ:s3cret@127.0.0.1:99999/db', 'mysql://writ:s3cret@h/db']) {
    assert.throws(
      () => loadConfig({ databaseUrl }),
      (e: Error & { code?: string }) =>
        e.code === 'INVALID_REQUEST' && /database_url must be a postgres:\/\/user/.test(e.message) && !e.message.includes('s3cret'),
      databaseUrl,
    );
  }
  assert.equal(loadConfig({ databaseUrl: 'postgres://writ:s3cret@127.0.0.1:5432/db' }).config.database_url, 'postgres://writ:s3cret@127.0.0.1:5432/db');
});

test('a token listed twice, plainly or by its SHA-256, is refused: its role would be whichever entry matched first', () => {
  const sha = (t: string) => createHash('sha256').update(t).digest('hex');
  const cases: unknown[][] = [
    [
      { token: 'a', role: 'auditor' },
      { token: 'a', role: 'admin' },
    ],
    [
      { token: 'a', role: 'auditor' },
      { token_sha256: sha('a'), role: 'admin' },
    ],
    [
      { token_sha256: sha('a').toUpperCase(), role: 'auditor' },
      { token_sha256: sha('a'), role: 'auditor' },
    ],
  ];
  for (const tokens of cases) {
    withConfigFile({ tokens }, (path) => {
      assert.throws(
        () => loadConfig({ configPath: path }),
        (e: Error) => e.message.includes('tokens[1] is the same token as tokens[0]'),
        JSON.stringify(tokens),
      );
    });
  }
  withConfigFile(
    {
      tokens: [
        { token: 'a', role: 'auditor' },
        { token: 'b', role: 'admin' },
      ],
    },
    (path) => {
      assert.equal(loadConfig({ configPath: path }).config.tokens.length, 2);
    },
  );
});

test('writ serve names the listen address when its host does not resolve', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'writ-listen-'));
  const r = spawnSync(process.execPath, [join(REPO_ROOT, 'bin', 'writ'), 'serve', '--listen', '256.1.1.1:8951', '--data-dir', dataDir], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  rmSync(dataDir, { recursive: true, force: true });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /cannot start: the listen address \(config `listen` or --listen\): getaddrinfo ENOTFOUND 256\.1\.1\.1/);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
});

test('writ serve on a listen address already taken exits 1 naming it, and creates no data dir', async () => {
  const { createServer } = await import('node:net');
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const port = (taken.address() as { port: number }).port;
  const dir = mkdtempSync(join(tmpdir(), 'writ-taken-'));
  try {
    const dataDir = join(dir, 'data');
    const r = spawnSync(process.execPath, [join(REPO_ROOT, 'bin', 'writ'), 'serve', '--listen', `127.0.0.1:${port}`, '--data-dir', dataDir], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /cannot start: the listen address \(config `listen` or --listen\): listen EADDRINUSE/);
    assert.equal(existsSync(dataDir), false, 'nothing is left behind');
  } finally {
    taken.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('writ serve with a config that lists no tokens (a misspelt key) refuses to start, printing no dev tokens', () => {
  const dir = mkdtempSync(join(tmpdir(), 'writ-notokens-'));
  try {
    const path = join(dir, 'config.json');
    writeFileSync(path, JSON.stringify({ listen: '127.0.0.1:0', data_dir: join(dir, 'data'), token: [{ token: 'x', role: 'auditor' }] }));
    const r = spawnSync(process.execPath, [join(REPO_ROOT, 'bin', 'writ'), 'serve', '--config', path], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /cannot start: INVALID_REQUEST: config: .* has no "tokens"/);
    assert.doesNotMatch(r.stdout + r.stderr, /dev-(pep|admin|auditor)-/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every config value is checked for its type at start: a wrong one is refused, naming the key, never used', () => {
  const bad: Array<[Record<string, unknown>, string]> = [
    [{ max_body_bytes: 'x' }, 'max_body_bytes'], // would switch the 413 limit off
    [{ max_body_bytes: null }, 'max_body_bytes'],
    [{ max_body_bytes: -1 }, 'max_body_bytes'],
    [{ policy_poll_ms: 0 }, 'policy_poll_ms'], // would poll without pause
    [{ policy_poll_ms: 'x' }, 'policy_poll_ms'],
    [{ policy_poll_ms: 2 ** 31 }, 'policy_poll_ms'], // Node would fire it after 1 ms
    [{ checkpoint: { every_ms: 2 ** 31 } }, 'checkpoint.every_ms'],
    [{ durability: 'fast' }, 'durability'],
    [{ store_compression: 'zstd' }, 'store_compression'],
    [{ store_compression: true }, 'store_compression'],
    [{ checkpoint: 5 }, 'checkpoint'],
    [{ data_dir: 5 }, 'data_dir'],
    [{ policy_dir: ['p'] }, 'policy_dir'],
    [{ witness_dir: 7 }, 'witness_dir'],
    [{ clock_file: {} }, 'clock_file'],
    [{ log_format: 'yaml' }, 'log_format'],
  ];
  for (const [file, key] of bad) {
    withConfigFile(file, (path) => assert.throws(() => loadConfig({ configPath: path }), new RegExp(`config: ${key}`), JSON.stringify(file)));
  }
  withConfigFile({ max_body_bytes: 2048, policy_poll_ms: 250, durability: 'flushed', witness_dir: null, store_compression: 'lz4' }, (path) => {
    const { config } = loadConfig({ configPath: path });
    assert.deepEqual(
      [config.max_body_bytes, config.policy_poll_ms, config.durability, config.witness_dir, config.store_compression],
      [2048, 250, 'flushed', null, 'lz4'],
    );
  });
});

test('public_url: an http(s) URL without credentials, query or fragment, kept without its trailing slash', () => {
  for (const [given, kept] of [
    ['https://pdp.example.com', 'https://pdp.example.com'],
    ['https://pdp.example.com/', 'https://pdp.example.com'],
    ['http://127.0.0.1:8700/writ/', 'http://127.0.0.1:8700/writ'],
  ]) {
    withConfigFile({ public_url: given }, (path) => assert.equal(loadConfig({ configPath: path }).config.public_url, kept));
  }
  withConfigFile({}, (path) => assert.equal(loadConfig({ configPath: path }).config.public_url, null));
  for (const bad of [
    'pdp.example.com',
    'ftp://pdp.example.com',
    'https://u:p@pdp.example.com',
    'https://pdp.example.com/?a=1',
    'https://pdp.example.com/#x',
    'https://pdp.example.com/?',
    '',
    42,
  ]) {
    withConfigFile({ public_url: bad }, (path) =>
      assert.throws(() => loadConfig({ configPath: path }), /public_url must be an http\(s\) URL/, JSON.stringify(bad)),
    );
  }
});

test('a named config that is empty or lists no tokens is refused: dev mode (fresh tokens printed) only with no config at all', () => {
  assert.throws(() => loadConfig({ configPath: '' }), /--config is empty/);
  const before = process.env.WRIT_CONFIG;
  process.env.WRIT_CONFIG = '';
  try {
    assert.throws(() => loadConfig({ forServe: true }), /WRIT_CONFIG is set but empty/);
    assert.equal(loadConfig({}).devTokens, true, 'elsewhere (keys rotate) an empty WRIT_CONFIG is unset');
  } finally {
    if (before === undefined) delete process.env.WRIT_CONFIG;
    else process.env.WRIT_CONFIG = before;
  }
  const dir = mkdtempSync(join(tmpdir(), 'writ-config-test-'));
  try {
    for (const content of [{ listen: '127.0.0.1:9' }, { token: [{ token: 'x', role: 'auditor' }] }]) {
      const path = join(dir, 'config.json');
      writeFileSync(path, JSON.stringify(content));
      assert.throws(() => loadConfig({ configPath: path, forServe: true }), /has no "tokens"/, JSON.stringify(content));
      // A command that calls nothing (keys rotate) may read a config without tokens.
      assert.deepEqual(loadConfig({ configPath: path }).config.tokens, []);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  withConfigFile({ tokens: [] }, (path) => assert.equal(loadConfig({ configPath: path }).devTokens, false));
  assert.equal(loadConfig({}).devTokens, true);
});

test('with no policy_dir named, ./policies is used when it exists, else the bundled example', () => {
  const cwd = process.cwd();
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'writ-config-cwd-')));
  try {
    process.chdir(dir);
    assert.equal(loadConfig({}).config.policy_dir, BUNDLED_POLICIES);
    mkdirSync(join(dir, 'policies'));
    assert.equal(loadConfig({}).config.policy_dir, join(dir, 'policies'));
    withConfigFile({}, (path) => assert.equal(loadConfig({ configPath: path }).config.policy_dir, join(dir, 'policies')));
    assert.equal(loadConfig({ policyDir: 'elsewhere' }).config.policy_dir, join(dir, 'elsewhere'));
  } finally {
    process.chdir(cwd);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('dev tokens.json is owner-only, a file left from before with looser permissions included', () => {
  const dir = mkdtempSync(join(tmpdir(), 'writ-config-devtokens-'));
  try {
    const file = join(dir, 'tokens.json');
    writeFileSync(file, '{}', { mode: 0o644 });
    chmodSync(file, 0o644);
    assert.equal(generateDevTokens(dir).file, file);
    assert.equal(statSync(file).mode & 0o777, 0o600);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('log_format "json": every line writ serve says, on stdout and stderr, is one {ts, level, msg} object', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'writ-log-json-'));
  try {
    const path = join(dir, 'config.json');
    writeFileSync(
      path,
      JSON.stringify({
        listen: '127.0.0.1:0',
        data_dir: join(dir, 'data'),
        log_format: 'json',
        lsten: 'misspelt',
        tokens: [{ token: 'a-token', role: 'auditor' }],
      }),
    );
    const child = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'writ'), 'serve', '--config', path], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (d) => {
        stdout += d;
        const m = /"msg":"listening on (http:\/\/[^"]+)"/.exec(stdout);
        if (m) resolve(m[1]!);
      });
      child.once('exit', () => reject(new Error(`exited before listening: ${stdout}${stderr}`)));
    });
    // It serves as in the text format.
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
    child.kill('SIGTERM');
    assert.equal(await exited, 0, stderr);
    const parse = (text: string) =>
      text
        .trim()
        .split('\n')
        .map((line) => {
          const o = JSON.parse(line);
          assert.deepEqual(Object.keys(o), ['ts', 'level', 'msg'], line);
          assert.ok(!Number.isNaN(Date.parse(o.ts)), line);
          assert.ok(!o.msg.startsWith('writ'), `the text's "writ:" prefix is dropped: ${line}`);
          return o as { level: string; msg: string };
        });
    const out = parse(stdout);
    assert.ok(
      out.every((o) => o.level === 'info'),
      stdout,
    );
    assert.ok(
      out.some((o) => o.msg.startsWith('policies ')),
      stdout,
    );
    const err = parse(stderr);
    assert.ok(
      err.some((o) => o.level === 'warn' && /unknown key "lsten" is ignored/.test(o.msg)),
      stderr,
    );
    assert.ok(
      err.some((o) => o.level === 'info' && /^SIGTERM: finishing in-flight requests/.test(o.msg)),
      stderr,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('WRIT_LOG_FORMAT=json holds where the config does not name a log_format; a config that names one wins', () => {
  const before = process.env.WRIT_LOG_FORMAT;
  process.env.WRIT_LOG_FORMAT = 'json';
  try {
    withConfigFile({}, (path) => assert.equal(loadConfig({ configPath: path }).config.log_format, 'json'));
    withConfigFile({ log_format: 'text' }, (path) => assert.equal(loadConfig({ configPath: path }).config.log_format, 'text'));
    delete process.env.WRIT_LOG_FORMAT;
    withConfigFile({}, (path) => assert.equal(loadConfig({ configPath: path }).config.log_format, 'text'));
  } finally {
    if (before === undefined) delete process.env.WRIT_LOG_FORMAT;
    else process.env.WRIT_LOG_FORMAT = before;
  }
});

test('jwt_issuers, tls_clients, tls_client_ca_file and delegated tokens are checked at start (docs/protocol.md §13)', () => {
  const issuer = {
    issuer: 'https://idp.example.com',
    audience: 'https://writ.example.com',
    roles: { 'writ.pep': { role: 'pep', actor: { type: 'Agent', claim: 'client_id' } } },
  };
  withConfigFile({ jwt_issuers: [issuer] }, (path) => {
    const { config } = loadConfig({ configPath: path });
    assert.deepEqual(config.jwt_issuers[0]!.identity_types, { requester: 'User', actor: 'Agent' });
  });
  const refused: Array<[Record<string, unknown>, RegExp]> = [
    [{ jwt_issuers: [{ ...issuer, issuer: 'http://idp.example.com' }] }, /jwt_issuers\[0\]\.issuer must be https/],
    [{ jwt_issuers: [issuer, issuer] }, /listed twice/],
    [{ jwt_issuers: [{ ...issuer, roles: { 'writ.pep': { role: 'pep' } } }] }, /actor/],
    [{ jwt_issuers: [{ ...issuer, extra: 1 }] }, /unknown member/],
    [{ tls_client_ca_file: 'ca.pem' }, /tls_client_ca_file needs HTTPS/],
    [{ tls_clients: [{ uri: 'spiffe://x/y', role: 'pep' }] }, /tls_clients\[0\]\.actor/],
    [{ tls_clients: [{ uri: 'not a uri', role: 'auditor' }] }, /tls_clients\[0\]\.uri/],
    [{ tokens: [{ token: 't', role: 'auditor', delegated: { audiences: ['a'] } }] }, /only a pep token is delegated/],
    [{ tokens: [{ token: 't', role: 'pep', actor: { type: 'Agent', id: 'g' }, delegated: { audiences: [] } }] }, /delegated/],
  ];
  for (const [content, message] of refused)
    withConfigFile(content, (path) => assert.throws(() => loadConfig({ configPath: path }), message, JSON.stringify(content)));
  // A config with JWT issuers and no static tokens starts (`tokens` may be left out).
  const dir = mkdtempSync(join(tmpdir(), 'writ-config-test-'));
  try {
    const path = join(dir, 'config.json');
    writeFileSync(path, JSON.stringify({ jwt_issuers: [issuer] }));
    assert.equal(loadConfig({ configPath: path, forServe: true }).config.tokens.length, 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
