/** Approvals (docs/protocol.md §6): an approver's pending list, approving, revoking. */
import type { Hono } from 'hono';
import { parseLossless, toPlain } from '../../binding/index.js';
import { WritError } from '../../errors.js';
import type { ApprovalService } from '../../pdp/approvals.js';
import type { AppEnv, RouteKit } from '../route-kit.js';

export function registerApprovalRoutes(app: Hono<AppEnv>, kit: RouteKit, approvals: ApprovalService): void {
  app.get('/v1/approvals/pending', kit.roles('approver'), async (c) => c.json(await approvals.pendingApprovals(c.get('caller'))));
  app.post('/v1/approvals', kit.roles('approver'), async (c) => {
    return c.json(await approvals.approve(c.get('caller'), await kit.readBody(c)), 201);
  });
  app.post('/v1/approvals/:id/revoke', kit.roles('approver'), async (c) => {
    // No body is needed; one that is sent must still be a JSON object (its members are not read).
    const text = await kit.readBody(c, true);
    if (text.trim() !== '') {
      const body = toPlain(parseLossless(text));
      if (body === null || typeof body !== 'object' || Array.isArray(body))
        throw new WritError('INVALID_REQUEST', 'a revocation body, when sent, is a JSON object', { path: '' });
    }
    return c.json(await approvals.revoke(c.get('caller'), c.req.param('id') ?? ''));
  });
}
