/**
 * How the gateway reaches one MCP server for one client session (docs/protocol.md §14): over MCP
 * Streamable HTTP (`url`) or as a stdio child (`command`). Both carry JSON-RPC message texts, as the
 * relay's ports do; what comes back is handed to `onMessage` one message text at a time.
 *
 * No token passthrough: an HTTP upstream gets the configured `headers` and the MCP transport headers
 * the gateway writes itself (session id, protocol revision, the 2026-07-28 routing headers derived from
 * the body), never a header of the client's.
 *
 * An upstream that fails a request (the connection drops, it answers a 5xx, its stream ends first, the
 * child exits) never leaves it hanging: each request in flight gets a JSON-RPC error answer of the
 * gateway's own, so the relay ends a held call `unknown` and any other request is answered.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import { constants as osConstants } from 'node:os';
import { createParser } from 'eventsource-parser';
import { isObject } from '../pep/context.js';
import { FIRST_STATELESS_REVISION, requestRevision } from '../pep/revision.js';
import { Lines } from '../pep/proxy.js';
import { rawElements, rawMember } from '../util/rawjson.js';
import type { UpstreamSpec } from './config.js';

export interface Upstream {
  send(text: string): void;
  /** Ends the upstream session (DELETE, or the child's stdin closed and the child stopped). */
  close(): Promise<void>;
  onMessage: (text: string) => void;
  /** The upstream is gone for good (the child exited): nothing sent later is answered by it. */
  onClose: (status: number) => void;
}

/** The messages of a JSON-RPC text (one, or a batch's elements), parsed and as text. */
function messagesOf(text: string): Array<{ msg: unknown; text: string }> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [{ msg: parsed, text }];
  const raws = rawElements(text);
  return parsed.map((msg, i) => ({ msg, text: raws[i] ?? JSON.stringify(msg) }));
}

/** The id texts of the requests in a JSON-RPC text. */
function requestIds(text: string): string[] {
  return requestIdsOf(messagesOf(text));
}

/** The id texts of the requests among messages. */
function requestIdsOf(messages: Array<{ msg: unknown; text: string }>): string[] {
  const ids: string[] = [];
  for (const { msg, text: t } of messages) {
    if (!isObject(msg) || typeof msg.method !== 'string' || !('id' in msg)) continue;
    const m = rawMember(t, ['id']);
    ids.push(m.found ? m.raw : JSON.stringify(msg.id));
  }
  return ids;
}

function idKey(raw: string): string {
  try {
    return JSON.stringify(JSON.parse(raw));
  } catch {
    return raw;
  }
}

function errorAnswer(idRaw: string, message: string): string {
  return `{"jsonrpc":"2.0","id":${idRaw},"error":{"code":-32000,"message":${JSON.stringify(message)}}}`;
}

/** Which body member the 2026-07-28 `Mcp-Name` header mirrors, per method. */
const NAME_SOURCE: Record<string, string> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'resources/subscribe': 'uri',
  'resources/unsubscribe': 'uri',
  'tasks/get': 'taskId',
  'tasks/result': 'taskId',
  'tasks/cancel': 'taskId',
};

/** A header value as the 2026-07-28 routing headers carry it: plain printable ASCII, else a Base64 sentinel. */
export function routingHeaderValue(v: string): string {
  return /^[\x20-\x7e]*$/.test(v) && v.trim() === v ? v : `=?base64?${Buffer.from(v, 'utf8').toString('base64')}?=`;
}

/** The routing headers a 2026-07-28 request carries (`Mcp-Method`, `Mcp-Name`), derived from its body. */
export function routingHeadersOf(msg: unknown): Record<string, string> {
  if (!isObject(msg) || typeof msg.method !== 'string') return {};
  const h: Record<string, string> = { 'mcp-method': routingHeaderValue(msg.method) };
  const src = NAME_SOURCE[msg.method];
  const v = src !== undefined && isObject(msg.params) ? msg.params[src] : undefined;
  if (typeof v === 'string') h['mcp-name'] = routingHeaderValue(v);
  return h;
}

/** Measures each request's time to its answer (the gateway's upstream latency metric). */
export type LatencyObserver = (seconds: number) => void;

