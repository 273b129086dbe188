/**
 * Serves the auditor console (docs/protocol.md §11) from the sidecar itself: the page and its assets
 * need no auth (every data call the page makes carries the auditor token the user types).
 *
 * Where the files come from, so that a git checkout (after `npm ci`, whose `prepare` runs tsc) and an
 * installed package both have them: the browser modules are compiled by the project's tsc next to
 * this file (dist/src/console/web/*.js); the HTML, CSS and favicon are checked in under
 * src/console/static/ and copied by the build to dist/src/console/static/, beside this module.
 */
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import type { Env, Hono } from 'hono';
import { isWritError } from '../errors.js';
import type { Caller } from '../identity/caller.js';

/** What the console needs of the sidecar's token table. */
export interface TokenChecker {
  authenticate(header: string | undefined): Caller | readonly Caller[] | Promise<Caller | readonly Caller[]>;
}

const WEB_DIR = new URL('./web/', import.meta.url);
// The build copies src/console/static/ beside this module (scripts/build.mjs): the same place in a
// checkout and in an installed package, which has no src/.
const STATIC_DIR = new URL('./static/', import.meta.url);

/** Nothing but this origin: scripts, styles, images and fetches (docs/protocol.md §11). */
export const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

function typeOf(name: string): string | undefined {
  const dot = name.lastIndexOf('.');
  return dot < 0 ? undefined : TYPES[name.slice(dot)];
}

/** Reads every servable file once: the page's assets, by URL name (`''` is the page itself). */
function loadAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  const add = (urlName: string, dir: URL, file: string) => {
    const type = typeOf(file);
    if (!type) return;
    const body = readFileSync(new URL(file, dir));
    assets.set(urlName, { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });
  };
  for (const file of readdirSync(STATIC_DIR)) if (file !== 'index.html') add(file, STATIC_DIR, file);
  add('', STATIC_DIR, 'index.html');
  for (const file of readdirSync(WEB_DIR)) if (/^[a-z][a-z0-9-]*\.js$/.test(file)) add(file, WEB_DIR, file);
  // For clients that ask for the conventional name: the same icon (SVG, typed as such).
  const icon = assets.get('favicon.svg');
  if (icon) assets.set('favicon.ico', icon);
  return assets;
}

/**
 * Registers GET /console (redirect), /console/, /console/<asset>, and GET /console/session, which
 * tells the sign-in form whether the bearer token is an auditor's: `{auditor: true|false}`, always
 * 200, so a mistyped token is shown as `unauthorized` without a failed request in the browser's
 * console. It reveals no more than any auditor route's 401/403 would (same constant-time check).
 */
export function registerConsoleRoutes<E extends Env>(app: Hono<E>, o: { tokens: TokenChecker }): void {
  let assets: Map<string, Asset> | undefined;
  const serve = (name: string, ifNoneMatch: string | undefined): Response | undefined => {
    assets ??= loadAssets();
    const asset = assets.get(name);
    if (!asset) return undefined;
    const headers: Record<string, string> = {
      'content-type': asset.type,
      'content-security-policy': CONSOLE_CSP,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      // Always revalidate (cheap, by ETag): a sidecar upgrade must never leave an old page half-cached.
      'cache-control': name.startsWith('favicon.') ? 'public, max-age=86400' : 'no-cache',
      etag: asset.etag,
    };
    if (ifNoneMatch === asset.etag) return new Response(null, { status: 304, headers });
    return new Response(new Uint8Array(asset.body), { status: 200, headers });
  };

  app.get('/console', (c) => c.redirect('/console/', 308));
  app.get('/console/session', async (c) => {
    let auditor = false;
    try {
      auditor = [await o.tokens.authenticate(c.req.header('authorization'))].flat().some((caller) => caller.role === 'auditor');
    } catch (e) {
      if (!isWritError(e)) throw e;
    }
    return c.json({ auditor }, 200, { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
  });
  app.get('/console/', (c) => serve('', c.req.header('if-none-match')) ?? c.notFound());
  // The conventional root name too, for clients that ask there whatever the page links.
  app.get('/favicon.ico', (c) => serve('favicon.ico', c.req.header('if-none-match')) ?? c.notFound());
  app.get('/console/:file', (c) => serve(c.req.param('file') ?? '', c.req.header('if-none-match')) ?? c.notFound());
}
