/**
 * The PEP relay: everything a PEP does to the messages between an MCP client and an MCP server, whatever
 * carries them — `writ proxy` (stdio lines, proxy.ts) and `writ gateway` (Streamable HTTP) put their
 * transport around it. The rules (docs/protocol.md §7, §14, §15):
 *
 * - Client → server: every message that is not a `tools/call` or `tools/list` request goes on as it
 *   came — when the relay can be sure the server reads it as the relay does: a message that is not
 *   strict JSON, or repeats a member that decides what a message is, is answered with a JSON-RPC error
 *   and dropped (clientLineProblem). A `tools/call` request is held: PDP `execute`; on allow it goes on
 *   with `params.arguments` replaced by the PDP's admitted arguments, `params._meta["io.writ/execution_id"]`
 *   set, and its id replaced by a private one (so a duplicate or late answer can never be mistaken for
 *   another request's); anything else is answered by the relay with a refusal result and never reaches
 *   the server. Calls are decided concurrently and each goes on when its own decision arrives, so other
 *   messages may overtake a call the PDP is still deciding; they keep their order among themselves. A
 *   `tools/call` *notification* (no id) would run unguarded and unanswered: it is dropped and logged. A
 *   batch holding a `tools/call` or `tools/list` is split into single messages, each the element's own
 *   text. `notifications/cancelled` for a held call is re-addressed to the private id; one sent while
 *   the PDP is still deciding means the call is never dispatched (an allow then ends its execution
 *   `rejected`, not invoked) and the server, which never saw the call, does not hear of it. A
 *   `tools/list` goes on under a private id and its answer is filtered (§15).
 * - Server → client: every message passes on as it came, except answers to held calls: the first
 *   answer per private id counts (duplicates are dropped and logged); a result is passed on (raw
 *   `result` text, with the client's id) after the outcome is posted — `committed`, or `rejected` when
 *   `isError`; a JSON-RPC error, a malformed answer, the server's exit or `callTimeoutMs` → outcome
 *   `unknown` and the client gets an `OUTCOME_UNKNOWN` refusal. A task handle is passed on and the task
 *   followed to its end by the relay's own `tasks/get` (task.ts). A late answer is logged and posted to
 *   the PDP as a second outcome (refused and ledgered there), never delivered.
 * - When the server is gone (`serverExited`, then `serverClosed` once its output has been read), calls
 *   in flight are answered as unknown, including one still waiting for the PDP: if the PDP allows it,
 *   it is not dispatched and its outcome is `unknown` ("the server exited … before the call was
 *   dispatched"). A `tools/call` that arrives once the server is known gone is refused before the PDP is
 *   asked, with code `SERVER_EXITED`: nothing is reserved, and the id may be retried.
 */
import { randomBytes } from 'node:crypto';
import type { PdpClient } from './client.js';
import { isObject, type Defaults } from './context.js';
import { filterToolList, malformedToolResult, metaForTool, runGuardedCall, refusalResult, type DispatchResult } from './core.js';
import { createdTaskOf, followTask, taskViewOf, type CreatedTask } from './task.js';
import { protocolEnvelopeMeta, resultForRevision } from './revision.js';
import { rawElements, rawMember } from '../util/rawjson.js';
import { META_EXECUTION_ID } from './types.js';

export interface RelayOptions {
  pdp: PdpClient;
  /** The server name the PDP sees (`Action::"<server>/<tool>"`). */
  server: string;
  defaults?: Defaults;
  /** Per-call limit on the server's answer. */
  callTimeoutMs: number;
  log: (line: string) => void;
  /** How the relay names itself in log lines and error messages (`writ proxy`, `writ gateway`). */
  name: string;
  /** A delegated PEP's client token (writ gateway), sent to the PDP as `identity_token` (docs/protocol.md §13). */
  identityToken?: () => string | undefined;
}

/** Where the relay's messages go: one JSON-RPC message's text each; the transport frames them. */
export interface RelayPorts {
  toServer(data: string | Buffer): void;
  toClient(data: string): void;
}

export interface Relay {
  /** A client message (or batch) as its text; `raw` its own bytes when it is exactly that text. */
  fromClient(text: string, raw?: Buffer): void;
  /** A server message's text; false when it is not the relay's own (pass it to the client as it is). */
  fromServer(text: string): boolean;
  /** The server is known gone (its process exited): nothing more is sent to it. */
  serverExited(status: number): void;
  /** The server's output has ended: what is still unanswered will never be. */
  serverClosed(status: number): void;
  /** The server's status once known gone. */
  readonly exitStatus: number | undefined;
  /** Resolves when every held call has been answered. */
  drain(): Promise<void>;
  /** Waits up to `ms` for work left behind by answered calls; resolves with how much is still left. */
  settleLate(ms: number): Promise<number>;
}