abstract class Base implements Upstream {
  onMessage: (text: string) => void = () => undefined;
  onClose: (status: number) => void = () => undefined;
  readonly #started = new Map<string, number>();
  constructor(protected readonly observe?: LatencyObserver) {}
  abstract send(text: string): void;
  abstract close(): Promise<void>;
  protected sent(text: string): void {
    if (this.observe) this.sentIds(requestIds(text).map(idKey));
  }
  /** The requests (by id key) just sent. */
  protected sentIds(keys: string[]): void {
    if (!this.observe) return;
    const now = performance.now();
    for (const k of keys) this.#started.set(k, now);
  }
  protected received(text: string): void {
    if (this.observe) {
      for (const { msg } of messagesOf(text)) {
        if (!isObject(msg) || 'method' in msg || !('id' in msg)) continue;
        const key = JSON.stringify(msg.id);
        const t0 = this.#started.get(key);
        if (t0 !== undefined) {
          this.#started.delete(key);
          this.observe((performance.now() - t0) / 1000);
        }
      }
    }
    this.onMessage(text);
  }
}

/**
 * An idle kept-alive connection to an upstream is closed after this long: well under the usual 5 s
 * keep-alive timeout of HTTP servers (Node's, uvicorn's), so a call is not written to a connection the
 * server is closing at that moment (a call is never retried: it would end `unknown`). A server that
 * announces a shorter one (`Keep-Alive: timeout=N`) has its connections closed a second before it, by
 * Node's agent.
 */
const IDLE_CONNECTION_MS = 2_000;

/**
 * node:http(s) with keep-alive agents, shared by every session, not fetch: on Node 20 a sequential
 * exchange through undici's fetch and its web streams costs several times the CPU of node:http (as for
 * the PDP client, src/pep/client.ts), and a gateway call makes one. Idle sockets do not hold the process open.
 */
const agents = {
  'http:': new http.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
  'https:': new https.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
};

const ok = (res: http.IncomingMessage): boolean => (res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 300;
const headerOf = (res: http.IncomingMessage, name: string): string | undefined => {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/** Redirects followed per request, as fetch follows them (e.g. a server mounted at `/mcp/` answering `/mcp` with 307). */
const MAX_REDIRECTS = 5;
/** Headers not carried to another origin on a redirect (as fetch drops them). */
const CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'cookie'];

/**
 * One HTTP request to an upstream; resolves with its response once the head is in. A 307 or 308 is
 * followed with the same method and body, a 301, 302 or 303 only for a request without a body (a POST
 * turned into a GET, as fetch would, could never carry the call); to another origin without credentials.
 */
async function exchange(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  signal: AbortSignal,
): Promise<http.IncomingMessage> {
  let at = url;
  let h = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) };
  for (let hop = 0; ; hop++) {
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const transport = at.protocol === 'https:' ? https : http;
      const req = transport.request(at, { method, headers: h, agent: agents[at.protocol as 'http:' | 'https:'], signal }, resolve);
      req.on('error', reject);
      req.end(body);
    });
    const status = res.statusCode ?? 0;
    const location = headerOf(res, 'location');
    const follows = status === 307 || status === 308 || (body === undefined && (status === 301 || status === 302 || status === 303));
    if (!follows || location === undefined || hop >= MAX_REDIRECTS) return res;
    let next: URL;
    try {
      next = new URL(location, at);
    } catch {
      return res;
    }
    if (next.protocol !== 'http:' && next.protocol !== 'https:') return res;
    res.resume();
    if (next.origin !== at.origin) h = Object.fromEntries(Object.entries(h).filter(([k]) => !CREDENTIAL_HEADERS.includes(k)));
    at = next;
  }
}

/** A response body as text (an aborted or broken stream rejects). */
async function bodyText(res: http.IncomingMessage): Promise<string> {
  res.setEncoding('utf8');
  let text = '';
  for await (const chunk of res as AsyncIterable<string>) text += chunk;
  return text;
}

/** MCP Streamable HTTP to a remote server. */
export class HttpUpstream extends Base {
  #sessionId: string | undefined;
  #protocolVersion: string | undefined;
  #closed = false;
  readonly #aborts = new Set<AbortController>();
  #getStream = false;
  readonly #url: URL;
  /** The configured headers, names in lower case (the MCP headers the gateway writes replace any of them). */
  readonly #headersConfigured: Record<string, string>;

