/** Query and path parameters as the routes read them: malformed ones are 400 INVALID_REQUEST. */
import type { Context } from 'hono';
import { WritError } from '../errors.js';
import { parseUidKey, type Uid } from '../util/uid.js';

/** schemas/defs.json executionId: `.` and `..` are dot segments, which a URL parser removes from a path. */
const EXECUTION_ID = /^(?!\.\.?$)[A-Za-z0-9._:-]{1,128}$/;

export function intParam(c: Context, name: string, fallback?: number): number {
  const raw = c.req.query(name);
  if (raw === undefined || raw === '') {
    if (fallback !== undefined) return fallback;
    throw new WritError('INVALID_REQUEST', `query parameter ${name} is required`);
  }
  if (!/^\d{1,15}$/.test(raw)) throw new WritError('INVALID_REQUEST', `query parameter ${name} must be a non-negative integer`);
  return Number(raw);
}

export function actorParam(c: Context): Uid {
  const raw = c.req.query('actor');
  const uid = raw === undefined ? undefined : parseUidKey(raw);
  if (!uid) throw new WritError('INVALID_REQUEST', 'query parameter actor must be Type::"id" (URL-encoded)');
  return uid;
}

export function executionIdParam(c: Context): string {
  const id = c.req.param('id') ?? '';
  if (!EXECUTION_ID.test(id)) throw new WritError('INVALID_REQUEST', 'execution ids are 1–128 characters of A-Za-z0-9._:-, and not . or ..');
  return id;
}
