/**
 * Answers that carry ledger or execution data (decisions, executions, approvals, entities, the ledger,
 * AuthZEN evaluations — the `/v1/` and `/access/v1/` routes, errors included) hold personal data: no
 * proxy or browser may keep them, nor read them as another type than they are. One rule for every
 * door (src/http/app.ts, src/front/front-thread.ts).
 */
import type { MiddlewareHandler } from 'hono';

export const NO_STORE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
});

/** True for a path whose answers carry ledger or execution data. */
export function carriesLedgerData(path: string): boolean {
  return path.startsWith('/v1/') || path.startsWith('/access/v1/');
}

/** The app's middleware: set before the route runs, so its errors carry the headers too. */
export const noStore: MiddlewareHandler = async (c, next) => {
  if (carriesLedgerData(c.req.path)) for (const [name, value] of Object.entries(NO_STORE_HEADERS)) c.header(name, value);
  await next();
};
