/**
 * `writ proxy`: puts the PEP in front of any stdio MCP server without changing it.
 *
 * Transport: newline-delimited JSON-RPC on the child's stdin/stdout (the MCP stdio transport). The
 * child inherits the proxy's environment, working directory and stderr. What the PEP does to the
 * messages is the relay's (relay.ts: held calls, refusals, outcomes, tasks, tool lists); this file is
 * the stdio shell around it:
 *
 * - Client lines: a CR is taken out of a line (a line end to some children, whitespace to JSON), blank
 *   lines are dropped, and each line goes to the relay — byte for byte to the child when the relay
 *   passes it on unchanged.
 * - Child lines: what the relay does not take (answers to held calls, its own requests' answers) goes
 *   to the client byte for byte, in order.
 * - When the child exits, calls in flight are answered as unknown, and `runProxy` resolves with the
 *   child's exit status (128 + signal number when it was killed by a signal) — once its stdout has
 *   closed, or EXIT_GRACE_MS after its exit when a process it started still holds the pipe open (what
 *   the child wrote before exiting is read first). Client input is read until every call in flight is
 *   answered (calls arriving meanwhile are refused `SERVER_EXITED`), and late PDP answers are awaited
 *   for LATE_WORK_GRACE_MS.
 */
import { spawn } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { checkTimeoutMs, type PdpClient } from './client.js';
import type { Defaults } from './context.js';
import { createRelay } from './relay.js';

export interface ProxyOptions {
  pdp: PdpClient;
  /** The server name the PDP sees (`Action::"<server>/<tool>"`). */
  server: string;
  defaults?: Defaults;
  /** Per-call limit on the child's answer (default 60 000 ms). */
  callTimeoutMs?: number;
  command: string;
  args: string[];
  input?: Readable;
  output?: Writable;
  log?: (line: string) => void;
  /** Forward SIGTERM/SIGINT/SIGHUP to the child (the CLI does). */
  forwardSignals?: boolean;
}

/** Splits a byte stream into lines (without the trailing `\n`); `flush` returns the unterminated rest. */
export class Lines {
  #buf: Buffer = Buffer.alloc(0);
  push(chunk: Buffer, emit: (line: Buffer) => void): void {
    this.#buf = this.#buf.length ? Buffer.concat([this.#buf, chunk]) : chunk;
    let start = 0;
    for (;;) {
      const nl = this.#buf.indexOf(0x0a, start);
      if (nl < 0) break;
      emit(this.#buf.subarray(start, nl));
      start = nl + 1;
    }
    this.#buf = start === this.#buf.length ? Buffer.alloc(0) : this.#buf.subarray(start);
  }
  flush(): Buffer {
    const rest = this.#buf;
    this.#buf = Buffer.alloc(0);
    return rest;
  }
}

/** How long the child's stdout is read after its exit when a process it started keeps the pipe open. */
const EXIT_GRACE_MS = 1000;
/** How long the proxy waits, at its end, for late PDP answers to calls it already answered. */
const LATE_WORK_GRACE_MS = 10_000;

export async function runProxy(opts: ProxyOptions): Promise<number> {
  const input = opts.input ?? process.stdin;
  const output = opts.output ?? process.stdout;
  const log = opts.log ?? ((l: string) => void process.stderr.write(l.endsWith('\n') ? l : `${l}\n`));
  const callTimeoutMs = checkTimeoutMs(opts.callTimeoutMs ?? 60_000, 'runProxy: callTimeoutMs');
  /** The child's pipes are closed: every answer it gave has been read. */
  let childGone = false;

  const child = spawn(opts.command, opts.args, { stdio: ['pipe', 'pipe', 'inherit'] });
  child.stdin.on('error', (e) => log(`writ proxy: writing to the server failed: ${e.message}`));
  output.on('error', () => {
    /* the client went away; the child's exit ends the proxy */
  });
  const relay = createRelay(
    { pdp: opts.pdp, server: opts.server, callTimeoutMs, log, name: 'writ proxy', ...(opts.defaults ? { defaults: opts.defaults } : {}) },
    {
      toServer: (data) => {
        if (childGone || relay.exitStatus !== undefined || !child.stdin.writable) return;
        child.stdin.write(data);
        child.stdin.write('\n');
      },
      toClient: (data) => {
        output.write(`${data}\n`);
      },
    },
  );

  function fromClient(line: Buffer): void {
    let text = line.toString('utf8');
    // A CR is whitespace to JSON but a line end to some children (Python's universal newlines): the
    // line goes on without it, so the child sees one message where the proxy judged one.
    const hadCr = text.includes('\r');
    if (hadCr) text = text.replace(/\r/g, '');
    relay.fromClient(text, hadCr ? undefined : line);
  }

  function fromChild(line: Buffer): void {
    if (relay.fromServer(line.toString('utf8'))) return;
    output.write(line);
    output.write('\n');
  }

  const clientLines = new Lines();
  const childLines = new Lines();
  const onInput = (chunk: Buffer): void => clientLines.push(chunk, fromClient);
  input.on('data', onInput);
  const inputEnded = new Promise<void>((res) => input.once('end', res));
  void inputEnded.then(async () => {
    const rest = clientLines.flush();
    if (rest.length) fromClient(rest);
    // Let held calls reach the child before its stdin closes.
    await relay.drain();
    if (!childGone) child.stdin.end();
  });
  child.stdout.on('data', (chunk: Buffer) => childLines.push(chunk, fromChild));

  const signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];
  const forward = (sig: NodeJS.Signals): void => {
    child.kill(sig);
  };
  if (opts.forwardSignals) for (const s of signals) process.on(s, forward);

