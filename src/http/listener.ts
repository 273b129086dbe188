/**
 * The Node listener that serves the app (src/http/app.ts) on a port: the sidecar's own and a replica's
 * while it waits for its database. Before the app sees a request, its request line and Host are judged
 * (src/http/request-target.ts) and a bad one refused in the contract's shape rather than with Node's
 * bare 400; slow or idle clients are cut (hundreds of idle sockets would hold resources forever).
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { cutSlowClients, refusedRequestTarget } from './request-target.js';
import { answeredBeforeBody, closeAfterAnswer } from './linger.js';
import { createPublicServer, type TlsMaterial } from './tls.js';

export interface AppListenerOptions {
  /** HTTPS with this certificate; plain HTTP without. */
  tls?: TlsMaterial | undefined;
  /** The host the request URL names when a request sends no Host (HTTP/1.0). */
  hostname?: string;
  /** Every answer closes its connection (a waiting replica: a client's next request reaches the real start). */
  closeEveryConnection?: boolean;
}

type Fetch = (request: Request, env: unknown) => Response | Promise<Response>;

export function appServer(fetch: Fetch, o: AppListenerOptions = {}): Server {
  const listener = appRequestListener(fetch, o);
  // No Host on HTTP/1.1 is refused by requestTargetProblem in the §8 shape, not by Node's bare 400.
  const server = createPublicServer(o.tls, { requireHostHeader: false }, (req, res) => {
    if (!refusedRequestTarget(req, res)) listener(req, res);
  });
  cutSlowClients(server);
  return server;
}

/** The app as a Node request listener (the request target already judged): the one way a Node request reaches it. */
export function appRequestListener(fetch: Fetch, o: Omit<AppListenerOptions, 'tls'> = {}): (req: IncomingMessage, res: ServerResponse) => void {
  const answer = async (request: Request, env: unknown): Promise<Response> => {
    const res = await fetch(request, env);
    // Answered before the body was read (413, or a refusal on the headers): linger, then close, so the
    // unread rest is not taken for the next request.
    if (o.closeEveryConnection || res.status === 413 || answeredBeforeBody(env)) closeAfterAnswer(env);
    return res;
  };
  const listener = getRequestListener(answer, o.hostname === undefined ? {} : { hostname: o.hostname });
  return (req, res) => void listener(req, res);
}
