/**
 * The app's request-target checks, on every route (the listener's own checks of the request line come
 * first: src/http/request-target.ts): a path segment that does not percent-decode to UTF-8, and a query
 * parameter given twice.
 */
import type { MiddlewareHandler } from 'hono';
import { WritError } from '../errors.js';
import { rawPathOf, undecodableSegment } from './paths.js';

/** Every path segment must percent-decode to UTF-8 (else Hono keeps the raw text). */
export const decodablePath: MiddlewareHandler = async (c, next) => {
  const bad = c.req.url.indexOf('%') < 0 ? undefined : undecodableSegment(rawPathOf(c.req.url));
  if (bad !== undefined) throw new WritError('INVALID_REQUEST', `path segment ${JSON.stringify(bad)} is not valid percent-encoded UTF-8`);
  await next();
};

/**
 * A query parameter given twice (`?actor=A&actor=B`) is refused, not read as its first value: a proxy
 * or gateway in front that reads the last one would check another request than the one writ serves.
 */
export const singleQueryParameters: MiddlewareHandler = async (c, next) => {
  const q = c.req.url.indexOf('?');
  if (q >= 0) {
    const seen = new Set<string>();
    for (const name of new URLSearchParams(c.req.url.slice(q + 1)).keys()) {
      if (seen.has(name)) throw new WritError('INVALID_REQUEST', `query parameter ${name} is given more than once`);
      seen.add(name);
    }
  }
  await next();
};
