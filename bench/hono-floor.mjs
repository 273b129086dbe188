#!/usr/bin/env node
// The HTTP floor for bench/http.mjs: the same stack as `writ serve` (Hono on @hono/node-server, one
// Node thread) with no decision work at all. POST /v1/decisions reads the body, JSON.parses it and
// answers a small JSON object naming the execution id; GET /healthz answers {ok:true}.
// usage: node bench/hono-floor.mjs PORT   (listens on 127.0.0.1 only)
import { Hono } from 'hono';
import { serve } from '@hono/node-server';

const port = Number(process.argv[2] ?? 8799);
const app = new Hono();
app.get('/healthz', (c) => c.json({ ok: true }));
app.post('/v1/decisions', async (c) => {
  const body = JSON.parse(await c.req.text());
  return c.json({ decision: 'allow', execution_id: body.execution_id, state: 'invoking' });
});
const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port }, () => {
  process.stdout.write(`hono-floor listening on 127.0.0.1:${port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
