/**
 * Request-path hygiene for the HTTP shell, independent of any one route: path segments that cannot be
 * percent-decoded, and the methods a known path admits (for 405 with `Allow`). Pure.
 */

/**
 * The first segment of a raw (still percent-encoded) URL path that is not valid percent-encoding of
 * UTF-8 (`%E9`, `%zz`, a lone `%`), or undefined. Hono's param decoding keeps such a segment as the
 * raw text, so `PUT /v1/entities/Employee/%E9` would otherwise store the id `%E9`.
 */
export function undecodableSegment(rawPath: string): string | undefined {
  if (rawPath.indexOf('%') < 0) return undefined;
  for (const segment of rawPath.split('/')) {
    if (segment.indexOf('%') < 0) continue;
    try {
      decodeURIComponent(segment);
    } catch {
      return segment;
    }
  }
  return undefined;
}

/** The path part of a request URL, as sent (no decoding). */
export function rawPathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('://') + 3);
  if (start < 0) return '/';
  const end = url.search(/[?#]/);
  return end < 0 || end < start ? url.slice(start) : url.slice(start, end);
}

interface RouteLike {
  method: string;
  path: string;
}

/** Compiles a Hono route path (`/v1/executions/:id/outcome`, `/console/*`) into a whole-path matcher. */
function routeMatcher(path: string): RegExp {
  const parts = path.split('/').map((part) => {
    if (part === '*') return '.*';
    if (part.startsWith(':')) return '[^/]+';
    return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  });
  // Exact, as Hono's router is: `/v1/decisions/` is not `/v1/decisions` (404, not 405).
  return new RegExp(`^${parts.join('/')}$`);
}

/**
 * The methods that routes registered for `path` answer, sorted (HEAD wherever GET is; middleware
 * registered for every method does not count), or [] when no route has this path.
 */
export function allowedMethods(routes: readonly RouteLike[], path: string): string[] {
  const methods = new Set<string>();
  for (const r of routes) {
    if (r.method === 'ALL' || r.path === '*' || r.path === '/*') continue;
    if (routeMatcher(r.path).test(path)) methods.add(r.method.toUpperCase());
  }
  if (methods.has('GET')) methods.add('HEAD');
  return [...methods].sort();
}
