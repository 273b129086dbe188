/**
 * One client session of `writ gateway` (docs/protocol.md §14): the PEP relay (src/pep/relay.ts) between
 * the client's Streamable HTTP requests and one upstream connection, bound to the identity that opened it.
 *
 * Routing of what the relay gives the client:
 * - a response goes to the POST that carried its request (matched by id), answered as JSON when every
 *   response of that POST is in before any other message, else as an SSE stream;
 * - a server notification or request goes to the newest POST still waiting for answers (its stream
 *   switches to SSE), else to the session's GET stream, else it is dropped and logged (MCP lets a
 *   server message go on any stream the client has open).
 *
 * Tasks belong to the identity whose call created them (TaskOwners): `tasks/get`, `tasks/result` and
 * `tasks/cancel` naming another identity's task are sent upstream with a task id no server knows, so the
 * client gets exactly the error an unknown task gets (the id it asked for put back into it);
 * `tasks/list` answers list only the caller's own tasks.
 */
import { randomBytes } from 'node:crypto';
import type { PdpClient } from '../pep/client.js';
import { isObject, type Defaults } from '../pep/context.js';
import { createRelay, type Relay } from '../pep/relay.js';
import { createdTaskOf } from '../pep/task.js';
import { META_DECISION } from '../pep/types.js';
import { rawElements } from '../util/rawjson.js';
import type { UpstreamSpec } from './config.js';
import { startUpstream, type LatencyObserver, type Upstream } from './upstream.js';

/** Which identity created which task, per server. In this process's memory (see docs: replicas). */
export class TaskOwners {
  readonly #owners = new Map<string, string>();
  set(server: string, taskId: string, owner: string): void {
    this.#owners.set(`${server}\n${taskId}`, owner);
  }
  owner(server: string, taskId: string): string | undefined {
    return this.#owners.get(`${server}\n${taskId}`);
  }
}

export interface SessionHooks {
  /** A tools/call answered: its refusal code, or undefined when the tool's own result came back. */
  callAnswered?: (server: string, refusal: string | undefined) => void;
  upstreamLatency?: LatencyObserver;
}

export interface SessionOptions {
  server: string;
  spec: UpstreamSpec;
  /** The identity the session belongs to (issuer, subject, client). */
  owner: string;
  token: string;
  pdp: PdpClient;
  defaults?: Defaults;
  callTimeoutMs: number;
  log: (line: string) => void;
  tasks: TaskOwners;
  hooks?: SessionHooks;
}

/** What a POST is answered with: nothing (202), a JSON body, or an SSE stream. */
export type PostAnswer = { kind: 'accepted' } | { kind: 'json'; body: string } | { kind: 'sse'; stream: ReadableStream<Uint8Array> };

const TASK_METHODS = new Set(['tasks/get', 'tasks/result', 'tasks/cancel']);
const encoder = new TextEncoder();
const sseEvent = (text: string): Uint8Array => encoder.encode(`event: message\ndata: ${text}\n\n`);

