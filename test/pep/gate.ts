/**
 * An HTTP forwarder in front of a PDP for the PEP's tests: it logs every request and can hold the
 * answers to chosen decision requests (the PDP has decided; the PEP has not heard yet).
 */
import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Gate {
  url: string;
  /** Every request forwarded: method, path, execution id of a decision, raw body. */
  log: Array<{ method: string; path: string; executionId?: string; body: string }>;
  /** Decision answers for these execution ids are held (the PDP has decided; the PEP has not heard). */
  hold(id: string): void;
  /** Resolves once the PDP has answered the held decision for `id` (the answer is now waiting here). */
  heldAnswer(id: string): Promise<void>;
  release(id: string): void;
  stop(): Promise<void>;
}

/** An HTTP forwarder in front of the PDP that can hold the answers to chosen decision requests. */
export async function startGate(upstream: string): Promise<Gate> {
  const up = new URL(upstream);
  const log: Gate['log'] = [];
  const held = new Map<string, { answered: Promise<void>; markAnswered: () => void; released: Promise<void>; release: () => void }>();
  const slot = (id: string) => {
    let s = held.get(id);
    if (!s) {
      let markAnswered!: () => void;
      let release!: () => void;
      const answered = new Promise<void>((r) => (markAnswered = r));
      const released = new Promise<void>((r) => (release = r));
      s = { answered, markAnswered, released, release };
      held.set(id, s);
    }
    return s;
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      let executionId: string | undefined;
      if (req.url === '/v1/decisions') {
        try {
          executionId = JSON.parse(body.toString('utf8')).execution_id;
        } catch {
          /* forwarded as is */
        }
      }
      log.push({ method: req.method ?? '', path: req.url ?? '', body: body.toString('utf8'), ...(executionId ? { executionId } : {}) });
      const headers: IncomingHttpHeaders = { ...req.headers, host: up.host };
      const f = request({ host: up.hostname, port: up.port, path: req.url, method: req.method, headers }, (r) => {
        const b: Buffer[] = [];
        r.on('data', (c: Buffer) => b.push(c));
        r.on('end', () => {
          const s = executionId !== undefined ? held.get(executionId) : undefined;
          const answer = () => {
            res.writeHead(r.statusCode ?? 502, r.headers);
            res.end(Buffer.concat(b));
          };
          if (s) {
            s.markAnswered();
            void s.released.then(answer);
          } else answer();
        });
      });
      f.on('error', () => {
        res.writeHead(502);
        res.end();
      });
      f.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    log,
    hold: (id) => void slot(id),
    heldAnswer: (id) => slot(id).answered,
    release: (id) => slot(id).release(),
    stop: () =>
      new Promise<void>((r) => {
        for (const s of held.values()) s.release();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
