/**
 * `guardMcpServer`: one call puts an `McpServer` of the MCP TypeScript SDK — 1.x
 * (`@modelcontextprotocol/sdk`) or 2.x (`@modelcontextprotocol/server`) — behind the PDP.
 *
 * How: the low-level `Server` (both SDKs: a Protocol whose `_requestHandlers` Map is keyed by method)
 * has that Map swapped for one whose `tools/call` entry is always wrapped — the one installed already
 * (guard called after tools were registered) and any installed later (McpServer installs its handler
 * lazily on the first `registerTool`, or a low-level user may call `setRequestHandler` directly). The
 * fallback request handler is wrapped too, so no `tools/call` can bypass the PDP. If the SDK's
 * internals ever stop matching, `guardMcpServer` throws rather than leave the server unguarded.
 *
 * Per call: context → PDP `execute` → the inner handler with `params.arguments` = the PDP's admitted
 * arguments and `params._meta["io.writ/execution_id"]` = the execution id (the tool's idempotency key)
 * → outcome. McpServer turns a throwing tool into an `isError` result, which would hide a throw
 * (contract: unknown) behind a rejection, and answers `isError` for a call whose tool never ran
 * (unknown tool, input validation). So the guard watches the one place where both SDKs run a tool's
 * callback, `McpServer.executeToolHandler(tool, args, extra)` (2.x runs an executor built at
 * registration there, 1.x the registered handler), through AsyncLocalStorage:
 *   - the callback threw → `unknown` (client: OUTCOME_UNKNOWN);
 *   - the callback returned → `committed`, or `rejected` if its own result has `isError`; a result
 *     that is not an object, or an `isError` that is not a boolean → `unknown`;
 *   - the callback never ran → `rejected` ("the tool did not run");
 *   - not observable (low-level handlers, an McpServer without `executeToolHandler`): result →
 *     committed, `isError` → rejected, throw → unknown.
 * `tools/list` answers only the tools the caller could be allowed to call (core.ts filterToolList).
 * Task-augmented calls (1.x experimental tasks, `params.task`) are decided before the tool runs like
 * any call; when the tool answers with a task, the execution stays `invoking` and the guard follows the
 * task in the server's own task store until it ends (task.ts says how its status becomes an outcome).
 */
import { actionNameRefusal } from '../schemas/action-names.js';
import { AsyncLocalStorage } from 'node:async_hooks';
import { PdpClient, checkTimeoutMs } from './client.js';
import type { PdpResult } from './types.js';
import { defaultsEnvelopeIssue, isObject, parseDefaults, type Defaults } from './context.js';
import { filterToolList, malformedToolResult, metaForTool, runGuardedCall, type DispatchResult } from './core.js';
import { createdTaskOf, followTask, taskViewOf, unknownTaskOutcome, type CreatedTask } from './task.js';

export interface GuardOptions {
  /** PDP base URL, or a ready client. */
  pdp: string | PdpClient;
  /** Bearer token (role `pep`); required when `pdp` is a URL. */
  token?: string;
  /** The server name the PDP sees (`Action::"<server>/<tool>"`). */
  server: string;
  /** Envelope defaults (see context.ts for the format): a parsed document or the raw JSON value. */
  defaults?: Defaults | Record<string, unknown>;
  /** Per-call limit on the tool (default 60 000 ms); beyond it the outcome is unknown. */
  callTimeoutMs?: number;
  /** Per-request limit on the PDP when `pdp` is a URL (default 10 000 ms; `writ proxy --pdp-timeout`). */
  pdpTimeoutMs?: number;
  /** Where late answers and unrecordable outcomes are reported (default: stderr). */
  log?: (line: string) => void;
}

/**
 * What `guardMcpServer` takes: an `McpServer` of @modelcontextprotocol/sdk 1.x, described by shape, not
 * by the class. A project whose own SDK release differs from writ's has its own copy of the class, and
 * TypeScript would refuse it for the other copy's private members; the shape accepts any McpServer (and
 * refuses the low-level `Server`, which has no `server`). What the guard reads inside it is checked at
 * run time, and an SDK that does not match is refused rather than left unguarded.
 */