  const statusOf = (code: number | null, signal: NodeJS.Signals | null): number => code ?? 128 + (signal ? (osConstants.signals[signal] ?? 0) : 0);
  let graceTimer: NodeJS.Timeout | undefined;
  const status = await new Promise<number>((resolve) => {
    const done = (status: number): void => {
      if (childGone) return;
      clearTimeout(graceTimer);
      const rest = childLines.flush();
      if (rest.length) fromChild(rest);
      relay.serverExited(status);
      childGone = true;
      resolve(status);
    };
    child.once('error', (e) => {
      log(`writ proxy: cannot start ${opts.command}: ${e.message}`);
      relay.serverExited(127);
      done(127);
    });
    child.once('exit', (code, signal) => {
      relay.serverExited(statusOf(code, signal));
      // Its stdout normally closes with it; a process it started may hold the pipe open for as long as
      // it lives. What the child wrote before exiting is in the pipe: read for a moment, then stop.
      graceTimer = setTimeout(() => {
        log(
          `writ proxy: the server exited (status ${relay.exitStatus}) but its stdout is still open (held by a process it started): calls in flight are answered as unknown`,
        );
        child.stdout.destroy();
        done(relay.exitStatus!);
      }, EXIT_GRACE_MS);
    });
    child.once('close', (code, signal) => done(statusOf(code, signal)));
  });
  if (opts.forwardSignals) for (const s of signals) process.off(s, forward);
  relay.serverClosed(status);
  // Calls still waiting for the PDP are answered (unknown, if allowed); calls arriving meanwhile are
  // refused SERVER_EXITED, so client input is read until everything in flight is answered.
  await relay.drain();
  input.off('data', onInput);
  // A decision still due after its call was answered PDP_UNAVAILABLE may be an allow: the execution
  // would stay `invoking` unless this proxy, the only one who knows the tool never ran, ends it.
  // Bounded, so a PDP that never answers cannot hold the exit.
  const left = await relay.settleLate(LATE_WORK_GRACE_MS);
  if (left) log(`writ proxy: exiting with ${left} late PDP answer(s) still awaited after ${LATE_WORK_GRACE_MS} ms`);
  return status;
}

export { refusalResult, forwardedCallText } from './relay.js';
