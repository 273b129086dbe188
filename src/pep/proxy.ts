/**
 * `writ proxy`: puts the PEP in front of any stdio MCP server without changing it.
 *
 * Transport: newline-delimited JSON-RPC on the child's stdin/stdout (the MCP stdio transport). The
 * child inherits the proxy's environment, working directory and stderr.
 *
 * - Client → server: every line that is not a `tools/call` request goes to the child byte for byte,
 *   in order — if the proxy can be sure the child reads it as the proxy does: a line that is not
 *   strict JSON, or repeats a member that decides what a message is, is answered with a JSON-RPC error and dropped (see
 *   clientLineProblem), and a CR is taken out of a line (a line end to some children, whitespace to
 *   JSON); blank lines are dropped. A `tools/call` request is held: PDP `execute`; on allow it
 *   is forwarded with `params.arguments` replaced by the PDP's admitted arguments and its id replaced
 *   by a proxy-private id (so a duplicate or late answer can never be mistaken for another request's);
 *   anything else is answered by the proxy with a refusal result and never reaches the child.
 *   Calls are decided concurrently and each goes to the child when its own decision arrives, so other
 *   messages (a `ping`) may reach the child before a call the PDP is still deciding; they keep their
 *   order among themselves. A `tools/call` *notification* (no id) would run unguarded and unanswered:
 *   it is dropped and logged. A JSON-RPC batch holding a `tools/call` is split into single messages,
 *   each the element's own bytes (so a call's arguments are admitted from the client's text).
 *   `notifications/cancelled` for an intercepted call is re-addressed to the private id; one sent
 *   while the PDP is still deciding means the call is never dispatched (an allow then ends its
 *   execution `rejected`, not invoked) and the child, which never saw the call, does not hear of it.
 * - Server → client: every line passes through byte for byte, except answers to intercepted calls:
 *   the first answer per private id counts (duplicates are dropped and logged); a result is passed on
 *   (raw `result` text, with the client's id) after the outcome is posted — `committed`, or `rejected`
 *   when `isError`; a JSON-RPC error, a malformed answer (no result object, a non-boolean `isError`),
 *   the child's exit or `callTimeoutMs` → outcome `unknown` and the client gets an `OUTCOME_UNKNOWN`
 *   refusal. A late answer is logged and posted to the PDP as a second
 *   outcome (refused and ledgered there), never delivered.
 * - When the child exits, calls in flight are answered as unknown, and `runProxy` resolves with the
 *   child's exit status (128 + signal number when it was killed by a signal) — once its stdout has
 *   closed, or EXIT_GRACE_MS after its exit when a process it started still holds the pipe open (what
 *   the child wrote before exiting is read first). "In flight" includes a
 *   call still waiting for the PDP's decision when the child exits: the PDP allows it (the execution
 *   is now `invoking`), the proxy cannot dispatch it, and posts outcome `unknown` ("the server exited
 *   … before the call was dispatched") — not `rejected`, which would claim the tool reported a
 *   refusal — and the client gets an `OUTCOME_UNKNOWN` refusal, like any other call the exit cut off.
 *   (The tool did not in fact run; a reconciler can resolve the execution `absent` from that detail.)
 * - A `tools/call` that arrives once the child is known to have exited (its `exit` event, which may
 *   come well before its pipes close, or a failed spawn) and before the proxy itself is done is
 *   refused *before* the PDP is asked, with code `SERVER_EXITED`: the tool cannot run, and asking the
 *   PDP first would reserve the execution id (`invoking`) only to report an outcome nobody could
 *   know. Refused there, nothing is recorded, and the client may retry the same execution id once a
 *   server runs again. Client input is read until every call in flight is answered, so such a call
 *   is always answered; other messages to the dead child are dropped.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants as osConstants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { checkTimeoutMs, type PdpClient } from './client.js';
import { isObject, type Defaults } from './context.js';
import { filterToolList, malformedToolResult, metaForTool, runGuardedCall, refusalResult, type DispatchResult } from './core.js';
import { createdTaskOf, followTask, taskViewOf, type CreatedTask } from './task.js';
import { protocolEnvelopeMeta, resultForRevision } from './revision.js';
import { rawElements, rawMember } from '../util/rawjson.js';
import { META_EXECUTION_ID } from './types.js';

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

interface Pending {
  childId: string;
  clientId: unknown;
  resolve: (r: DispatchResult) => void;
  answered: boolean;
}

/** Splits a byte stream into lines (without the trailing `\n`); `flush` returns the unterminated rest. */
class Lines {
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

const NEWLINE = Buffer.from('\n');
/** How long the child's stdout is read after its exit when a process it started keeps the pipe open. */
const EXIT_GRACE_MS = 1000;
/** How long the proxy waits, at its end, for late PDP answers to calls it already answered. */
const LATE_WORK_GRACE_MS = 10_000;

function parseLine(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The members that decide what a JSON-RPC message is: a repeat of one may be read either way. */
const ENVELOPE_MEMBERS = ['jsonrpc', 'id', 'method', 'params'];

/**
 * Why a client line cannot go to the child as it is, or undefined. The proxy judges a line by its own
 * parse; a child whose parser reads it differently could run a `tools/call` the proxy never saw. So a
 * line must be JSON by the strict grammar (a child's parser may take `NaN` or a comment, and find a
 * call in it) and no message in it may repeat `jsonrpc`, `id`, `method` or `params` (a child may keep
 * the first `method` where the proxy keeps the last). Repeats deeper in a `tools/call` are judged as
 * before: in `params` by the proxy, in the arguments by the PDP (BINDING_DUPLICATE_KEY).
 */
function clientLineProblem(text: string, msg: unknown): { code: number; message: string } | undefined {
  if (msg === undefined) return { code: -32700, message: 'Parse error: the line is not JSON' };
  const messages = Array.isArray(msg) ? rawElements(text) : [text];
  for (const m of messages) {
    const repeated = ENVELOPE_MEMBERS.find((k) => {
      const member = rawMember(m, [k]);
      return !member.found && member.duplicate;
    });
    if (repeated !== undefined) return { code: -32600, message: `Invalid Request: the member "${repeated}" is repeated` };
  }
  return undefined;
}

export async function runProxy(opts: ProxyOptions): Promise<number> {
  const input = opts.input ?? process.stdin;
  const output = opts.output ?? process.stdout;
  const log = opts.log ?? ((l: string) => void process.stderr.write(l.endsWith('\n') ? l : l + '\n'));
  const callTimeoutMs = checkTimeoutMs(opts.callTimeoutMs ?? 60_000, 'runProxy: callTimeoutMs');
  const prefix = `writ-${randomBytes(6).toString('hex')}:`;
  let seq = 0;
  const pending = new Map<string, Pending>();
  const byClientId = new Map<string, Pending>();
  const inFlight = new Set<Promise<void>>();
  /** Aborted when the client cancels a held call not yet dispatched (by client id): it will not be. */
  const cancelsBeforeDispatch = new Map<string, AbortController>();
  /** Client ids of tools/call requests the proxy holds: only the proxy may answer them. */
  const held = new Map<string, number>();
  /** The child's pipes are closed: every answer it gave has been read. */
  let childGone = false;
  /** The child is known to be gone (`exit` or a failed spawn), with its status: nothing more is sent to it. */
  let exited: { status: number } | undefined;

  const child = spawn(opts.command, opts.args, { stdio: ['pipe', 'pipe', 'inherit'] });
  child.stdin.on('error', (e) => log(`writ proxy: writing to the server failed: ${e.message}`));
  output.on('error', () => {
    /* the client went away; the child's exit ends the proxy */
  });

  const toChild = (data: Buffer | string): void => {
    if (!childGone && !exited && child.stdin.writable) child.stdin.write(data);
  };
  const toClient = (data: Buffer | string): void => {
    output.write(data);
  };

  /** What answered calls leave behind (a late allow to end as `rejected`, a late tool answer to post). */
  const lateWork = new Set<Promise<unknown>>();
  const trackLate = (work: Promise<unknown>): void => {
    const q: Promise<unknown> = work.catch(() => undefined).finally(() => lateWork.delete(q));
    lateWork.add(q);
  };
  const pipeline = { pdp: opts.pdp, server: opts.server, callTimeoutMs, log, trackLate, ...(opts.defaults ? { defaults: opts.defaults } : {}) };

  function respond(idRaw: string, body: string): void {
    toClient(`{"jsonrpc":"2.0","id":${idRaw},${body}}\n`);
  }

  /** Answers a held call with a result the proxy wrote itself, valid in the call's protocol revision. */
  function respondResult(idRaw: string, params: unknown, result: Record<string, unknown>): void {
    respond(idRaw, `"result":${JSON.stringify(resultForRevision(result, params))}`);
  }

  /** Held `tools/list` requests, by the private id the child saw: the client's id text and the request's params. */
  const lists = new Map<string, { clientIdRaw: string; params: unknown }>();

  /** Sends the client's `tools/list` on under a private id; its answer is filtered (docs/protocol.md §15). */
  function holdList(msg: Record<string, unknown>, text: string): void {
    const idMember = rawMember(text, ['id']);
    const childId = `${prefix}list-${++seq}`;
    lists.set(childId, { clientIdRaw: idMember.found ? idMember.raw : JSON.stringify(msg.id), params: msg.params });
    toChild((idMember.found ? text.slice(0, idMember.span[0]) + JSON.stringify(childId) + text.slice(idMember.span[1]) : JSON.stringify({ ...msg, id: childId })) + '\n');
  }

  /**
   * Answers a held `tools/list`: the server's own line with only the id given back, unless the filter
   * hid tools — then the result is written anew, every other member of it as the server sent it.
   */
  async function answerList(held: { clientIdRaw: string; params: unknown }, msg: Record<string, unknown>, text: string): Promise<void> {
    const params = isObject(held.params) ? held.params : {};
    const filtered = 'result' in msg ? await filterToolList(pipeline, params._meta, msg.result) : undefined;
    const id = rawMember(text, ['id']);
    if ((filtered === undefined || filtered === msg.result) && id.found) {
      toClient(text.slice(0, id.span[0]) + held.clientIdRaw + text.slice(id.span[1]) + '\n');
      return;
    }
    respond(held.clientIdRaw, filtered === undefined ? `"error":${JSON.stringify(msg.error ?? null)}` : `"result":${JSON.stringify(filtered)}`);
  }

  /** Requests the proxy itself sends the child (a task's `tasks/get`), by private id. */
  const ownRequests = new Map<string, (answer: Record<string, unknown>) => void>();
  /** Resolves when the child is gone: a task still followed then ends `unknown`. */
  let childStopped!: (why: string) => void;
  const childStoppedP = new Promise<string>((res) => (childStopped = res));

  /** Sends the child a request of the proxy's own; answers `{result}` or `{error}` (also when the child is gone). */
  function requestChild(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    if (childGone || exited) return Promise.resolve({ error: { code: -32000, message: 'the server has exited' } });
    const id = `${prefix}own-${++seq}`;
    return new Promise((resolve) => {
      ownRequests.set(id, resolve);
      toChild(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
    });
  }

  /** Follows a task the child answered a call with, by the proxy's own `tasks/get` (and `tasks/result`). */
  function followChildTask(task: CreatedTask, callParams: Record<string, unknown>): Promise<DispatchResult> {
    // On 2026-07-28 every request carries the client's per-request envelope (protocol version, client
    // info and capabilities): the proxy's own requests carry the call's.
    const envelopeMeta = protocolEnvelopeMeta(callParams);
    const withMeta = (p: Record<string, unknown>) => (envelopeMeta ? { ...p, _meta: envelopeMeta } : p);
    return followTask(task, {
      get: async () => {
        const a = await requestChild('tasks/get', withMeta({ taskId: task.taskId }));
        if ('error' in a) {
          if (childGone || exited) throw new Error('the server exited');
          return 'gone';
        }
        return taskViewOf(a.result) ?? 'gone';
      },
      result: async () => {
        const a = await requestChild('tasks/result', withMeta({ taskId: task.taskId }));
        if ('error' in a) throw new Error(`tasks/result answered an error: ${JSON.stringify(a.error)}`);
        return a.result;
      },
      stopped: childStoppedP,
    });
  }

  async function handleCall(msg: Record<string, unknown>, text: string): Promise<void> {
    const idMember = rawMember(text, ['id']);
    const idRaw = { raw: idMember.found ? idMember.raw : JSON.stringify(msg.id) };
    const params = msg.params;
    const dupParams = ['params', 'name', 'arguments', '_meta'].some((k, i) => {
      const path = i === 0 ? ['params'] : ['params', k];
      const m = rawMember(text, path);
      return !m.found && m.duplicate;
    });
    if (dupParams || !isObject(params) || typeof params.name !== 'string') {
      // Refused before the PDP is asked (a repeated member could be read two ways; without a tool name
      // there is nothing to decide), as a tool result like every other refusal (docs/protocol.md §7).
      const why = dupParams ? 'repeats a member (params, name, arguments or _meta)' : !isObject(params) ? 'has no params object' : 'has no tool name';
      const m = !dupParams && isObject(params) && isObject(params._meta) ? params._meta : {};
      const exec = typeof m[META_EXECUTION_ID] === 'string' ? (m[META_EXECUTION_ID] as string) : null;
      respondResult(idRaw.raw, dupParams ? undefined : params, refusalResult(
        { code: 'INVALID_REQUEST', reasons: [], obligations: [], execution_id: exec },
        `writ: refused (INVALID_REQUEST): the tools/call ${why}; the policy decision point was not asked and the tool did not run`,
      ));
      return;
    }
    if (exited) {
      // Refused before the PDP is asked (see the header): the tool cannot run, nothing is reserved.
      const m = isObject(params._meta) ? params._meta : {};
      const exec = typeof m[META_EXECUTION_ID] === 'string' ? (m[META_EXECUTION_ID] as string) : null;
      const text =
        `writ: the MCP server has exited (status ${exited.status}), so the tool did not run and the policy decision point ` +
        `was not asked${exec !== null ? `; execution ${exec} was not used and may be retried once a server runs again` : ''}`;
      respondResult(idRaw.raw, params, refusalResult({ code: 'SERVER_EXITED', reasons: [], obligations: [], execution_id: exec }, text));
      return;
    }
    const entry: Pending = { childId: '', clientId: msg.id, resolve: () => undefined, answered: false };
    const clientKey = JSON.stringify(msg.id);
    held.set(clientKey, (held.get(clientKey) ?? 0) + 1);
    let cancel = cancelsBeforeDispatch.get(clientKey);
    if (!cancel) cancelsBeforeDispatch.set(clientKey, (cancel = new AbortController()));
    try {
      await guardedCall(entry, clientKey, params, idRaw.raw, msg, text, cancel.signal);
    } finally {
      const n = (held.get(clientKey) ?? 1) - 1;
      if (n > 0) held.set(clientKey, n);
      else {
        held.delete(clientKey);
        cancelsBeforeDispatch.delete(clientKey);
      }
    }
  }

  async function guardedCall(
    entry: Pending, clientKey: string, params: Record<string, unknown>, idRawText: string, msg: Record<string, unknown>, text: string,
    cancelled: AbortSignal,
  ): Promise<void> {
    const idRaw = { raw: idRawText };
    const rawArgs = rawMember(text, ['params', 'arguments']);
    const tool = params.name as string;
    const answer = await runGuardedCall(
      pipeline,
      {
        tool,
        arguments: params.arguments ?? {},
        rawArguments: rawArgs.found ? rawArgs.raw : '{}',
        meta: params._meta,
        cancelled,
      },
      (admitted, signal, execution) =>
        new Promise<DispatchResult>((resolve) => {
          if (childGone || exited) {
            // Allowed while the child was exiting: the execution is `invoking` at the PDP and only an
            // outcome ends it. Not `rejected` (the tool reported nothing): unknown, with the reason.
            resolve({ status: 'unknown', detail: `the server exited (status ${exited?.status ?? 'unknown'}) before the call was dispatched` });
            return;
          }
          entry.childId = prefix + ++seq;
          // A task handle goes to the client now; the task is followed until it ends (task.ts).
          entry.resolve = (r) => resolve(r.task === undefined && r.status !== 'unknown' && createdTaskOf(r.result) ? { ...r, task: followChildTask(createdTaskOf(r.result)!, params) } : r);
          pending.set(entry.childId, entry);
          byClientId.set(clientKey, entry);
          toChild(forwardedCallText(text, msg, entry.childId, admitted, execution.execution_id) + '\n');
          signal.addEventListener('abort', () => {
            if (entry.answered) return;
            toChild(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: entry.childId, reason: 'writ proxy: call timeout' } }) + '\n');
          });
        }),
    );
    if (byClientId.get(clientKey) === entry) byClientId.delete(clientKey);
    if ('error' in answer) {
      const message = (answer.error as Error)?.message ?? String(answer.error);
      respond(idRaw.raw, `"error":{"code":-32603,"message":${JSON.stringify('writ proxy: ' + message)}}`);
      return;
    }
    if (answer.raw !== undefined) respond(idRaw.raw, `"result":${answer.raw}`);
    else respondResult(idRaw.raw, params, answer.result);
  }

