/**
 * A raw HTTP/1.1 exchange over a socket, for what a fetch client hides: a body still being sent after
 * the server answered (413 and the lingering close), chunked framing, resets.
 */
import { connect } from 'node:net';

/** A raw HTTP/1.1 exchange: writes `head` (+ `body` chunks, paced), collects everything until the server closes. */
export function rawExchange(
  url: string,
  head: string,
  body: { chunk: Buffer; total: number } | Buffer[] = [],
): Promise<{ answer: string; error?: string; sentBytes: number }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    const received: Buffer[] = [];
    let sent = 0;
    let error: string | undefined;
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      const out: { answer: string; error?: string; sentBytes: number } = { answer: Buffer.concat(received).toString('latin1'), sentBytes: sent };
      if (error !== undefined) out.error = error;
      resolve(out);
    };
    socket.on('data', (d) => received.push(d));
    socket.on('error', (e) => {
      error = (e as NodeJS.ErrnoException).code ?? e.message;
    });
    socket.on('end', () => socket.end());
    socket.on('close', finish);
    socket.on('connect', () => {
      socket.write(head);
      if (Array.isArray(body)) {
        for (const b of body) socket.write(b);
        return;
      }
      // Keep sending, a chunk every few ms, whatever the server has answered meanwhile: a slow sender is what
      // the callers test (an answer that comes while the body is still arriving), so the pace is fixed.
      const pump = () => {
        if (socket.destroyed || !socket.writable || sent >= body.total) return;
        const n = Math.min(body.chunk.length, body.total - sent);
        sent += n;
        socket.write(n === body.chunk.length ? body.chunk : body.chunk.subarray(0, n), () => setTimeout(pump, 25));
      };
      pump();
    });
  });
}
