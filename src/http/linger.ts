/**
 * Closing a connection after an answer sent before the request body was read (413): the client gets
 * the whole answer and a clean end of stream, whatever it is still sending.
 *
 * Why this is needed: Node (and @hono/node-server's clean-up of unread bodies, after 500 ms) destroys
 * such a socket as soon as the answer is flushed. Destroying a socket that still has unread bytes
 * makes the kernel send a TCP reset, and a client still writing its body then sees EPIPE/ECONNRESET,
 * often without ever reading the 413. The remedy is the classic "lingering close": send the answer
 * with `Connection: close`, half-close our side (FIN after the answer), keep reading and discarding
 * what the client sends until it closes its side, and only then (or after LINGER_MS) destroy.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** How long a refused client may keep sending before the socket is destroyed regardless. */
export const LINGER_MS = 5_000;

const lingering = new WeakSet<Socket>();

function lingerThenClose(socket: Socket, incoming: IncomingMessage): void {
  if (lingering.has(socket)) return;
  lingering.add(socket);
  if (socket.destroyed) return;
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  socket.once('end', () => socket.destroy()); // the client closed its side: nothing left to read
  socket.end(); // FIN after the queued answer
  incoming.resume(); // discard the rest of the body (the HTTP parser stops reading while it is paused)
  socket.resume();
}

/**
 * Marks the answer being sent on this connection as the last one and replaces the socket's immediate
 * destroy with a lingering close. `env` is what @hono/node-server passes as the fetch env
 * (`{incoming, outgoing}`); anything else (e.g. `app.request` in tests) is left alone.
 */
export function closeAfterAnswer(env: unknown): void {
  const { incoming, outgoing } = (env ?? {}) as { incoming?: unknown; outgoing?: unknown };
  if (!(outgoing instanceof ServerResponse) || !(incoming instanceof IncomingMessage)) return;
  const socket = outgoing.socket;
  if (!socket) return;
  if (!outgoing.headersSent) outgoing.shouldKeepAlive = false; // answered with `Connection: close`
  // Node calls socket.destroySoon() once a `Connection: close` answer is flushed, and
  // @hono/node-server calls it when its drain of the unread body times out: both now linger.
  socket.destroySoon = () => lingerThenClose(socket, incoming);
}

/**
 * True when the answer is ready before the request's declared body has all arrived (a refusal on the
 * headers: 401, 403, 413…). The unread rest would otherwise be drained for a while and the socket then
 * destroyed under the client (@hono/node-server), or be taken for the next request's bytes.
 */
export function answeredBeforeBody(env: unknown): boolean {
  const { incoming } = (env ?? {}) as { incoming?: unknown };
  if (!(incoming instanceof IncomingMessage) || incoming.complete) return false;
  const declared = Number(incoming.headers['content-length'] ?? 0);
  return declared > 0 || incoming.headers['transfer-encoding'] !== undefined;
}
