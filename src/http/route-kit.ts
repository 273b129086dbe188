/**
 * What every route group of the app (src/http/routes/) takes from it: the caller, once per request,
 * with the roles its route admits (`roles(…)`, the auth middleware), and the JSON body read with the
 * app's limits. A backend that cannot serve (a replica waiting for its database) refuses each request
 * here, right after its role check: what a running sidecar refuses before it reads the store is then
 * refused alike, and nothing past it runs.
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { Role } from '../config/config.js';
import type { WritError } from '../errors.js';
import type { Caller } from '../identity/caller.js';
import type { JwtVerifier } from '../identity/verify.js';
import { requireRole } from './auth.js';
import { readJsonText } from './body.js';
import { certificateCallerOf } from './client-certs.js';

/** The app's Hono environment: a route runs with the caller its role check admitted. */
export type AppEnv = { Variables: { caller: Caller } };

/** How the app authenticates: src/http/auth.ts Authenticator, or the waiting replica's static tokens. */
export interface CallerAuthenticator {
  authenticate(header: string | undefined, certificate?: Caller): Promise<Caller[]>;
  readonly jwt?: JwtVerifier | undefined;
}

export interface RouteKit {
  /** Every role the request's credential holds: its bearer token, else its verified client certificate. */
  authenticate: (c: Context) => Promise<Caller[]>;
  /** The caller as a route admitting `roles` takes it (401, 403, or the backend's refusal). */
  callerIn: (c: Context, roles: readonly Role[]) => Promise<Caller>;
  /** The auth middleware: authenticates, checks the role; the handler then runs with c.get('caller'). */
  roles(...allowed: Role[]): MiddlewareHandler<AppEnv>;
  /** Reads the JSON body text with the app's limits (413, 415, strict UTF-8); `optional`: may be empty. */
  readBody(c: Context, optional?: boolean): Promise<string>;
  /** Verifies the end user's identity_token of a delegated pep (src/identity/delegation.ts). */
  readonly jwt: JwtVerifier | undefined;
}

export function routeKit(auth: CallerAuthenticator, maxBodyBytes: number, unavailable?: () => WritError): RouteKit {
  // Once per request: the caller's share (src/http/share.ts) and the route's role check read the same answer.
  const authenticated = new WeakMap<Context, Promise<Caller[]>>();
  const authenticate = (c: Context): Promise<Caller[]> => {
    let callers = authenticated.get(c);
    if (callers === undefined) authenticated.set(c, (callers = auth.authenticate(c.req.header('authorization'), certificateCallerOf(c))));
    return callers;
  };
  const callerIn = async (c: Context, roles: readonly Role[]): Promise<Caller> => {
    const caller = requireRole(await authenticate(c), roles);
    if (unavailable !== undefined) throw unavailable();
    return caller;
  };
  return {
    authenticate,
    callerIn,
    roles:
      (...allowed: Role[]) =>
      async (c, next) => {
        c.set('caller', await callerIn(c, allowed));
        await next();
      },
    readBody: (c, optional = false) => readJsonText(c, maxBodyBytes, optional),
    jwt: auth.jwt,
  };
}