  constructor(
    readonly spec: Extract<UpstreamSpec, { kind: 'http' }>,
    private readonly label: string,
    observe?: LatencyObserver,
  ) {
    super(observe);
    this.#url = new URL(spec.url);
    this.#headersConfigured = Object.fromEntries(Object.entries(spec.headers).map(([k, v]) => [k.toLowerCase(), v]));
  }

  #headers(first: unknown): Record<string, string> {
    const h: Record<string, string> = { ...this.#headersConfigured, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    if (this.#sessionId !== undefined) h['mcp-session-id'] = this.#sessionId;
    const modern = isObject(first) ? requestRevision(first.params) : undefined;
    if (modern !== undefined && modern >= FIRST_STATELESS_REVISION) {
      h['mcp-protocol-version'] = modern;
      Object.assign(h, routingHeadersOf(first));
    } else if (this.#protocolVersion !== undefined) h['mcp-protocol-version'] = this.#protocolVersion;
    return h;
  }

  send(text: string): void {
    const messages = messagesOf(text);
    const pending = new Map(requestIdsOf(messages).map((id) => [idKey(id), id]));
    const initialize = messages.some(({ msg }) => isObject(msg) && msg.method === 'initialize');
    const initialized = messages.some(({ msg }) => isObject(msg) && msg.method === 'notifications/initialized');
    this.sentIds([...pending.keys()]);
    const fail = (why: string): void => {
      for (const raw of pending.values()) this.received(errorAnswer(raw, `writ gateway: the upstream server ${this.label} failed: ${why}`));
      pending.clear();
    };
    if (this.#closed) {
      fail('the upstream session is closed');
      return;
    }
    const ctl = new AbortController();
    this.#aborts.add(ctl);
    const deliver = (t: string): void => {
      for (const { msg } of messagesOf(t)) {
        if (isObject(msg) && !('method' in msg) && 'id' in msg) {
          pending.delete(JSON.stringify(msg.id));
          if (initialize && isObject(msg.result) && typeof msg.result.protocolVersion === 'string') this.#protocolVersion = msg.result.protocolVersion;
        }
      }
      this.received(t);
    };
    void (async () => {
      try {
        const res = await exchange(this.#url, 'POST', this.#headers(messages[0]?.msg), text, ctl.signal);
        if (initialize) this.#sessionId = headerOf(res, 'mcp-session-id') ?? this.#sessionId;
        const type = headerOf(res, 'content-type') ?? '';
        if (res.statusCode === 202 || (ok(res) && pending.size === 0 && !type.includes('text/event-stream') && !type.includes('json'))) {
          res.resume();
        } else if (!ok(res)) {
          const body = await bodyText(res).catch(() => '');
          // The upstream no longer knows our session (it restarted, or expired it): the session is over.
          if (res.statusCode === 404 && this.#sessionId !== undefined && !initialize) this.#gone(404);
          // A JSON-RPC error answer (a 4xx the server wrote for one request) is the server's answer.
          const answered = messagesOf(body).some(({ msg }) => isObject(msg) && 'error' in msg && msg.id !== null && msg.id !== undefined);
          if (answered) deliver(body);
          else if (messagesOf(body).length === 1 && pending.size === 1) {
            // An error the server wrote without the request's id (id null): answered as the request's.
            const only = [...pending.values()][0]!;
            const m = messagesOf(body)[0]!.msg;
            if (isObject(m) && isObject(m.error)) deliver(JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(only), error: m.error }));
          }
          fail(`HTTP ${res.statusCode}`);
        } else if (type.includes('text/event-stream')) {
          await this.#readSse(res, deliver);
          fail('its event stream ended before it answered');
        } else {
          deliver(await bodyText(res));
          fail('its answer did not carry every response');
        }
      } catch (e) {
        fail((e as Error)?.message ?? String(e));
      } finally {
        this.#aborts.delete(ctl);
      }
      if (initialized) this.#openGetStream();
    })();
  }

  async #readSse(res: http.IncomingMessage, deliver: (t: string) => void): Promise<void> {
    const parser = createParser({ onEvent: (e) => e.data.trim() !== '' && deliver(e.data) });
    res.setEncoding('utf8');
    for await (const chunk of res as AsyncIterable<string>) parser.feed(chunk);
  }

