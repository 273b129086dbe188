/**
 * The request object the sidecar's app gets for a request a front handed over by message: the members
 * the app reads come from the message as is, and every other member of a web Request still works.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Hono } from 'hono';
import { forwardedRequest } from '../../src/front/forwarded-request.js';

const text = JSON.stringify({ status: 'committed', detail: 'é ✓' });
const message = () => {
  // A view into a larger buffer, as a message's bytes may be.
  const whole = new TextEncoder().encode(`xx${text}yy`);
  return {
    method: 'POST',
    url: '/v1/executions/E-1/outcome?x=1',
    headers: [
      ['authorization', 'Bearer t'],
      ['content-type', 'application/json'],
      ['x-dup', 'a'],
      ['x-dup', 'b'],
    ] as Array<[string, string]>,
    body: whole.subarray(2, whole.length - 2),
  };
};

test('url, method, headers and the body come from the message; the body reads once', async () => {
  const r = forwardedRequest(message());
  assert.equal(r.url, 'http://127.0.0.1/v1/executions/E-1/outcome?x=1');
  assert.equal(r.method, 'POST');
  assert.equal(r.headers.get('authorization'), 'Bearer t');
  assert.equal(r.headers.get('x-dup'), 'a, b');
  assert.equal(r.bodyUsed, false);
  const bytes = await r.arrayBuffer();
  assert.equal(new TextDecoder().decode(bytes), text);
  assert.equal(bytes.byteLength, new TextEncoder().encode(text).byteLength, 'exactly the body, not the buffer around it');
  assert.equal(r.bodyUsed, true);
  await assert.rejects(r.arrayBuffer(), TypeError);
  assert.deepEqual(await forwardedRequest(message()).json(), JSON.parse(text));
  assert.equal(await forwardedRequest(message()).text(), text);
});

test('every other Request member is a real Request made from the same message', async () => {
  const r = forwardedRequest(message());
  assert.ok(r.signal instanceof AbortSignal);
  assert.equal(r.redirect, 'follow');
  const copy = r.clone();
  assert.equal(copy.url, r.url);
  assert.equal(await copy.text(), text);
  assert.equal(new TextDecoder().decode(await forwardedRequest(message()).bytes()), text);
});

test('a Hono app routes and reads it as it reads a web Request', async () => {
  const app = new Hono();
  app.post('/v1/executions/:id/outcome', async (c) =>
    c.json({
      id: c.req.param('id'),
      x: c.req.query('x'),
      auth: c.req.header('authorization'),
      body: await c.req.raw.arrayBuffer().then((b) => new TextDecoder().decode(b)),
    }),
  );
  const fromMessage = await app.fetch(forwardedRequest(message()));
  const m = message();
  const fromWeb = await app.fetch(new Request(`http://127.0.0.1${m.url}`, { method: m.method, headers: m.headers, body: m.body }));
  assert.equal(fromMessage.status, 200);
  assert.deepEqual(await fromMessage.json(), await fromWeb.json());
  const missing = await app.fetch(forwardedRequest({ ...message(), url: '/v1/nowhere' }));
  assert.equal(missing.status, 404);
});
