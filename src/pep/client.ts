/**
 * Typed client of the PDP's HTTP API (docs/protocol.md §4) for a PEP. It never throws for transport
 * trouble: a network error, a timeout, a 5xx or an unreadable answer is a `PDP_UNAVAILABLE` result,
 * so every caller fails closed by construction. 4xx answers carry the PDP's own error code.
 *
 * `decide` is sent once and never retried (a retry of a request that reached the PDP would only be
 * refused as EXECUTION_IN_FLIGHT). `outcome` is retried a few times on PDP_UNAVAILABLE, because losing
 * it leaves the execution `invoking` until a reconciler steps in; a 409 `EXECUTION_TERMINAL` on a
 * retry means an earlier attempt landed and counts as success.
 */
import type {
  DecisionRequest,
  DecisionResponse,
  OutcomeRequest,
  PdpErrorBody,
  PdpResult,
} from './types.js';

export interface PdpClientOptions {
  /** Base URL of the PDP, e.g. `http://127.0.0.1:8700`. */
  url: string;
  /** Bearer token of role `pep`. */
  token: string;
  /** Per-request timeout (default 10 000 ms). */
  timeoutMs?: number;
  /** Attempts for `outcome` (default 3). */
  outcomeAttempts?: number;
  /** Delay before the n-th retry of `outcome` is `retryDelayMs * 4^(n-1)` (default 100 ms). */
  retryDelayMs?: number;
}

const DECISIONS = new Set(['allow', 'deny', 'approval_required']);

function unavailable(status: number, message: string): { ok: false; status: number; error: PdpErrorBody } {
  return { ok: false, status, error: { code: 'PDP_UNAVAILABLE', message } };
}

export class PdpClient {
  readonly url: string;
  readonly timeoutMs: number;
  readonly #token: string;
  readonly #outcomeAttempts: number;
  readonly #retryDelayMs: number;

  constructor(opts: PdpClientOptions) {
    if (typeof opts.url !== 'string' || !/^https?:\/\//.test(opts.url)) throw new TypeError('PdpClient: url must be an http(s) URL');
    if (typeof opts.token !== 'string' || opts.token.length === 0) throw new TypeError('PdpClient: token is required');
    this.url = opts.url.replace(/\/+$/, '');
    this.#token = opts.token;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.#outcomeAttempts = Math.max(1, opts.outcomeAttempts ?? 3);
    this.#retryDelayMs = opts.retryDelayMs ?? 100;
  }

  /**
   * `POST /v1/decisions`. When `rawArguments` is given it is spliced into the body verbatim as
   * `action.arguments`, so the PDP's lossless admission (§3) sees exactly the text the MCP client sent
   * (duplicate keys, `1.0`, big integers…); `body.action.arguments` is then ignored.
   */
  async decide(body: DecisionRequest, opts: { rawArguments?: string } = {}): Promise<PdpResult<DecisionResponse>> {
    let text: string;
    if (opts.rawArguments !== undefined) {
      text =
        '{"execution_id":' + JSON.stringify(body.execution_id) +
        ',"phase":' + JSON.stringify(body.phase) +
        ',"envelope":' + JSON.stringify(body.envelope) +
        ',"action":{"server":' + JSON.stringify(body.action.server) +
        ',"tool":' + JSON.stringify(body.action.tool) +
        ',"arguments":' + opts.rawArguments + '}}';
    } else {
      text = JSON.stringify(body);
    }
    const r = await this.request<DecisionResponse>('POST', '/v1/decisions', text);
    if (!r.ok) return r;
    const d = r.body as Partial<DecisionResponse> | null;
    if (
      d === null || typeof d !== 'object' || typeof d.decision !== 'string' || !DECISIONS.has(d.decision) ||
      (d.decision === 'allow' && (d.arguments === null || typeof d.arguments !== 'object' || Array.isArray(d.arguments)))
    ) {
      return unavailable(r.status, 'the PDP answered a decision this PEP cannot read');
    }
    if (!Array.isArray(d.reasons)) d.reasons = [];
    if (!Array.isArray(d.obligations)) d.obligations = [];
    return r;
  }

  /** `POST /v1/executions/{id}/outcome`, retried on PDP_UNAVAILABLE. */
  async outcome(executionId: string, body: OutcomeRequest): Promise<PdpResult<unknown>> {
    const path = `/v1/executions/${encodeURIComponent(executionId)}/outcome`;
    const text = JSON.stringify(body);
    let last: PdpResult<unknown> | undefined;
    for (let attempt = 0; attempt < this.#outcomeAttempts; attempt++) {
      if (attempt > 0) await new Promise((res) => setTimeout(res, this.#retryDelayMs * 4 ** (attempt - 1)));
      const r = await this.request<unknown>('POST', path, text);
      if (r.ok) return r;
      if (attempt > 0 && r.error.code === 'EXECUTION_TERMINAL') return { ok: true, status: 200, body: { retried: true } };
      last = r;
      if (r.error.code !== 'PDP_UNAVAILABLE') return r;
    }
    return last!;
  }

  /** `GET /v1/executions/{id}` (own executions). */
  async execution(executionId: string): Promise<PdpResult<Record<string, unknown>>> {
    return this.request('GET', `/v1/executions/${encodeURIComponent(executionId)}`);
  }

  /** One HTTP exchange; never throws. */
  async request<T>(method: string, path: string, body?: string): Promise<PdpResult<T>> {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), this.timeoutMs);
    try {
      const headers: Record<string, string> = { authorization: `Bearer ${this.#token}`, accept: 'application/json' };
      if (body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(this.url + path, { method, headers, body, signal: ctl.signal });
      const text = await res.text();
      if (res.status >= 500) return unavailable(res.status, `the PDP answered ${res.status}${errorSuffix(text)}`);
      let parsed: unknown;
      try {
        parsed = text.length ? JSON.parse(text) : undefined;
      } catch {
        return unavailable(res.status, `the PDP answered ${res.status} with a body that is not JSON`);
      }
      if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status, body: parsed as T };
      const err = (parsed as { error?: Partial<PdpErrorBody> } | undefined)?.error;
      if (err && typeof err.code === 'string') {
        const e: PdpErrorBody = { code: err.code, message: typeof err.message === 'string' ? err.message : err.code };
        if (typeof err.path === 'string') e.path = err.path;
        return { ok: false, status: res.status, error: e };
      }
      return unavailable(res.status, `the PDP answered ${res.status} without an error body`);
    } catch (e) {
      const why = ctl.signal.aborted ? `no answer within ${this.timeoutMs} ms` : (e as Error)?.message ?? String(e);
      return unavailable(0, `the PDP cannot be reached: ${why}`);
    } finally {
      clearTimeout(timer);
    }
  }
}

function errorSuffix(text: string): string {
  try {
    const code = (JSON.parse(text) as { error?: { code?: unknown } })?.error?.code;
    return typeof code === 'string' ? ` ${code}` : '';
  } catch {
    return '';
  }
}