  function track(p: Promise<void>): void {
    const q = p.catch((e) => log(`writ proxy: internal error: ${(e as Error)?.stack ?? String(e)}`)).finally(() => inFlight.delete(q));
    inFlight.add(q);
  }

  /** `raw`: the message's own bytes when it is a whole line (passed on byte for byte, even if not UTF-8). */
  function fromClientMessage(msg: unknown, text: string, raw?: Buffer): void {
    if (isObject(msg) && msg.method === 'tools/call') {
      if (!('id' in msg)) {
        log('writ proxy: dropped a tools/call sent as a notification (no id: it could be neither guarded nor answered)');
        return;
      }
      if (msg.id === null || (typeof msg.id !== 'string' && typeof msg.id !== 'number')) {
        // JSON-RPC 2.0 §5: a request whose id is not a string or number is an Invalid Request, answered
        // with id null; it reaches neither the PDP nor the server.
        log('writ proxy: refused a tools/call whose id is not a string or number');
        respond('null', '"error":{"code":-32600,"message":"Invalid Request: a tools/call id must be a string or a number"}');
        return;
      }
      track(handleCall(msg, text));
      return;
    }
    if (isObject(msg) && msg.method === 'tools/list' && (typeof msg.id === 'string' || typeof msg.id === 'number') && !exited && !childGone) {
      holdList(msg, text);
      return;
    }
    if (isObject(msg) && msg.method === 'notifications/cancelled' && isObject(msg.params) && 'requestId' in msg.params) {
      const clientKey = JSON.stringify(msg.params.requestId);
      const entry = byClientId.get(clientKey);
      if (entry) {
        if (entry.childId && !entry.answered) {
          toChild(JSON.stringify({ ...msg, params: { ...msg.params, requestId: entry.childId } }) + '\n');
        }
        return;
      }
      if (held.has(clientKey)) {
        // The call is still with the PDP: it will not be dispatched (core.ts ends its execution `rejected`,
        // not invoked, if the PDP allows it), and the child, which never saw it, does not hear of it.
        cancelsBeforeDispatch.get(clientKey)?.abort();
        return;
      }
    }
    if (raw) {
      toChild(raw);
      toChild(NEWLINE);
    } else {
      toChild(text + '\n');
    }
  }

