/** The X-Request-ID header, echoed on every answer (src/http/app.ts and the HTTP fronts). */
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * AuthZEN 1.0 (request identification): the PDP echoes the PEP's X-Request-ID, errors included, so a
 * PEP can match answers and logs — any value HTTP can carry back unchanged (the bytes as received).
 */
export function echoedRequestId(header: string | string[] | undefined): string | undefined {
  return typeof header === 'string' && /^[\t\x20-\x7e\x80-\xff]+$/.test(header) ? header : undefined;
}

/** Sets the echo on a Node response before anything is written (the fronts, a refused request target). */
export function echoRequestId(req: IncomingMessage, res: ServerResponse): void {
  const requestId = echoedRequestId(req.headers['x-request-id']);
  if (requestId !== undefined) res.setHeader('X-Request-ID', requestId);
}