interface Pending {
  childId: string;
  clientId: unknown;
  resolve: (r: DispatchResult) => void;
  answered: boolean;
}

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

export function createRelay(opts: RelayOptions, ports: RelayPorts): Relay {
  const { log, name, callTimeoutMs } = opts;
  const prefix = `writ-${randomBytes(6).toString('hex')}:`;
  let seq = 0;
  const pending = new Map<string, Pending>();
  const byClientId = new Map<string, Pending>();
  const inFlight = new Set<Promise<void>>();
  /** Aborted when the client cancels a held call not yet dispatched (by client id): it will not be. */
  const cancelsBeforeDispatch = new Map<string, AbortController>();
  /** Client ids of tools/call requests the proxy holds: only the proxy may answer them. */
  const held = new Map<string, number>();
  /** The server's output has ended: every answer it gave has been read. */
  let closed = false;
  /** The server is known to be gone (its process exited, its connection failed), with its status: nothing more is sent to it. */
  let exited: { status: number } | undefined;
  const serverDown = (): boolean => closed || exited !== undefined;

  /** What answered calls leave behind (a late allow to end as `rejected`, a late tool answer to post). */
  const lateWork = new Set<Promise<unknown>>();
  const trackLate = (work: Promise<unknown>): void => {
    const q: Promise<unknown> = work.catch(() => undefined).finally(() => lateWork.delete(q));
    lateWork.add(q);
  };
  const pipeline = {
    pdp: opts.pdp,
    server: opts.server,
    callTimeoutMs,
    log,
    trackLate,
    ...(opts.defaults ? { defaults: opts.defaults } : {}),
    ...(opts.identityToken ? { identityToken: opts.identityToken } : {}),
  };

  function respond(idRaw: string, body: string): void {
    ports.toClient(`{"jsonrpc":"2.0","id":${idRaw},${body}}`);
  }

  /** Answers a held call with a result the proxy wrote itself, valid in the call's protocol revision. */
  function respondResult(idRaw: string, params: unknown, result: Record<string, unknown>): void {
    respond(idRaw, `"result":${JSON.stringify(resultForRevision(result, params))}`);
  }

  /** Held `tools/list` requests, by the private id the child saw: the client's id text and the request's params. */
  const lists = new Map<string, { clientIdRaw: string; params: unknown; identityToken?: string }>();

  /** Sends the client's `tools/list` on under a private id; its answer is filtered (docs/protocol.md §15). */
  function holdList(msg: Record<string, unknown>, text: string): void {
    const idMember = rawMember(text, ['id']);
    const childId = `${prefix}list-${++seq}`;
    const identityToken = opts.identityToken?.();
    lists.set(childId, {
      clientIdRaw: idMember.found ? idMember.raw : JSON.stringify(msg.id),
      params: msg.params,
      ...(identityToken !== undefined ? { identityToken } : {}),
    });
    ports.toServer(
      idMember.found ? text.slice(0, idMember.span[0]) + JSON.stringify(childId) + text.slice(idMember.span[1]) : JSON.stringify({ ...msg, id: childId }),
    );
  }

  /**
   * Answers a held `tools/list`: the server's own line with only the id given back, unless the filter
   * hid tools — then the result is written anew, every other member of it as the server sent it.
   */
  async function answerList(held: { clientIdRaw: string; params: unknown; identityToken?: string }, msg: Record<string, unknown>, text: string): Promise<void> {
    const params = isObject(held.params) ? held.params : {};
    const filtered = 'result' in msg ? await filterToolList(pipeline, params._meta, msg.result, held.identityToken) : undefined;
    const id = rawMember(text, ['id']);
    if ((filtered === undefined || filtered === msg.result) && id.found) {
      ports.toClient(text.slice(0, id.span[0]) + held.clientIdRaw + text.slice(id.span[1]));
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
    if (serverDown()) return Promise.resolve({ error: { code: -32000, message: 'the server has exited' } });
    const id = `${prefix}own-${++seq}`;
    return new Promise((resolve) => {
      ownRequests.set(id, resolve);
      ports.toServer(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
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
          if (serverDown()) throw new Error('the server exited');
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
      const exec = typeof m[META_EXECUTION_ID] === 'string' ? m[META_EXECUTION_ID] : null;
      respondResult(
        idRaw.raw,
        dupParams ? undefined : params,
        refusalResult(
          { code: 'INVALID_REQUEST', reasons: [], obligations: [], execution_id: exec },
          `writ: refused (INVALID_REQUEST): the tools/call ${why}; the policy decision point was not asked and the tool did not run`,
        ),
      );
      return;
    }
    if (exited) {
      // Refused before the PDP is asked (see the header): the tool cannot run, nothing is reserved.
      const m = isObject(params._meta) ? params._meta : {};
      const exec = typeof m[META_EXECUTION_ID] === 'string' ? m[META_EXECUTION_ID] : null;
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
    entry: Pending,
    clientKey: string,
    params: Record<string, unknown>,
    idRawText: string,
    msg: Record<string, unknown>,
    text: string,
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
          if (serverDown()) {
            // Allowed while the child was exiting: the execution is `invoking` at the PDP and only an
            // outcome ends it. Not `rejected` (the tool reported nothing): unknown, with the reason.
            resolve({ status: 'unknown', detail: `the server exited (status ${exited?.status ?? 'unknown'}) before the call was dispatched` });
            return;
          }
          entry.childId = prefix + ++seq;
          // A task handle goes to the client now; the task is followed until it ends (task.ts).
          entry.resolve = (r) =>
            resolve(
              r.task === undefined && r.status !== 'unknown' && createdTaskOf(r.result) ? { ...r, task: followChildTask(createdTaskOf(r.result)!, params) } : r,
            );
          pending.set(entry.childId, entry);
          byClientId.set(clientKey, entry);
          ports.toServer(forwardedCallText(text, msg, entry.childId, admitted, execution.execution_id));
          signal.addEventListener('abort', () => {
            if (entry.answered) return;
            ports.toServer(
              JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: entry.childId, reason: `${name}: call timeout` } }),
            );
          });
        }),
    );
    if (byClientId.get(clientKey) === entry) byClientId.delete(clientKey);
    if ('error' in answer) {
      const message = (answer.error as Error)?.message ?? String(answer.error);
      respond(idRaw.raw, `"error":{"code":-32603,"message":${JSON.stringify(`${name}: ${message}`)}}`);
      return;
    }
    if (answer.raw !== undefined) respond(idRaw.raw, `"result":${answer.raw}`);
    else respondResult(idRaw.raw, params, answer.result);
  }

  function track(p: Promise<void>): void {
    const q = p.catch((e) => log(`${name}: internal error: ${(e as Error)?.stack ?? String(e)}`)).finally(() => inFlight.delete(q));
    inFlight.add(q);
  }

  /** `raw`: the message's own bytes when it is a whole line (passed on byte for byte, even if not UTF-8). */
  function fromClientMessage(msg: unknown, text: string, raw?: Buffer): void {
    if (isObject(msg) && msg.method === 'tools/call') {
      if (!('id' in msg)) {
        log(`${name}: dropped a tools/call sent as a notification (no id: it could be neither guarded nor answered)`);
        return;
      }
      if (msg.id === null || (typeof msg.id !== 'string' && typeof msg.id !== 'number')) {
        // JSON-RPC 2.0 §5: a request whose id is not a string or number is an Invalid Request, answered
        // with id null; it reaches neither the PDP nor the server.
        log(`${name}: refused a tools/call whose id is not a string or number`);
        respond('null', '"error":{"code":-32600,"message":"Invalid Request: a tools/call id must be a string or a number"}');
        return;
      }
      track(handleCall(msg, text));
      return;
    }
    if (isObject(msg) && msg.method === 'tools/list' && (typeof msg.id === 'string' || typeof msg.id === 'number') && !serverDown()) {
      holdList(msg, text);
      return;
    }
    if (isObject(msg) && msg.method === 'notifications/cancelled' && isObject(msg.params) && 'requestId' in msg.params) {
      const clientKey = JSON.stringify(msg.params.requestId);
      const entry = byClientId.get(clientKey);
      if (entry) {
        if (entry.childId && !entry.answered) {
          ports.toServer(JSON.stringify({ ...msg, params: { ...msg.params, requestId: entry.childId } }));
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
    ports.toServer(raw ?? text);
  }

  /**
   * A message from the client: one JSON-RPC message or a batch, as its text (`raw`: its own bytes, passed
   * on as they are when it goes to the server unchanged, even if not UTF-8).
   */
  function fromClient(text: string, raw?: Buffer): void {
    if (text.trim() === '') return;
    const msg = parseLine(text);
    const problem = clientLineProblem(text, msg);
    if (problem) {
      log(`${name}: refused a client message the server might read differently (${problem.message})`);
      respond('null', `"error":${JSON.stringify(problem)}`);
      return;
    }
    if (Array.isArray(msg) && msg.some((m) => isObject(m) && (m.method === 'tools/call' || m.method === 'tools/list'))) {
      const raws = rawElements(text);
      for (const [i, m] of msg.entries()) fromClientMessage(m, raws[i]!);
      return;
    }
    fromClientMessage(msg, text, raw);
  }

  /** A message from the server; false when it is not the relay's own and passes to the client as it is. */
  function fromServer(text: string): boolean {
    const msg = parseLine(text);
    if (isObject(msg) && typeof msg.id === 'string' && msg.id.startsWith(prefix) && !('method' in msg)) {
      const list = lists.get(msg.id);
      if (list) {
        lists.delete(msg.id);
        track(answerList(list, msg, text));
        return true;
      }
      const own = ownRequests.get(msg.id);
      if (own) {
        ownRequests.delete(msg.id);
        own('result' in msg && isObject(msg.result) ? { result: msg.result } : { error: msg.error ?? { code: -32603, message: 'no result' } });
        return true;
      }
      const entry = pending.get(msg.id);
      if (!entry || entry.answered) {
        log(`${name}: dropped a duplicate or unexpected answer for ${msg.id}`);
        return true;
      }
      entry.answered = true;
      pending.delete(msg.id);
      if ('error' in msg) {
        const err = isObject(msg.error) ? msg.error : {};
        entry.resolve({ status: 'unknown', detail: `JSON-RPC error after dispatch: ${String(err.code)} ${String(err.message)}` });
        return true;
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
        repeated !== undefined
          ? `a repeated ${repeated.join('.')} member`
          : 'result' in msg
            ? createdTaskOf(result)
              ? undefined
              : malformedToolResult(result)
            : 'neither result nor error';
      if (bad !== undefined) {
        log(`${name}: malformed answer from the server for ${msg.id}: ${bad}; outcome unknown`);
        entry.resolve({ status: 'unknown', detail: `malformed answer after dispatch: ${bad}` });
        return true;
      }
      const raw = rawMember(text, ['result']);
      if (createdTaskOf(result)) {
        // The tool answered with a task: its handle is passed on; guardedCall follows the task.
        const t: DispatchResult = { status: 'committed', result };
        if (raw.found) t.raw = raw.raw;
        entry.resolve(t);
        return true;
      }
      const r: DispatchResult = { status: (result as Record<string, unknown>).isError === true ? 'rejected' : 'committed', result };
      if (raw.found) r.raw = raw.raw;
      entry.resolve(r);
      return true;
    }
    if (isObject(msg) && 'id' in msg && !('method' in msg) && held.has(JSON.stringify(msg.id))) {
      log(`${name}: dropped an answer from the server for the held tools/call ${JSON.stringify(msg.id)} (only the PEP answers it)`);
      return true;
    }
    return false;
  }

  return {
    fromClient,
    fromServer,
    serverExited(status: number): void {
      exited ??= { status };
    },
    serverClosed(status: number): void {
      exited ??= { status };
      if (closed) return;
      closed = true;
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
    },
    get exitStatus() {
      return exited?.status;
    },
    async drain(): Promise<void> {
      while (inFlight.size) await Promise.allSettled([...inFlight]);
    },
    async settleLate(ms: number): Promise<number> {
      const deadline = Date.now() + ms;
      while (lateWork.size && Date.now() < deadline) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([Promise.allSettled([...lateWork]), new Promise((res) => (timer = setTimeout(res, deadline - Date.now())))]);
        clearTimeout(timer);
      }
      return lateWork.size;
    },
  };
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
  if (!id.found || !params.found || (!args.found && args.duplicate) || (!meta.found && meta.duplicate) || (!execMember.found && execMember.duplicate))
    return rebuilt();
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
    edits.push(
      empty
        ? [meta.span[0], meta.span[1], `{${JSON.stringify(META_EXECUTION_ID)}:${execText}}`]
        : [meta.span[0] + 1, meta.span[0] + 1, `${JSON.stringify(META_EXECUTION_ID)}:${execText},`],
    );
  } else edits.push([params.span[0] + 1, params.span[0] + 1, `"_meta":{${JSON.stringify(META_EXECUTION_ID)}:${execText}},`]);
  edits.sort((x, y) => y[0] - x[0]);
  let out = text;
  for (const [start, end, value] of edits) out = out.slice(0, start) + value + out.slice(end);
  return out;
}
