/**
 * `bin/writ proxy` as a child process on raw stdio pipes, for tests that speak JSON-RPC lines to it
 * directly rather than through the SDK client: build its command line (token and defaults files in a
 * temp dir), spawn it, write lines to its stdin, read its stdout as lines or as answers by id, its
 * stderr, and how it exits.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from '../pep/helpers.js';
import { WRIT_BIN } from './server.js';

/** What a JSON-RPC answer line parses to. */
export type JsonRpcAnswer = { id: unknown; result?: any; error?: any };

const randomSuffix = () => Math.random().toString(36).slice(2);

/** Writes `token` exactly as given to a fresh `tok-*` file in `dir`; returns its path. */
export function writeTokenFile(dir: string, token: string): string {
  const file = join(dir, `tok-${randomSuffix()}`);
  writeFileSync(file, token);
  return file;
}

/** Writes `defaults` as JSON to a fresh `def-*.json` file in `dir`; returns its path. */
export function writeDefaultsFile(dir: string, defaults: unknown): string {
  const file = join(dir, `def-${randomSuffix()}.json`);
  writeFileSync(file, JSON.stringify(defaults));
  return file;
}

export interface ProxyCommandLine {
  pdpUrl: string;
  token: string;
  server: string;
  /** Where the token (and defaults) files are written. */
  dir: string;
  /** `--call-timeout`, when given. */
  callTimeoutMs?: number;
  /** Written to a file passed as `--defaults`, when given. */
  defaults?: unknown;
  /** More options, placed just before `--`. */
  extra?: string[];
  /** The server command, after `--`. */
  command: string[];
}

/** The arguments after `writ proxy`: `--pdp … --token-file … --server … [--call-timeout …] [--defaults …] [extra] -- command`. */
export function proxyArgs(c: ProxyCommandLine): string[] {
  const args = ['--pdp', c.pdpUrl, '--token-file', writeTokenFile(c.dir, c.token), '--server', c.server];
  if (c.callTimeoutMs !== undefined) args.push('--call-timeout', String(c.callTimeoutMs));
  if (c.defaults !== undefined) args.push('--defaults', writeDefaultsFile(c.dir, c.defaults));
  args.push(...(c.extra ?? []), '--', ...c.command);
  return args;
}

export interface ProxyProcessOptions {
  /** Everything after `writ proxy`. */
  args: string[];
  /** Added to the test's own environment. */
  env?: Record<string, string>;
  /**
   * Swallow errors writing to the proxy's stdin (EPIPE once it has exited), for tests that may send
   * after the proxy is gone. Off by default: such an error then fails the test run.
   */
  ignoreStdinErrors?: boolean;
  /** How long `answer`/`answerLine` wait when not told. Default 15 s. */
  answerTimeoutMs?: number;
  /** How long `stop` waits after closing stdin before SIGKILL. Default 10 s. */
  killAfterMs?: number;
}

export interface ProxyProcess {
  child: ChildProcessWithoutNullStreams;
  /** The complete stdout lines so far (grows as the proxy writes). */
  lines: string[];
  /** The proxy's (and its child's) stderr so far. */
  stderr(): string;
  /** Writes `line` and a newline to the proxy's stdin. */
  send(line: string): boolean;
  /** The first stdout line whose `id` is `id` (compared as JSON), unparsed; fails the test if none comes within `ms`. */
  answerLine(id: unknown, ms?: number): Promise<string>;
  /** `answerLine`, parsed. */
  answer(id: unknown, ms?: number): Promise<JsonRpcAnswer>;
  /** Every stdout line so far that parses as JSON with a numeric `id`, by id (a later line wins). */
  answersById(): Map<number, any>;
  /** The proxy's exit code. */
  exited: Promise<number | null>;
  /** Closes stdin and waits for the exit (SIGKILL after `killAfterMs`); returns the exit code. */
  stop(): Promise<number | null>;
}

/** Spawns `node bin/writ proxy …args` with piped stdio and starts collecting its output. */
export function spawnProxy(opts: ProxyProcessOptions): ProxyProcess {
  const answerTimeoutMs = opts.answerTimeoutMs ?? 15_000;
  const killAfterMs = opts.killAfterMs ?? 10_000;
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [WRIT_BIN, 'proxy', ...opts.args], {
    env: { ...process.env, ...opts.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let buf = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString('utf8');
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      lines.push(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
  });
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  if (opts.ignoreStdinErrors) child.stdin.on('error', () => undefined);
  const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
  const answerLine = async (id: unknown, ms = answerTimeoutMs) => {
    const found = await waitFor(
      () =>
        lines.find((l) => {
          try {
            return JSON.stringify(JSON.parse(l).id) === JSON.stringify(id);
          } catch {
            return false;
          }
        }),
      ms,
    );
    assert.ok(found, `no answer for id ${JSON.stringify(id)}; stderr: ${err}`);
    return found;
  };
  return {
    child,
    lines,
    stderr: () => err,
    send: (line) => child.stdin.write(`${line}\n`),
    answerLine,
    answer: async (id, ms) => JSON.parse(await answerLine(id, ms)) as JsonRpcAnswer,
    answersById: () => {
      const answers = new Map<number, any>();
      for (const l of lines) {
        try {
          const m = JSON.parse(l);
          if (typeof m.id === 'number') answers.set(m.id, m);
        } catch {
          /* not JSON */
        }
      }
      return answers;
    },
    exited,
    stop: async () => {
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

export interface ProxyRunOptions extends ProxyProcessOptions {
  /** Sent one by one, right after the spawn. */
  send: string[];
  /** The numeric ids whose answers to wait for (up to 15 s) before closing stdin. */
  awaitIds: number[];
  /**
   * Also stop waiting as soon as the proxy has exited (for runs that may fail early), rather than
   * waiting out the 15 s for answers that cannot come.
   */
  stopWaitingOnExit?: boolean;
}

/**
 * One whole proxy run: spawn, send the lines, wait for the answers to `awaitIds`, close stdin, wait
 * for the exit. Returns the answers by id, the exit code and the stderr.
 */
export async function runProxy(opts: ProxyRunOptions): Promise<{ answers: Map<number, any>; code: number | null; err: string }> {
  const p = spawnProxy(opts);
  for (const l of opts.send) p.send(l);
  let answers = new Map<number, any>();
  await waitFor(() => {
    answers = p.answersById();
    return opts.awaitIds.every((id) => answers.has(id)) || (opts.stopWaitingOnExit === true && p.child.exitCode !== null);
  }, 15_000);
  p.child.stdin.end();
  const code = await p.exited;
  return { answers, code, err: p.stderr() };
}
