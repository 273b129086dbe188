/**
 * Starts the real sidecar (`bin/writ serve`) as a child process on a temp data dir and a free port,
 * with one fixed token per role, for black-box tests over HTTP.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sharedPostgres } from './postgres.js';
import { waitUntil } from './wait.js';

export const REPO = fileURLToPath(new URL('../../../', import.meta.url));
export const WRIT_BIN = join(REPO, 'bin', 'writ');

export interface TestTokens {
  pep: string;
  pep2: string;
  approver: string;
  approver2: string;
  auditor: string;
  reconciler: string;
  admin: string;
}

export interface TestServer {
  url: string;
  tokens: TestTokens;
  dataDir: string;
  configPath: string;
  child: ChildProcess;
  /** Output of the server so far (stdout + stderr), for diagnosing a failing test. */
  output(): string;
  /** SIGTERM and wait for exit; returns the exit code. Removes the temp dir unless keepData. */
  stop(opts?: { keepData?: boolean }): Promise<number | null>;
  /** SIGKILL and wait (chaos). */
  kill(): Promise<void>;
}

export interface TestServerOptions {
  policyDir?: string;
  clockFile?: string;
  dataDir?: string;
  config?: Record<string, unknown>;
  env?: Record<string, string>;
}

export const TEST_TOKENS: TestTokens = {
  pep: 'test-pep-token',
  pep2: 'test-pep2-token',
  approver: 'test-approver-token',
  approver2: 'test-approver2-token',
  auditor: 'test-auditor-token',
  reconciler: 'test-reconciler-token',
  admin: 'test-admin-token',
};

const matrixDatabases = new Map<string, string>();

export async function startTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'writ-test-'));
  const configPath = join(dataDir, '..', `writ-config-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}.json`);
  const t = TEST_TOKENS;
  const config = {
    listen: '127.0.0.1:0',
    policy_dir: opts.policyDir ?? join(REPO, 'policies'),
    data_dir: dataDir,
    tokens: [
      { token: t.pep, role: 'pep', actor: { type: 'Agent', id: 'offboarding-agent-prod' } },
      { token: t.pep2, role: 'pep', actor: { type: 'Agent', id: 'other-agent' } },
      { token: t.approver, role: 'approver', principal: { type: 'User', id: 'hr-5519' } },
      { token: t.approver2, role: 'approver', principal: { type: 'User', id: 'it-3001' } },
      { token: t.auditor, role: 'auditor' },
      { token: t.reconciler, role: 'reconciler' },
      { token: t.admin, role: 'admin' },
    ],
    checkpoint: { every_records: 1000, every_ms: 10000 },
    approval_max_ttl_s: 86400,
    witness_dir: null,
    policy_poll_ms: 200,
    clock_file: opts.clockFile ?? null,
    ...opts.config,
  };
  // The store matrix (docs/protocol.md §9): WRIT_TEST_STORE=postgres runs the same suite on a fresh database.
  // A restart on the same data dir finds the same database.
  if (process.env.WRIT_TEST_STORE === 'postgres' && !('database_url' in config)) {
    let url = matrixDatabases.get(dataDir);
    if (!url) matrixDatabases.set(dataDir, (url = await (await sharedPostgres()).createDatabase()));
    (config as Record<string, unknown>).database_url = url;
  }
  writeFileSync(configPath, JSON.stringify(config));
  const child = spawn(process.execPath, [WRIT_BIN, 'serve', '--config', configPath], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...opts.env },
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in 20 s:\n${out}`)), 20_000);
    const onData = () => {
      const m = /listening on (https?:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        child.stdout.off('data', onData);
        resolve(m[1]!);
      }
    };
    child.stdout.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${out}`));
    });
  });
  const cleanup = (keep?: boolean) => {
    rmSync(configPath, { force: true });
    if (!keep && !opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
  };
  return {
    url,
    tokens: t,
    dataDir,
    configPath,
    child,
    output: () => out,
    async stop(o = {}) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const code = await Promise.race([
        exited,
        new Promise<number | null>(
          (r) =>
            (timer = setTimeout(() => {
              child.kill('SIGKILL');
              r(-9);
            }, 15_000)),
        ),
      ]);
      clearTimeout(timer);
      cleanup(o.keepData);
      return code;
    },
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** The server's writ_policy_polls_total: how many polls of its policy dir have ended. */
export async function policyPolls(server: { url: string }): Promise<number> {
  const m = /^writ_policy_polls_total (\d+)$/m.exec((await call(server, 'GET', '/metrics')).text);
  if (!m) throw new Error('/metrics has no writ_policy_polls_total');
  return Number(m[1]);
}

/**
 * Waits until `n` polls of the policy dir have run from start to end after this call: a poll that changes
 * nothing leaves no other trace. The poll in flight when it is called (it may have read the dir before
 * the caller's last edit) is not one of them, hence n + 1.
 */
export async function afterPolls(server: { url: string }, n: number, timeoutMs = 30_000): Promise<void> {
  const from = await policyPolls(server);
  await waitUntil(async () => (await policyPolls(server)) >= from + n + 1, `${n} polls of the policy dir`, timeoutMs, 50);
}

/** fetch with a bearer token and JSON body; returns status and parsed JSON (or text). */
export async function call(
  server: { url: string },
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; rawBody?: string | Uint8Array; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<{ status: number; body: any; text: string }> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | Uint8Array | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) body = JSON.stringify(opts.body);
  if (body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(server.url + path, {
      method,
      headers,
      ...(opts.timeoutMs ? { signal: AbortSignal.timeout(opts.timeoutMs) } : {}),
      ...(body !== undefined ? { body: body as NonNullable<RequestInit['body']> } : {}),
    });
  } catch (e) {
    // undici says only "fetch failed"; name the request and the cause (ECONNRESET, ECONNREFUSED, …).
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`${method} ${path}: ${(e as Error).message}${cause ? ` (${cause.code ?? ''} ${cause.message ?? ''})` : ''}`, { cause: e });
  }
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: parsed, text };
}

