/**
 * The AuthZEN routes (docs/protocol.md §10), registered on the sidecar's Hono app by one call from
 * src/http/app.ts. Errors go through the app's onError, so they have the contract's shape (§8).
 */
import type { Context, Env, Hono } from 'hono';
import type { Role } from '../config/config.js';
import type { Caller } from '../identity/caller.js';
import type { AuthzenService } from './handler.js';
import { AUTHZEN_EVALUATION_PATH, AUTHZEN_EVALUATIONS_PATH } from './request.js';

export { AUTHZEN_EVALUATION_PATH, AUTHZEN_EVALUATIONS_PATH };
export const AUTHZEN_CONFIGURATION_PATH = '/.well-known/authzen-configuration';
/** AuthZEN 1.0 §8 search endpoints. */
export const AUTHZEN_SEARCH_PATHS = {
  subject: '/access/v1/search/subject',
  resource: '/access/v1/search/resource',
  action: '/access/v1/search/action',
} as const;

/** Where discovery says this sidecar is. */
export interface DiscoveryDeps {
  /** `http://host:port` of the sidecar's listener, once it listens (for a request with no Host header). */
  publicOrigin?: () => string | undefined;
  /** The configured `public_url` (no trailing slash): named whatever Host a request sends. */
  publicUrl?: string;
}

export interface AuthzenDeps extends DiscoveryDeps {
  /** Evaluates and records (AuthzenService over the decision core, or an HTTP front's way to it). */
  service: Pick<AuthzenService, 'evaluate' | 'search'>;
  /** The caller as a route admitting `roles` takes it (src/http/route-kit.ts): 401, 403, or the backend's refusal. */
  callerIn: (c: Context, roles: readonly Role[]) => Promise<Caller>;
  /** Reads the JSON body text with the app's limits (413, 415, strict UTF-8). */
  readBody: (c: Context) => Promise<string>;
}

/**
 * `<scheme>://<host>` of this sidecar as the request reached it: its Host header exactly as sent (AuthZEN
 * discovery compares the identifier with the URL the client used, character for character: no case or
 * default-port normalisation), or — an HTTP/1.0 request may send none — the address the sidecar listens
 * on (not a URL without its port). The
 * Host header's syntax was checked before any route ran (src/http/request-target.ts).
 */
function originOf(c: Context, deps: DiscoveryDeps): string {
  // Pinned by the operator: a Host header a client (or a cache in front) sends cannot redirect discovery.
  if (deps.publicUrl) return deps.publicUrl;
  const host = c.req.header('host');
  // The scheme is the public port's (https with TLS files), not that of the listener that answered:
  // the listener's address as it names it publicly.
  const listening = deps.publicOrigin?.();
  if (host) return `${new URL(listening ?? c.req.url).protocol}//${host}`;
  return listening ?? new URL(c.req.url).origin;
}

export function registerAuthzenRoutes<E extends Env>(app: Hono<E>, deps: AuthzenDeps): void {
  const { service } = deps;
  // X-Request-ID is echoed by the app for every route (src/http/request-id.ts), errors included.
  const authenticate = (c: Context): Promise<Caller> => deps.callerIn(c, ['evaluator', 'pep']);
  app.post(AUTHZEN_EVALUATION_PATH, async (c) => {
    const caller = await authenticate(c);
    return c.json(await service.evaluate(caller, await deps.readBody(c), false));
  });
  app.post(AUTHZEN_EVALUATIONS_PATH, async (c) => {
    const caller = await authenticate(c);
    return c.json(await service.evaluate(caller, await deps.readBody(c), true));
  });
  // Search (docs/protocol.md §15): which subjects, resources or actions make an evaluation true.
  for (const kind of ['subject', 'resource', 'action'] as const) {
    app.post(AUTHZEN_SEARCH_PATHS[kind], async (c) => {
      const caller = await authenticate(c);
      return c.json(await service.search(caller, await deps.readBody(c), kind));
    });
  }
  registerAuthzenDiscovery(app, deps);
}

/** GET /.well-known/authzen-configuration. It needs no store: a replica still waiting for its database answers it too. */
function registerAuthzenDiscovery<E extends Env>(app: Hono<E>, deps: DiscoveryDeps): void {
  app.get(AUTHZEN_CONFIGURATION_PATH, (c) => {
    const origin = originOf(c, deps);
    return c.json({
      policy_decision_point: origin,
      access_evaluation_endpoint: origin + AUTHZEN_EVALUATION_PATH,
      access_evaluations_endpoint: origin + AUTHZEN_EVALUATIONS_PATH,
      search_subject_endpoint: origin + AUTHZEN_SEARCH_PATHS.subject,
      search_resource_endpoint: origin + AUTHZEN_SEARCH_PATHS.resource,
      search_action_endpoint: origin + AUTHZEN_SEARCH_PATHS.action,
    });
  });
}
