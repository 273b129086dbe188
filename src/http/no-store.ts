/**
 * Answers that carry ledger or execution data (decisions, executions, approvals, entities, the ledger,
 * AuthZEN evaluations — the `/v1/` and `/access/v1/` routes, errors included) hold personal data: no
 * proxy or browser may keep them, nor read them as another type than they are. One rule for every
 * door (src/http/app.ts, src/front/front-thread.ts).
 */
export const NO_STORE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
});

/** True for a path whose answers carry ledger or execution data. */
export function carriesLedgerData(path: string): boolean {
  return path.startsWith('/v1/') || path.startsWith('/access/v1/');
}