export interface GuardableMcpServer {
  /** The low-level protocol server (`McpServer.server`) whose `tools/call` handler is wrapped. */
  readonly server: object;
}

type Handler = (request: Record<string, unknown>, extra: unknown) => Promise<unknown>;

/**
 * The per-request signal, aborted when the client cancels the call: SDK 1.x passes it as
 * `extra.signal`, SDK 2.x as `ctx.mcpReq.signal`.
 */
function cancelSignalOf(extra: unknown): { cancelled?: AbortSignal } {
  if (!isObject(extra)) return {};
  const signal = extra.signal ?? (isObject(extra.mcpReq) ? extra.mcpReq.signal : undefined);
  return signal instanceof AbortSignal ? { cancelled: signal } : {};
}

/** The session a request came in (SDK 1.x `extra.sessionId`, 2.x `ctx.sessionId`), for its task store. */
function sessionIdOf(extra: unknown): string | undefined {
  if (!isObject(extra)) return undefined;
  const id = extra.sessionId ?? (isObject(extra.mcpReq) ? extra.mcpReq.sessionId : undefined);
  return typeof id === 'string' ? id : undefined;
}

interface Watch {
  /** The guarded call's execution and PDP, for emitToolEvents. */
  executionId?: string;
  pdp?: PdpClient;
  entered: boolean;
  threw: boolean;
  error?: unknown;
  returned: boolean;
  result?: unknown;
}

const GUARDED = new WeakSet<object>();
const watchStore = new AsyncLocalStorage<Watch>();

function isDefaults(v: unknown): v is Defaults {
  return isObject(v) && isObject(v.base) && isObject(v.tools) && typeof v.prefix === 'string';
}

/**
 * Makes `fn` (a method of McpServer that runs a tool's callback) report to the call's Watch: that the
 * tool was entered, and whether it returned or threw. Outside a guarded call it is `fn` as it was.
 */
function watched(fn: (...a: unknown[]) => unknown): (...a: unknown[]) => Promise<unknown> {
  return async function (this: unknown, ...args: unknown[]): Promise<unknown> {
    const w = watchStore.getStore();
    if (w) w.entered = true;
    try {
      const r = await fn.apply(this, args);
      if (w) {
        w.returned = true;
        w.result = r;
      }
      return r;
    } catch (e) {
      if (w) {
        w.threw = true;
        w.error = e;
      }
      throw e;
    }
  };
}

/** The methods through which McpServer (1.x and 2.x) runs a tool's callback. */
const TOOL_RUNNERS = ['executeToolHandler', 'handleAutomaticTaskPolling'] as const;

/** The SDK 1.x task store a task-augmented call's task lives in (`Protocol._taskStore`), if any. */
interface TaskStoreLike {
  getTask(taskId: string, sessionId?: string): Promise<unknown>;
  getTaskResult(taskId: string, sessionId?: string): Promise<unknown>;
}

function taskStoreOf(low: Record<string, unknown>): TaskStoreLike | undefined {
  const store = low._taskStore;
  return isObject(store) && typeof store.getTask === 'function' && typeof store.getTaskResult === 'function' ? (store as unknown as TaskStoreLike) : undefined;
}

/**
 * For a tool handler running under guardMcpServer: seals what the tool did inside this call — mailbox
 * locked, tokens revoked — as `event` records of its execution (docs/protocol.md §17), before the
 * outcome. Each event is `{type, data}` (`type` 1–64 characters of `A-Za-z0-9._:-`; `data` admitted as
 * arguments are), at most 100 a call. Outside a guarded call it refuses (`NOT_GUARDED`); the PDP's
 * refusals come back as they are. (A tool may also put the events in its result's
 * `_meta["io.writ/events"]`: the guard and writ proxy seal those before the outcome.)
 */
