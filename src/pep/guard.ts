/**
 * `guardMcpServer`: one call puts a TypeScript `McpServer` (@modelcontextprotocol/sdk) behind the PDP.
 *
 * How: the low-level `Server` keeps its request handlers in a Map keyed by method; the guard swaps
 * that Map for one whose `tools/call` entry is always wrapped — the one installed already (guard
 * called after tools were registered) and any installed later (McpServer installs its handler lazily
 * on the first `registerTool`, or a low-level user may call `setRequestHandler` directly). The
 * fallback request handler is wrapped too, so no `tools/call` can bypass the PDP. If the SDK's
 * internals ever stop matching, `guardMcpServer` throws rather than leave the server unguarded.
 *
 * Per call: context → PDP `execute` → the inner handler with `params.arguments` = the PDP's admitted
 * arguments → outcome. McpServer turns a throwing tool into an `isError` result, which would hide a
 * throw (contract: unknown) behind a rejection; so the guard also wraps each registered tool's
 * callback (lazily, at call time, so tools registered or updated later are covered) and watches it
 * through AsyncLocalStorage:
 *   - the callback threw → `unknown` (client: OUTCOME_UNKNOWN);
 *   - the callback returned → `committed`, or `rejected` if its own result has `isError`; a result
 *     that is not an object, or an `isError` that is not a boolean → `unknown`;
 *   - the callback never ran (unknown tool, input validation) → `rejected`;
 *   - not observable (task-based tools, low-level handlers): result → committed, `isError` →
 *     rejected, throw → unknown.
 * Task-augmented calls (`params.task`) are refused: their effect happens after the answer, so no
 * outcome could be reported truthfully.
 */
import { actionNameRefusal } from '../schemas/action-names.js';
import { AsyncLocalStorage } from 'node:async_hooks';
import { PdpClient, checkTimeoutMs } from './client.js';
import { defaultsEnvelopeIssue, isObject, parseDefaults, type Defaults } from './context.js';
import { malformedToolResult, runGuardedCall, refusalResult, type DispatchResult } from './core.js';

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

/** The SDK's per-request signal (RequestHandlerExtra.signal): aborted when the client cancels the call. */
function cancelSignalOf(extra: unknown): { cancelled?: AbortSignal } {
  const signal = isObject(extra) ? extra.signal : undefined;
  return signal instanceof AbortSignal ? { cancelled: signal } : {};
}

interface Watch {
  entered: boolean;
  threw: boolean;
  error?: unknown;
  returned: boolean;
  result?: unknown;
}

const GUARDED = new WeakSet<object>();
const WRAPPED = Symbol.for('writ.pep.wrappedToolCallback');
const watchStore = new AsyncLocalStorage<Watch>();

function isDefaults(v: unknown): v is Defaults {
  return isObject(v) && isObject(v.base) && isObject(v.tools) && typeof v.prefix === 'string';
}

function wrapCallback(cb: (...a: unknown[]) => unknown): (...a: unknown[]) => unknown {
  const wrapped = async function (this: unknown, ...args: unknown[]): Promise<unknown> {
    const w = watchStore.getStore();
    if (w) w.entered = true;
    try {
      const r = await cb.apply(this, args);
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
  Object.defineProperty(wrapped, WRAPPED, { value: true });
  return wrapped;
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
  const log = opts.log ?? ((l: string) => void process.stderr.write(l + '\n'));
  const callTimeoutMs = checkTimeoutMs(opts.callTimeoutMs ?? 60_000, 'guardMcpServer: callTimeoutMs');
  const pipeline = { pdp, server: opts.server, callTimeoutMs, log, ...(defaults ? { defaults } : {}) };

  const low = (mcp as unknown as { server?: Record<string, unknown> }).server;
  const handlers = low?._requestHandlers;
  if (!low || !(handlers instanceof Map)) {
    throw new Error('guardMcpServer: unsupported @modelcontextprotocol/sdk version (no request handler map); refusing to run unguarded');
  }
  const registry = () => (mcp as unknown as { _registeredTools?: Record<string, Record<string, unknown>> })._registeredTools;

  const wrap = (inner: Handler): Handler => {
    const guarded: Handler = async (request, extra) => {
      const params = isObject(request.params) ? request.params : {};
      const name = typeof params.name === 'string' ? params.name : '';
      if (params.task !== undefined) {
        return refusalResult(
          { code: 'INVALID_REQUEST', reasons: [], obligations: [], execution_id: null },
          'writ: task-augmented tools/call is not supported behind the writ guard',
        );
      }
      // Make the tool's callback observable (lazily: covers tools registered or updated later).
      const tool = registry()?.[name];
      let observable = false;
      if (tool && typeof tool.handler === 'function') {
        const h = tool.handler as ((...a: unknown[]) => unknown) & { [WRAPPED]?: boolean };
        if (!h[WRAPPED]) tool.handler = wrapCallback(h);
        observable = true;
      }
      const answer = await runGuardedCall(
        pipeline,
        { tool: name, arguments: params.arguments ?? {}, meta: params._meta, ...cancelSignalOf(extra) },
        async (admitted): Promise<DispatchResult> => {
          const w: Watch = { entered: false, threw: false, returned: false };
          const req = { ...request, params: { ...params, arguments: admitted } };
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
              const bad = malformedToolResult(w.result);
              if (bad) return { status: 'unknown', detail: `the tool returned ${bad}` };
              const own = isObject(w.result) && w.result.isError === true ? 'rejected' : 'committed';
              return threw ? { status: own, error, detail: `after the tool returned: ${msg(error)}` } : { status: own, result };
            }
            if (threw) return { status: 'rejected', error, detail: `the tool did not run: ${msg(error)}` };
            return { status: 'rejected', result, detail: 'the tool did not run' };
          }
          if (threw) return { status: 'unknown', detail: `the handler threw: ${msg(error)}` };
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

  class GuardedMap extends Map<string, Handler> {
    override set(method: string, handler: Handler): this {
      return super.set(method, method === 'tools/call' ? wrap(handler) : handler);
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