/** POST /v1/decisions with `body`, as the PEP unless another token is given. */
export function decide(server: { url: string; tokens: TestTokens }, body: unknown, opts: { token?: string; timeoutMs?: number } = {}) {
  return call(server, 'POST', '/v1/decisions', { token: opts.token ?? server.tokens.pep, body, ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}) });
}

/**
 * A read of an employee's record (hris/read_employee, which the bundled policies allow at once): an
 * execute unless `phase` says otherwise, about employee 7721 unless `subject` names another (envelope and
 * arguments alike); `args` replaces the arguments alone.
 */
export function readEmployeeBody(
  execution_id: string,
  over: { phase?: 'propose' | 'execute'; subject?: string; args?: Record<string, unknown>; supersedes?: string | null } = {},
) {
  const subject = over.subject ?? '7721';
  return offboardingBody({
    execution_id,
    phase: over.phase ?? 'execute',
    envelope: { subject: { type: 'Employee', id: subject }, ...(over.supersedes !== undefined ? { supersedes: over.supersedes } : {}) },
    action: { server: 'hris', tool: 'read_employee', arguments: over.args ?? { employee_id: subject } },
  });
}

/** The offboarding envelope of the contract, with overrides. */
export function offboardingBody(
  over: { execution_id?: string; phase?: 'propose' | 'execute'; envelope?: Record<string, unknown>; action?: Record<string, unknown> } = {},
) {
  return {
    execution_id: over.execution_id ?? 'OFF-2048:disable-sign-in',
    phase: over.phase ?? 'propose',
    envelope: {
      task_id: 'OFF-2048',
      purpose: 'scheduled_employee_offboarding',
      requester: { type: 'User', id: 'manager-1842' },
      actor: { type: 'Agent', id: 'offboarding-agent-prod' },
      subject: { type: 'Employee', id: '7721' },
      authoritative_event: 'hris:termination:99108',
      execute_after: '2026-08-24T17:00:00+07:00',
      evidence_refs: ['hris:employee:7721@version-44'],
      supersedes: null,
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      ...over.envelope,
    },
    action: { server: 'idp', tool: 'disable_sign_in', arguments: { employee_id: '7721' }, ...over.action },
  };
}