class Exchange {
  /** Response ids still awaited: id key → the request's method. */
  readonly waiting = new Map<string, string>();
  readonly answers: string[] = [];
  #controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  #resolve!: (a: PostAnswer) => void;
  readonly answer = new Promise<PostAnswer>((r) => (this.#resolve = r));
  #settled = false;
  closed = false;
  constructor(
    readonly batch: boolean,
    private readonly onDone: (e: Exchange) => void,
  ) {}

  /** A response for one of this POST's requests. */
  respond(key: string, text: string): void {
    this.waiting.delete(key);
    if (this.#controller) this.#write(text);
    else this.answers.push(text);
    if (this.waiting.size === 0) this.#finish();
  }

  /** The whole POST was refused with this one answer. */
  refuseAll(text: string): void {
    this.waiting.clear();
    this.waiting.set('null', '');
    this.answers.length = 0;
    this.respond('null', text);
  }

  /** A server message that is not a response: the answer becomes an SSE stream. */
  push(text: string): void {
    if (!this.#settled) this.#openStream();
    this.#write(text);
  }

  #openStream(): void {
    this.#settled = true;
    const stream = new ReadableStream<Uint8Array>({
      start: (c) => {
        this.#controller = c;
      },
      cancel: () => {
        this.closed = true;
        this.onDone(this);
      },
    });
    for (const a of this.answers.splice(0)) this.#controller!.enqueue(sseEvent(a));
    this.#resolve({ kind: 'sse', stream });
  }

  #write(text: string): void {
    if (this.closed || !this.#controller) return;
    try {
      this.#controller.enqueue(sseEvent(text));
    } catch {
      this.closed = true;
    }
  }

  #finish(): void {
    if (this.#controller) {
      this.closed = true;
      try {
        this.#controller.close();
      } catch {
        /* the client went away */
      }
    } else if (!this.#settled) {
      this.#settled = true;
      this.closed = true;
      this.#resolve({ kind: 'json', body: this.batch ? `[${this.answers.join(',')}]` : this.answers[0]! });
    }
    this.onDone(this);
  }
}

export class Session {
  readonly id = randomBytes(24).toString('base64url');
  readonly owner: string;
  readonly server: string;
  #token: string;
  readonly #relay: Relay;
  readonly #upstream: Upstream;
  readonly #exchanges: Exchange[] = [];
  #current: Exchange | undefined;
  #get: ReadableStreamDefaultController<Uint8Array> | undefined;
  /** Decoy task id → the id the client asked for (another identity's task, sent upstream as unknown). */
  readonly #decoys = new Map<string, string>();
  lastUsed = Date.now();
  /** The upstream ended (a child exited, an upstream session the server no longer knows): clients start a new session. */
  upstreamGone = false;
  #closed = false;
  readonly #o: SessionOptions;

  constructor(o: SessionOptions) {
    this.#o = o;
    this.owner = o.owner;
    this.server = o.server;
    this.#token = o.token;
    this.#upstream = startUpstream(o.spec, o.server, o.log, o.hooks?.upstreamLatency);
    this.#relay = createRelay(
      {
        pdp: o.pdp,
        server: o.server,
        callTimeoutMs: o.callTimeoutMs,
        log: o.log,
        name: 'writ gateway',
        identityToken: () => this.#token,
        ...(o.defaults ? { defaults: o.defaults } : {}),
      },
      { toServer: (d) => this.#upstream.send(typeof d === 'string' ? d : d.toString('utf8')), toClient: (t) => this.#deliver(t) },
    );
    this.#upstream.onMessage = (t) => {
      if (!this.#relay.fromServer(t)) this.#deliver(t);
    };
    this.#upstream.onClose = (status) => {
      this.upstreamGone = true;
      this.#relay.serverExited(status);
      this.#relay.serverClosed(status);
    };
  }

  /** Takes one POST body (already parsed as `msg`) with the token it came with; resolves with its answer. */
  post(text: string, msg: unknown, token: string): Promise<PostAnswer> {
    this.lastUsed = Date.now();
    this.#token = token;
    const messages = Array.isArray(msg) ? msg : [msg];
    const texts = Array.isArray(msg) ? rawElements(text) : [text];
    const exchange = new Exchange(Array.isArray(msg), (e) => {
      const i = this.#exchanges.indexOf(e);
      if (i >= 0) this.#exchanges.splice(i, 1);
    });
    let rewritten = false;
    messages.forEach((m, i) => {
      if (!isObject(m) || typeof m.method !== 'string' || !('id' in m)) return;
      // A request whose id is not a string or number is answered by the relay with id null (JSON-RPC 2.0 §5).
      exchange.waiting.set(typeof m.id === 'string' || typeof m.id === 'number' ? JSON.stringify(m.id) : 'null', m.method);
      const decoyed = this.#decoyForeignTask(m);
      if (decoyed !== undefined) {
        texts[i] = decoyed;
        rewritten = true;
      }
    });
    const out = rewritten ? (Array.isArray(msg) ? `[${texts.join(',')}]` : texts[0]!) : text;
    if (exchange.waiting.size === 0) {
      this.#relay.fromClient(out);
      return Promise.resolve({ kind: 'accepted' });
    }
    this.#exchanges.push(exchange);
    this.#current = exchange;
    try {
      this.#relay.fromClient(out);
    } finally {
      this.#current = undefined;
    }
    return exchange.answer;
  }

  /** The text to send instead of a task request naming another identity's task; undefined to send it as is. */
  #decoyForeignTask(m: Record<string, unknown>): string | undefined {
    if (!TASK_METHODS.has(m.method as string) || !isObject(m.params) || typeof m.params.taskId !== 'string') return undefined;
    if (this.#o.tasks.owner(this.server, m.params.taskId) === this.owner) return undefined;
    const decoy = `writ-unknown-task-${randomBytes(12).toString('hex')}`;
    this.#decoys.set(decoy, m.params.taskId);
    return JSON.stringify({ ...m, params: { ...m.params, taskId: decoy } });
  }

  /** Opens the session's GET stream; undefined when one is open already. */
  openGet(): ReadableStream<Uint8Array> | undefined {
    if (this.#get) return undefined;
    this.lastUsed = Date.now();
    return new ReadableStream<Uint8Array>({
      start: (c) => {
        this.#get = c;
      },
      cancel: () => {
        this.#get = undefined;
      },
    });
  }

  #deliver(text: string): void {
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      this.#o.log(`writ gateway: dropped a message from ${this.server} that is not JSON`);
      return;
    }
    if (Array.isArray(msg)) {
      for (const t of rawElements(text)) this.#deliver(t);
      return;
    }
    if (isObject(msg) && !('method' in msg) && 'id' in msg) {
      const key = JSON.stringify(msg.id);
      const exchange = msg.id === null ? this.#current : this.#exchanges.find((e) => e.waiting.has(key));
      if (!exchange) {
        this.#o.log(`writ gateway: dropped a response from ${this.server} for ${key}: no request of the client's awaits it`);
        return;
      }
      if (msg.id === null && !exchange.waiting.has('null')) {
        // The relay refused the whole message (a member repeated: the server might read it otherwise):
        // nothing of it went on, so nothing else of it will be answered.
        exchange.refuseAll(text);
        return;
      }
      const method = exchange.waiting.get(key);
      exchange.respond(key, this.#answered(method, msg, text));
      return;
    }
    const open = [...this.#exchanges].reverse().find((e) => !e.closed);
    if (open) open.push(text);
    else if (this.#get) {
      try {
        this.#get.enqueue(sseEvent(text));
      } catch {
        this.#get = undefined;
      }
    } else {
      // A notification no stream can carry is dropped (MCP: a client that wants them keeps a GET stream
      // open); a request of the server's is answered, so the server does not wait on it.
      if (isObject(msg) && typeof msg.method === 'string' && 'id' in msg) {
        this.#o.log(`writ gateway: refused a request from ${this.server} (no stream of the client's is open to carry it): ${String(msg.method).slice(0, 100)}`);
        this.#upstream.send(
          JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32603, message: 'writ gateway: the client has no stream open to carry this request' } }),
        );
      }
    }
  }

  /** A response on its way to the client, after the task rules and the metrics have seen it. */
  #answered(method: string | undefined, msg: Record<string, unknown>, text: string): string {
    if (method === 'tools/call') {
      const result = msg.result;
      const refusal =
        isObject(result) && isObject(result._meta) && isObject(result._meta[META_DECISION]) ? String(result._meta[META_DECISION].code) : undefined;
      this.#o.hooks?.callAnswered?.(this.server, 'error' in msg ? 'JSON_RPC_ERROR' : refusal);
      const task = createdTaskOf(result);
      if (task) this.#o.tasks.set(this.server, task.taskId, this.owner);
    } else if (method === 'tasks/list' && isObject(msg.result) && Array.isArray(msg.result.tasks)) {
      const mine = msg.result.tasks.filter((t) => isObject(t) && typeof t.taskId === 'string' && this.#o.tasks.owner(this.server, t.taskId) === this.owner);
      if (mine.length !== msg.result.tasks.length) return JSON.stringify({ ...msg, result: { ...msg.result, tasks: mine } });
    } else if (method !== undefined && TASK_METHODS.has(method)) {
      for (const [decoy, asked] of this.#decoys) {
        if (!text.includes(decoy)) continue;
        this.#decoys.delete(decoy);
        return text.split(decoy).join(JSON.stringify(asked).slice(1, -1));
      }
    }
    return text;
  }

  /** Calls still held by the relay (decided, running, or their outcome being posted). */
  drain(): Promise<void> {
    return this.#relay.drain();
  }

  settleLate(ms: number): Promise<number> {
    return this.#relay.settleLate(ms);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Ends the session: the GET stream, the upstream session (DELETE, or the child stopped). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#get?.close();
    } catch {
      /* already closed */
    }
    this.#get = undefined;
    await this.#upstream.close();
  }
}