  function fromClient(line: Buffer): void {
    let text = line.toString('utf8');
    // A CR is whitespace to JSON but a line end to some children (Python's universal newlines): the
    // line goes on without it, so the child sees one message where the proxy judged one.
    const hadCr = text.includes('\r');
    if (hadCr) text = text.replace(/\r/g, '');
    if (text.trim() === '') return;
    const msg = parseLine(text);
    const problem = clientLineProblem(text, msg);
    if (problem) {
      log(`writ proxy: refused a client line the server might read differently (${problem.message})`);
      respond('null', `"error":${JSON.stringify(problem)}`);
      return;
    }
    if (Array.isArray(msg) && msg.some((m) => isObject(m) && (m.method === 'tools/call' || m.method === 'tools/list'))) {
      const raws = rawElements(text);
      msg.forEach((m, i) => fromClientMessage(m, raws[i]!));
      return;
    }
    fromClientMessage(msg, text, hadCr ? undefined : line);
  }

  function fromChild(line: Buffer): void {
    const text = line.toString('utf8');
    const msg = parseLine(text);
    if (isObject(msg) && typeof msg.id === 'string' && msg.id.startsWith(prefix) && !('method' in msg)) {
      const list = lists.get(msg.id);
      if (list) {
        lists.delete(msg.id);
        track(answerList(list, msg, text));
        return;
      }
      const own = ownRequests.get(msg.id);
      if (own) {
        ownRequests.delete(msg.id);
        own('result' in msg && isObject(msg.result) ? { result: msg.result } : { error: msg.error ?? { code: -32603, message: 'no result' } });
        return;
      }
      const entry = pending.get(msg.id);
      if (!entry || entry.answered) {
        log(`writ proxy: dropped a duplicate or unexpected answer for ${msg.id}`);
        return;
      }
      entry.answered = true;
      pending.delete(msg.id);
      if ('error' in msg) {
        const err = isObject(msg.error) ? msg.error : {};
        entry.resolve({ status: 'unknown', detail: `JSON-RPC error after dispatch: ${String(err.code)} ${String(err.message)}` });
        return;
      }
      const result = msg.result;
      // A tool result is an object whose `isError`, when present, is a boolean. An answer with neither
      // `result` nor `error`, a non-object result or `isError: "yes"` says nothing certain about what
      // the tool did: the outcome is unknown (a reconciler decides), and nothing of it reaches the client.
      // So does one that repeats `result` or its `isError`: readers that keep the first of a repeated
      // member (the client's, perhaps) and the last (JSON.parse here) would see different outcomes.
      const repeated = ([['result'], ['result', 'isError']] as const).find((path) => {
        const m = rawMember(text, [...path]);
        return !m.found && m.duplicate;
      });
      const bad =
        repeated !== undefined ? `a repeated ${repeated.join('.')} member`
        : 'result' in msg ? (createdTaskOf(result) ? undefined : malformedToolResult(result))
        : 'neither result nor error';
      if (bad !== undefined) {
        log(`writ proxy: malformed answer from the server for ${msg.id}: ${bad}; outcome unknown`);
        entry.resolve({ status: 'unknown', detail: `malformed answer after dispatch: ${bad}` });
        return;
      }
      const raw = rawMember(text, ['result']);
      if (createdTaskOf(result)) {
        // The tool answered with a task: its handle is passed on; guardedCall follows the task.
        const t: DispatchResult = { status: 'committed', result };
        if (raw.found) t.raw = raw.raw;
        entry.resolve(t);
        return;
      }
      const r: DispatchResult = { status: (result as Record<string, unknown>).isError === true ? 'rejected' : 'committed', result };
      if (raw.found) r.raw = raw.raw;
      entry.resolve(r);
      return;
    }
    if (isObject(msg) && 'id' in msg && !('method' in msg) && held.has(JSON.stringify(msg.id))) {
      log(`writ proxy: dropped an answer from the server for the held tools/call ${JSON.stringify(msg.id)} (only the proxy answers it)`);
      return;
    }
    toClient(line);
    toClient('\n');
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
    while (inFlight.size) await Promise.allSettled([...inFlight]);
    if (!childGone) child.stdin.end();
  });
  child.stdout.on('data', (chunk: Buffer) => childLines.push(chunk, fromChild));

  const signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];
  const forward = (sig: NodeJS.Signals): void => {
    child.kill(sig);
  };
  if (opts.forwardSignals) for (const s of signals) process.on(s, forward);

  const statusOf = (code: number | null, signal: NodeJS.Signals | null): number =>
    code ?? 128 + (signal ? (osConstants.signals[signal] ?? 0) : 0);
  let graceTimer: NodeJS.Timeout | undefined;
  const status = await new Promise<number>((resolve) => {
    const done = (status: number): void => {
      if (childGone) return;
      clearTimeout(graceTimer);
      const rest = childLines.flush();
      if (rest.length) fromChild(rest);
      exited ??= { status };
      childGone = true;
      resolve(status);
    };
    child.once('error', (e) => {
      log(`writ proxy: cannot start ${opts.command}: ${e.message}`);
      exited ??= { status: 127 };
      done(127);
    });
    child.once('exit', (code, signal) => {
      exited ??= { status: statusOf(code, signal) };
      // Its stdout normally closes with it; a process it started may hold the pipe open for as long as
      // it lives. What the child wrote before exiting is in the pipe: read for a moment, then stop.
      graceTimer = setTimeout(() => {
        log(`writ proxy: the server exited (status ${exited!.status}) but its stdout is still open (held by a process it started): calls in flight are answered as unknown`);
        child.stdout.destroy();
        done(exited!.status);
      }, EXIT_GRACE_MS);
    });
    child.once('close', (code, signal) => done(statusOf(code, signal)));
  });
  if (opts.forwardSignals) for (const s of signals) process.off(s, forward);
  childStopped(`the server exited (status ${status})`);
  for (const [id, own] of ownRequests) {
    ownRequests.delete(id);
    own({ error: { code: -32000, message: 'the server exited' } });
  }
  for (const entry of pending.values()) {
    if (!entry.answered) {
      entry.answered = true;
      entry.resolve({ status: 'unknown', detail: `the server exited (status ${status}) before answering` });
    }
  }
  // Calls still waiting for the PDP are answered (unknown, if allowed); calls arriving meanwhile are
  // refused SERVER_EXITED, so client input is read until everything in flight is answered.
  while (inFlight.size) await Promise.allSettled([...inFlight]);
  input.off('data', onInput);
  // A decision still due after its call was answered PDP_UNAVAILABLE may be an allow: the execution
  // would stay `invoking` unless this proxy, the only one who knows the tool never ran, ends it.
  // Bounded, so a PDP that never answers cannot hold the exit.
  const lateDeadline = Date.now() + LATE_WORK_GRACE_MS;
  while (lateWork.size && Date.now() < lateDeadline) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...lateWork]), new Promise((res) => (timer = setTimeout(res, lateDeadline - Date.now())))]);
    clearTimeout(timer);
  }
  if (lateWork.size) log(`writ proxy: exiting with ${lateWork.size} late PDP answer(s) still awaited after ${LATE_WORK_GRACE_MS} ms`);
  return status;
}

