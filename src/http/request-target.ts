/**
 * The request line and Host a request must have before any route sees it — one judgement for the
 * sidecar's own listener and the HTTP fronts, so both modes answer the same (and in the §8 error shape:
 * @hono/node-server would otherwise answer a bare 400 with no body). It mirrors what that adapter
 * refuses (a backslash in the path, a Host that is no host) and the one rewrite it makes (dot segments,
 * `/v1/./decisions` is `/v1/decisions`, as WHATWG URL resolves them).
 */
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { WritError, type ErrorCode } from '../errors.js';
import { closeAfterAnswer } from './linger.js';
import { echoRequestId } from './request-id.js';

/** The `route` label of writ_http_requests_total for an answer given before any route was found. */
export const UNROUTED = 'unrouted';
type UnroutedReport = (status: number, code: ErrorCode, message: string) => void;
let reportUnrouted: UnroutedReport = () => {};
/**
 * Told of every answer given here, before any route sees the request (a refused request line or Host, a
 * request Node's HTTP parser refused), so that the thread serving /metrics counts it: src/http/answer-metrics.ts
 * on the main thread; a front thread posts it there. Nothing is counted until one is set.
 */
export function reportUnroutedAnswersTo(report: UnroutedReport): void {
  reportUnrouted = report;
}

const VALID_HOST = /^[a-z0-9._-]+(?::(?:[1-5]\d{3,4}|[6-9]\d{3}))?$/;
const DOT_SEGMENT = /\/\.\.?(?:[/?#]|$)/;

/**
 * Why a request cannot be served for its request line or Host, or undefined. Its server is created with
 * `requireHostHeader: false`, so that a missing Host is answered here in the §8 shape, not by Node's
 * bare 400. Host is read from every field sent: two Host fields (RFC 9112 §3.2: 400) would otherwise be
 * judged by the first and reach the routes joined (`a, b`), which discovery would echo.
 */
export function requestTargetProblem(req: IncomingMessage): string | undefined {
  // Counted over the raw fields (a short loop on every request; req.headersDistinct would build an
  // object of arrays for all of them).
  let hosts = 0;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 4 && name.toLowerCase() === 'host') hosts++;
  }
  if (hosts > 1) return 'the request sends more than one Host header';
  if (hosts === 0 && req.httpVersionMajor === 1 && req.httpVersionMinor >= 1) return 'an HTTP/1.1 request must send a Host header';
  return targetProblem(req.headers.host, req.url ?? '/');
}

function targetProblem(host: string | undefined, url: string): string | undefined {
  // The asterisk form (`OPTIONS *`) and anything else that is neither a path nor an absolute URL.
  if (!url.startsWith('/') && !/^https?:\/\//i.test(url)) return 'the request target is not a path';
  const backslash = url.indexOf('\\');
  if (backslash !== -1) {
    const query = url.indexOf('?');
    if (query === -1 || backslash < query) return 'the request path has a backslash';
  }
  if (host !== undefined && !VALID_HOST.test(host)) {
    let parsed: URL;
    try {
      parsed = new URL(`http://${host}/`);
    } catch {
      return 'the Host header is not a host';
    }
    const bare = host.includes(':') ? host.replace(/:\d+$/, '') : host;
    if (parsed.hostname.length !== host.length && parsed.hostname !== bare.toLowerCase()) return 'the Host header is not a host';
  }
  return undefined;
}

/** The target with dot segments resolved (`/v1/x/../decisions` → `/v1/decisions`); itself when it has none. */
export function withoutDotSegments(url: string): string {
  if (!DOT_SEGMENT.test(url) || !url.startsWith('/')) return url;
  const resolved = new URL(url, 'http://host');
  return resolved.pathname + resolved.search;
}

/** Answers a request whose target is refused: 400 INVALID_REQUEST, and the connection ends after it. */
export function refuseRequestTarget(res: ServerResponse, problem: string): void {
  const text = JSON.stringify(new WritError('INVALID_REQUEST', problem).toBody());
  res.writeHead(400, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), connection: 'close' });
  res.end(text);
  reportUnrouted(400, 'INVALID_REQUEST', problem);
}

/**
 * The value of a header the request sends at most once, or undefined when it sends none — or several:
 * Node keeps only the first `Authorization` / `Content-Type` of a request that repeats one, while the
 * sidecar's app sees them joined and refuses them; a front must not act on the first alone.
 */
export function singleHeader(req: IncomingMessage, name: string): string | undefined {
  let found: string | undefined;
  let count = 0;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const key = raw[i]!;
    if (key.length === name.length && key.toLowerCase() === name) {
      found = raw[i + 1];
      if (++count > 1) return undefined;
    }
  }
  return found;
}

/**
 * Node's answer to a request its HTTP parser refuses (a method it does not know, bad bytes in the
 * target, two Content-Length headers, headers past the size limit) is a bare status with no body. This
 * one is the same status in the §8 shape, so that every answer a client gets is `{"error": …}`.
 * Installed as the `clientError` listener of every listener the sidecar owns.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  // As Node's own handler: no answer in the middle of one already being sent on this connection.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  // The same statuses Node's own handler picks.
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const message =
    status === 431
      ? 'the request headers are too large'
      : status === 408
        ? 'the request was not received in time'
        : `the request is not valid HTTP/1.1 (${err.code ?? 'parse error'})`;
  const body = JSON.stringify(new WritError('INVALID_REQUEST', message, { status }).toBody());
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
  reportUnrouted(status, 'INVALID_REQUEST', message);
}

/**
 * Refuses a request whose request line or Host is bad (requestTargetProblem), in the contract's
 * shape and before any route, then closes the connection; true when it did. Every listener of writ
 * judges the request target this way (src/http/listener.ts, the HTTP fronts').
 */
export function refusedRequestTarget(req: IncomingMessage, res: ServerResponse): boolean {
  const problem = requestTargetProblem(req);
  if (problem === undefined) return false;
  echoRequestId(req, res);
  closeAfterAnswer({ incoming: req, outgoing: res });
  refuseRequestTarget(res, problem);
  return true;
}

/** Slow or idle clients must not hold resources forever (hundreds of idle sockets would): every listener's limits. */
export function cutSlowClients(server: Server): void {
  server.on('clientError', answerClientError);
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  server.keepAliveTimeout = 5_000;
}
