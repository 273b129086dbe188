/**
 * A request a front handed over by message (protocol.ts ForwardedRequest), as the sidecar's own Hono app
 * reads it. Hono and the app's routes read a request's url, method and headers, and its whole body at
 * once (`arrayBuffer`, since a front hands over only bodies with a declared length): those are served
 * from the message as is. Building a web (undici) Request for them instead cost ≈ 0.26 ms on a sequential
 * outcome plus the body's stream, on every forwarded request. Anything else a Request has is served by a
 * real Request, made from the same message on first use, so every route still answers as it does on the
 * sidecar's own listener.
 */
import type { ForwardedRequest } from './protocol.js';

const DELEGATED = [
  'body',
  'cache',
  'credentials',
  'destination',
  'duplex',
  'integrity',
  'keepalive',
  'mode',
  'redirect',
  'referrer',
  'referrerPolicy',
  'signal',
] as const;
const DELEGATED_METHODS = ['blob', 'bytes', 'clone', 'formData'] as const;

class MessageRequest {
  readonly url: string;
  readonly method: string;
  readonly headers: Headers;
  readonly #message: ForwardedRequest;
  #used = false;
  #real: Request | undefined;

  constructor(message: ForwardedRequest) {
    this.#message = message;
    this.url = `http://127.0.0.1${message.url}`;
    this.method = message.method;
    this.headers = new Headers(message.headers);
  }

  /** The same request as a web Request (made once, on first use of a member served only by one). */
  real(): Request {
    if (this.#real === undefined) {
      const m = this.#message;
      this.#real = new Request(this.url, { method: m.method, headers: m.headers, ...(hasBody(m.method) ? { body: m.body as Uint8Array<ArrayBuffer> } : {}) });
    }
    return this.#real;
  }

  get bodyUsed(): boolean {
    return this.#used || (this.#real?.bodyUsed ?? false);
  }

  arrayBuffer(): Promise<ArrayBuffer> {
    if (this.#real !== undefined) return this.#real.arrayBuffer();
    if (this.#used) return Promise.reject(new TypeError('Body is unusable: Body has already been read'));
    this.#used = true;
    const bytes = this.#message.body;
    // A copy, as Request.arrayBuffer gives: the message's buffer may be a view into a larger one.
    return Promise.resolve(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
  }

  async text(): Promise<string> {
    return new TextDecoder().decode(await this.arrayBuffer());
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }
}

for (const name of DELEGATED) {
  Object.defineProperty(MessageRequest.prototype, name, {
    get(this: MessageRequest) {
      return (this.real() as unknown as Record<string, unknown>)[name];
    },
  });
}
for (const name of DELEGATED_METHODS) {
  Object.defineProperty(MessageRequest.prototype, name, {
    value(this: MessageRequest, ...args: unknown[]) {
      const real = this.real() as unknown as Record<string, (...a: unknown[]) => unknown>;
      return real[name]!.apply(real, args);
    },
  });
}

function hasBody(method: string): boolean {
  return method !== 'GET' && method !== 'HEAD';
}

/** The forwarded request as the app's fetch takes it. */
export function forwardedRequest(message: ForwardedRequest): Request {
  return new MessageRequest(message) as unknown as Request;
}