export async function emitToolEvents(events: Array<{ type: string; data: unknown }>): Promise<PdpResult<{ records: Array<{ seq: number; hash: string }> }>> {
  const w = watchStore.getStore();
  if (!w?.pdp || w.executionId === undefined)
    return { ok: false, status: 0, error: { code: 'NOT_GUARDED', message: 'emitToolEvents is called from a tool handler running under guardMcpServer' } };
  return w.pdp.events(w.executionId, events);
}

export function guardMcpServer(mcp: GuardableMcpServer, opts: GuardOptions): void {
  if (GUARDED.has(mcp)) throw new Error('guardMcpServer: this server is already guarded');
  if (typeof opts.server !== 'string' || !opts.server) throw new TypeError('guardMcpServer: server name is required');
  // A name no decision request may carry would have every call refused later: refuse it now, as writ proxy does.
  const badServer = actionNameRefusal(opts.server, undefined, { server: 'server', tool: 'tool' });
  if (badServer) throw new TypeError(`guardMcpServer: ${badServer.message}`);
  let pdp: PdpClient;
  if (opts.pdp instanceof PdpClient) pdp = opts.pdp;
  else {
    if (typeof opts.token !== 'string') throw new TypeError('guardMcpServer: token is required with a PDP URL');
    pdp = new PdpClient({ url: opts.pdp, token: opts.token, ...(opts.pdpTimeoutMs !== undefined ? { timeoutMs: opts.pdpTimeoutMs } : {}) });
  }
  const defaults = opts.defaults === undefined ? undefined : isDefaults(opts.defaults) ? opts.defaults : parseDefaults(opts.defaults);
  // Defaults whose envelope members could never pass §2 would have every call relying on them refused.
  const badDefaults = defaults && defaultsEnvelopeIssue(defaults);
  if (badDefaults) throw new TypeError(`guardMcpServer: defaults ${badDefaults}`);
  const log = opts.log ?? ((l: string) => void process.stderr.write(`${l}\n`));
  const callTimeoutMs = checkTimeoutMs(opts.callTimeoutMs ?? 60_000, 'guardMcpServer: callTimeoutMs');
  const pipeline = { pdp, server: opts.server, callTimeoutMs, log, ...(defaults ? { defaults } : {}) };

  const low = (mcp as unknown as { server?: Record<string, unknown> }).server;
  const handlers = low?._requestHandlers;
  if (!low || !(handlers instanceof Map)) {
    throw new Error('guardMcpServer: unsupported @modelcontextprotocol/sdk version (no request handler map); refusing to run unguarded');
  }
  // Watch where McpServer runs a tool's callback, for every tool, registered before or after this call.
  const instance = mcp as unknown as Record<string, unknown>;
  let watching = false;
  for (const name of TOOL_RUNNERS) {
    const fn = instance[name];
    if (typeof fn === 'function') {
      instance[name] = watched(fn as (...a: unknown[]) => unknown);
      if (name === 'executeToolHandler') watching = true;
    }
  }
  // A call is observable when McpServer's own handler answers it, i.e. the tool is registered with it
  // (a low-level handler installed in its place, or an unregistered name, is judged by its answer).
  const registered = (name: string): boolean => {
    const tools = instance._registeredTools;
    return watching && isObject(tools) && Object.hasOwn(tools, name);
  };
  /**
   * A tool that answered with a task: the client gets the handle; the task is followed in the server's
   * own task store (SDK 1.x) until it ends — the store outlives the connection, so a client that goes
   * away does not stop it. Without a store to read, its end cannot be known: unknown.
   */
  const followed = (task: CreatedTask, handle: unknown, sessionId: string | undefined): DispatchResult => {
    const store = taskStoreOf(low);
    const end: Promise<DispatchResult> = store
      ? followTask(task, {
          get: async () => taskViewOf(await store.getTask(task.taskId, sessionId)) ?? 'gone',
          result: () => store.getTaskResult(task.taskId, sessionId),
        })
      : Promise.resolve(unknownTaskOutcome(task.taskId, 'was created, but this server has no task store the guard can read'));
    return { status: 'committed', result: handle, task: end };
  };

  const wrap = (inner: Handler): Handler => {
    const guarded: Handler = async (request, extra) => {
      const params = isObject(request.params) ? request.params : {};
      const name = typeof params.name === 'string' ? params.name : '';
      const answer = await runGuardedCall(
        pipeline,
        { tool: name, arguments: params.arguments ?? {}, meta: params._meta, ...cancelSignalOf(extra) },
        async (admitted, _signal, execution): Promise<DispatchResult> => {
          const observable = registered(name);
          const w: Watch = { executionId: execution.execution_id, pdp, entered: false, threw: false, returned: false };
          const req = { ...request, params: { ...params, arguments: admitted, _meta: metaForTool(params._meta, execution.execution_id) } };
          let result: unknown;
          let error: unknown;
          let threw = false;
          try {
            result = await watchStore.run(w, () => inner(req, extra));
          } catch (e) {
            threw = true;
            error = e;
          }
          const msg = (e: unknown) => (e instanceof Error ? e.message : String(e));
          if (observable) {
            if (w.threw) return { status: 'unknown', detail: `the tool threw: ${msg(w.error)}` };
            if (w.returned) {
              // As in the proxy: a result that is not an object, or whose isError is not a boolean,
              // says nothing certain about what the tool did.
              const task = createdTaskOf(w.result);
              if (task) return followed(task, w.result, sessionIdOf(extra));
              const bad = malformedToolResult(w.result);
              if (bad) return { status: 'unknown', detail: `the tool returned ${bad}` };
              const own = isObject(w.result) && w.result.isError === true ? 'rejected' : 'committed';
              return threw ? { status: own, error, detail: `after the tool returned: ${msg(error)}` } : { status: own, result };
            }
            if (threw) return { status: 'rejected', error, detail: `the tool did not run: ${msg(error)}` };
            return { status: 'rejected', result, detail: 'the tool did not run' };
          }
          if (threw) return { status: 'unknown', detail: `the handler threw: ${msg(error)}` };
          const task = createdTaskOf(result);
          if (task) return followed(task, result, sessionIdOf(extra));
          const bad = malformedToolResult(result);
          if (bad) return { status: 'unknown', detail: `the handler returned ${bad}` };
          return { status: isObject(result) && result.isError === true ? 'rejected' : 'committed', result };
        },
      );
      if ('error' in answer) throw answer.error;
      return answer.result;
    };
    return guarded;
  };

  // tools/list answers only the tools this caller could be allowed to call (docs/protocol.md §15).
  const wrapList =
    (inner: Handler): Handler =>
    async (request, extra) => {
      const result = await inner(request, extra);
      const params = isObject(request.params) ? request.params : {};
      return filterToolList(pipeline, params._meta, result);
    };

  class GuardedMap extends Map<string, Handler> {
    override set(method: string, handler: Handler): this {
      return super.set(method, method === 'tools/call' ? wrap(handler) : method === 'tools/list' ? wrapList(handler) : handler);
    }
  }
  const replacement = new GuardedMap();
  for (const [k, v] of handlers as Map<string, Handler>) replacement.set(k, v);
  low._requestHandlers = replacement;

  let fallback = low.fallbackRequestHandler as Handler | undefined;
  const wrapFallback = (f: Handler | undefined): Handler | undefined => {
    if (!f) return f;
    const g = wrap(f);
    return (request, extra) => (request.method === 'tools/call' ? g(request, extra) : f(request, extra));
  };
  let guardedFallback = wrapFallback(fallback);
  Object.defineProperty(low, 'fallbackRequestHandler', {
    configurable: true,
    enumerable: true,
    get: () => guardedFallback,
    set: (f: Handler | undefined) => {
      fallback = f;
      guardedFallback = wrapFallback(f);
    },
  });
  GUARDED.add(mcp);
}