export { refusalResult };

/**
 * The client's `tools/call` as the child gets it: the client's own text with only its `id` (the proxy's
 * private one), `params.arguments` (the PDP's admitted arguments) and `params._meta["io.writ/execution_id"]`
 * (the execution's id, the tool's idempotency key — also when the proxy minted it) replaced or added.
 * Every other member — a `_meta.progressToken` above 2^53, a `1.0` — reaches the server exactly as
 * sent, where a re-serialised message would have turned 12345678901234567890 into
 * 12345678901234567000 (and the server's progress notifications would then name a token the client
 * never sent).
 */
export function forwardedCallText(text: string, msg: Record<string, unknown>, childId: string, admitted: Record<string, unknown>, executionId: string): string {
  const id = rawMember(text, ['id']);
  const params = rawMember(text, ['params']);
  const args = rawMember(text, ['params', 'arguments']);
  const meta = rawMember(text, ['params', '_meta']);
  const metaIsObject = isObject((msg.params as Record<string, unknown>)._meta);
  const execMember = metaIsObject ? rawMember(text, ['params', '_meta', META_EXECUTION_ID]) : { found: false as const, duplicate: false };
  const rebuilt = (): string => {
    const p = msg.params as Record<string, unknown>;
    return JSON.stringify({ ...msg, id: childId, params: { ...p, arguments: admitted, _meta: metaForTool(p._meta, executionId) } });
  };
  // handleCall has checked that none of these repeats; a message whose text did not show them, or
  // whose `_meta` is not an object, is rebuilt from its parsed form.
  if (!id.found || !params.found || (!args.found && args.duplicate) || (!meta.found && meta.duplicate) || (!execMember.found && execMember.duplicate)) return rebuilt();
  if (meta.found && !metaIsObject) return rebuilt();
  const admittedText = JSON.stringify(admitted);
  const execText = JSON.stringify(executionId);
  const edits: Array<[number, number, string]> = [[id.span[0], id.span[1], JSON.stringify(childId)]];
  // params holds at least `name`, so an inserted first member is followed by a comma.
  if (args.found) edits.push([args.span[0], args.span[1], admittedText]);
  else edits.push([params.span[0] + 1, params.span[0] + 1, `"arguments":${admittedText},`]);
  if (execMember.found) edits.push([execMember.span[0], execMember.span[1], execText]);
  else if (meta.found) {
    const empty = /^\{\s*\}$/.test(meta.raw);
    edits.push(empty ? [meta.span[0], meta.span[1], `{${JSON.stringify(META_EXECUTION_ID)}:${execText}}`] : [meta.span[0] + 1, meta.span[0] + 1, `${JSON.stringify(META_EXECUTION_ID)}:${execText},`]);
  } else edits.push([params.span[0] + 1, params.span[0] + 1, `"_meta":{${JSON.stringify(META_EXECUTION_ID)}:${execText}},`]);
  edits.sort((x, y) => y[0] - x[0]);
  let out = text;
  for (const [start, end, value] of edits) out = out.slice(0, start) + value + out.slice(end);
  return out;
}