  /** Server-initiated messages of a stateful session come on a GET stream, when the server offers one. */
  #openGetStream(): void {
    if (this.#getStream || this.#closed || this.#sessionId === undefined) return;
    this.#getStream = true;
    const ctl = new AbortController();
    this.#aborts.add(ctl);
    void (async () => {
      try {
        const headers: Record<string, string> = { ...this.#headersConfigured, accept: 'text/event-stream', 'mcp-session-id': this.#sessionId! };
        if (this.#protocolVersion) headers['mcp-protocol-version'] = this.#protocolVersion;
        const res = await exchange(this.#url, 'GET', headers, undefined, ctl.signal);
        if (ok(res) && (headerOf(res, 'content-type') ?? '').includes('text/event-stream')) await this.#readSse(res, (t) => this.received(t));
        else res.resume();
      } catch {
        /* a server without a GET stream (405), or one closed: server messages then ride on POST answers */
      } finally {
        this.#aborts.delete(ctl);
      }
    })();
  }

  #gone(status: number): void {
    if (this.#closed) return;
    this.#closed = true;
    this.onClose(status);
  }

  async close(): Promise<void> {
    if (this.#closed && this.#sessionId === undefined) return;
    const wasClosed = this.#closed;
    this.#closed = true;
    for (const a of this.#aborts) a.abort();
    if (wasClosed) return;
    if (this.#sessionId === undefined) return;
    const headers: Record<string, string> = { ...this.#headersConfigured, 'mcp-session-id': this.#sessionId };
    if (this.#protocolVersion) headers['mcp-protocol-version'] = this.#protocolVersion;
    await exchange(this.#url, 'DELETE', headers, undefined, AbortSignal.timeout(5_000)).then(
      (r) => void r.resume(),
      () => undefined,
    );
  }
}

/** A stdio MCP server started for one client session; newline-delimited JSON-RPC on its stdin/stdout. */
export class StdioUpstream extends Base {
  readonly #child: ChildProcess;
  #gone = false;
  readonly #inFlight = new Map<string, string>();

  constructor(
    spec: Extract<UpstreamSpec, { kind: 'stdio' }>,
    private readonly label: string,
    log: (line: string) => void,
    observe?: LatencyObserver,
  ) {
    super(observe);
    this.#child = spawn(spec.command, spec.args, { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, ...(spec.env ?? {}) } });
    this.#child.stdin!.on('error', (e) => log(`writ gateway: writing to ${label} failed: ${e.message}`));
    const lines = new Lines();
    this.#child.stdout!.on('data', (chunk: Buffer) =>
      lines.push(chunk, (line) => {
        const text = line.toString('utf8').replace(/\r$/, '');
        if (text.trim() === '') return;
        for (const { msg } of messagesOf(text)) if (isObject(msg) && !('method' in msg) && 'id' in msg) this.#inFlight.delete(JSON.stringify(msg.id));
        this.received(text);
      }),
    );
    const done = (status: number): void => {
      if (this.#gone) return;
      this.#gone = true;
      for (const raw of this.#inFlight.values())
        this.received(errorAnswer(raw, `writ gateway: the upstream server ${label} exited (status ${status}) before answering`));
      this.#inFlight.clear();
      this.onClose(status);
    };
    this.#child.once('error', (e) => {
      log(`writ gateway: cannot start ${label}: ${e.message}`);
      done(127);
    });
    this.#child.once('close', (code, signal) => done(code ?? 128 + (signal ? (osConstants.signals[signal] ?? 0) : 0)));
  }

  send(text: string): void {
    if (this.#gone || !this.#child.stdin!.writable) {
      for (const raw of requestIds(text)) this.received(errorAnswer(raw, `writ gateway: the upstream server ${this.label} has exited`));
      return;
    }
    this.sent(text);
    for (const raw of requestIds(text)) this.#inFlight.set(idKey(raw), raw);
    this.#child.stdin!.write(`${text}\n`);
  }

  async close(): Promise<void> {
    if (this.#gone) return;
    const exited = new Promise<void>((res) => this.#child.once('close', () => res()));
    this.#child.stdin!.end();
    const timer = setTimeout(() => this.#child.kill('SIGTERM'), 2_000);
    await exited;
    clearTimeout(timer);
  }
}

export function startUpstream(spec: UpstreamSpec, label: string, log: (line: string) => void, observe?: LatencyObserver): Upstream {
  return spec.kind === 'http' ? new HttpUpstream(spec, label, observe) : new StdioUpstream(spec, label, log, observe);
}
