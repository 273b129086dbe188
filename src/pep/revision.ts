/**
 * What a PEP must know of MCP protocol revisions to write messages of its own (docs/protocol.md §7).
 *
 * From 2026-07-28 on, MCP is stateless: no `initialize`, and every request carries its revision, the
 * client's info and its capabilities in `params._meta` (the per-request envelope). A result in that
 * era must say what kind it is (`resultType`); a refusal the PEP writes is a final tool result,
 * `"complete"`. Earlier revisions (2025-06-18, 2025-11-25) know no `resultType`: nothing is added.
 */
import { isObject } from './context.js';

/** The per-request envelope's revision key (MCP 2026-07-28). */
export const PROTOCOL_VERSION_META = 'io.modelcontextprotocol/protocolVersion';
/** The first revision of the stateless era. Revision names are dates, so they order as strings. */
export const FIRST_STATELESS_REVISION = '2026-07-28';
const ENVELOPE_PREFIX = 'io.modelcontextprotocol/';

/** The revision a request names in its own `_meta` (2026-07-28 and later), or undefined. */
export function requestRevision(params: unknown): string | undefined {
  const meta = isObject(params) ? params._meta : undefined;
  const v = isObject(meta) ? meta[PROTOCOL_VERSION_META] : undefined;
  return typeof v === 'string' ? v : undefined;
}

/** Whether a request is of the stateless era, whose results carry `resultType`. */
export function isStatelessRequest(params: unknown): boolean {
  const v = requestRevision(params);
  return v !== undefined && v >= FIRST_STATELESS_REVISION;
}

/** A result the PEP wrote for the request with these params, as that request's revision wants it. */
export function resultForRevision(result: Record<string, unknown>, params: unknown): Record<string, unknown> {
  return isStatelessRequest(params) ? { ...result, resultType: 'complete' } : result;
}

/**
 * The per-request envelope members (`io.modelcontextprotocol/*`) of a stateless request's `_meta`, for
 * requests the PEP sends on the client's behalf (a task's `tasks/get`); undefined for earlier revisions.
 */
export function protocolEnvelopeMeta(params: unknown): Record<string, unknown> | undefined {
  if (!isStatelessRequest(params)) return undefined;
  const meta = (params as Record<string, unknown>)._meta as Record<string, unknown>;
  return Object.fromEntries(Object.entries(meta).filter(([k]) => k.startsWith(ENVELOPE_PREFIX)));
}
