/** The X-Request-ID header, echoed on every answer (src/http/app.ts and the HTTP fronts). */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { MiddlewareHandler } from 'hono';

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

/**
 * The app's middleware: X-Request-ID is echoed on every answer, errors included (AuthZEN 1.0 asks it of
 * its routes; a PEP or a proxy can match any answer to its request the same way).
 */
export const echoRequestIdHeader: MiddlewareHandler = async (c, next) => {
  const requestId = echoedRequestId(c.req.header('x-request-id'));
  if (requestId !== undefined) c.header('X-Request-ID', requestId);
  await next();
};
