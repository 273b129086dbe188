/** The console's HTTP surface: the page, its assets, content types, CSP, caching and the redirect. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Hono } from 'hono';
import { CONSOLE_CSP, registerConsoleRoutes } from '../../src/console/routes.js';
import { TokenTable } from '../../src/http/auth.js';

const app = new Hono();
registerConsoleRoutes(app, {
  tokens: new TokenTable([
    { token: 'the-auditor', role: 'auditor' },
    { token: 'a-pep', role: 'pep', actor: { type: 'Agent', id: 'a' } },
  ]),
});

test('GET /console redirects to /console/', async () => {
  const res = await app.request('/console');
  assert.equal(res.status, 308);
  assert.equal(res.headers.get('location'), '/console/');
});

test('the page and its assets, with their types, the CSP and revalidation', async () => {
  const cases: Array<[string, RegExp]> = [
    ['/console/', /^text\/html/],
    ['/console/app.js', /^text\/javascript/],
    ['/console/verify.js', /^text\/javascript/],
    ['/console/jcs.js', /^text\/javascript/],
    ['/console/console.css', /^text\/css/],
    ['/console/favicon.svg', /^image\/svg\+xml/],
    ['/console/favicon.ico', /^image\/svg\+xml/],
    ['/favicon.ico', /^image\/svg\+xml/],
  ];
  for (const [path, type] of cases) {
    const res = await app.request(path);
    assert.equal(res.status, 200, path);
    assert.match(res.headers.get('content-type') ?? '', type, path);
    assert.equal(res.headers.get('content-security-policy'), CONSOLE_CSP);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    const etag = res.headers.get('etag')!;
    assert.ok(etag, path);
    const again = await app.request(path, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304, path);
  }
  assert.match(CONSOLE_CSP, /default-src 'self'/);
  const html = await (await app.request('/console/')).text();
  // Every reference is relative to the page: nothing from another origin.
  assert.doesNotMatch(html, /(src|href)="(https?:)?\/\//);
  assert.match(html, /<script type="module" src="app.js"><\/script>/);
  assert.match(html, /rel="icon" href="favicon.svg"/);
});

test('nothing else under /console/ is served', async () => {
  for (const path of ['/console/app.ts', '/console/app.js.map', '/console/..%2Froutes.js', '/console/index.html', '/console/nope.js']) {
    assert.equal((await app.request(path)).status, 404, path);
  }
});

test("GET /console/session says whether the token is an auditor's, always with 200", async () => {
  const ask = async (authorization?: string) => {
    const res = await app.request('/console/session', authorization ? { headers: { authorization } } : {});
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    return (await res.json()).auditor;
  };
  assert.equal(await ask('Bearer the-auditor'), true);
  assert.equal(await ask('Bearer a-pep'), false);
  assert.equal(await ask('Bearer nope'), false);
  assert.equal(await ask('Basic dGhlLWF1ZGl0b3I='), false);
  assert.equal(await ask(), false);
});

test('the browser modules import only each other (no Node built-ins, no packages to resolve)', async () => {
  const { readdirSync, readFileSync } = await import('node:fs');
  const dir = new URL('../../src/console/web/', import.meta.url);
  const modules = readdirSync(dir).filter((f) => f.endsWith('.js'));
  assert.ok(modules.includes('app.js') && modules.includes('verify.js'));
  for (const file of modules) {
    const text = readFileSync(new URL(file, dir), 'utf8');
    for (const m of text.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+['"]([^'"]+)['"]/gm)) {
      assert.match(m[1]!, /^\.\/[a-z][a-z0-9-]*\.js$/, `${file} imports ${m[1]}`);
      assert.ok(modules.includes(m[1]!.slice(2)), `${file} imports ${m[1]}, which is served`);
    }
  }
});
