/**
 * The executions (docs/protocol.md §5–§7, §17): the reconciliation queue, an execution's state, and the
 * outcome, reconciliation, confirmation and tool events a pep or a reconciler reports.
 */
import type { Hono } from 'hono';
import { WritError } from '../../errors.js';
import { delegatedCaller } from '../../identity/delegation.js';
import type { ExecutionService } from '../../pdp/executions.js';
import { actorParam, executionIdParam, intParam } from '../params.js';
import type { AppEnv, RouteKit } from '../route-kit.js';

export function registerExecutionRoutes(app: Hono<AppEnv>, kit: RouteKit, executions: ExecutionService): void {
  // The reconciliation queue (§17): who owns each stuck or unknown execution can list it.
  app.get('/v1/executions', kit.roles('reconciler', 'auditor'), async (c) => {
    const state = c.req.query('state');
    if (state !== 'unknown' && state !== 'invoking') throw new WritError('INVALID_REQUEST', 'query parameter state must be unknown or invoking');
    const limit = intParam(c, 'limit', 100);
    if (limit < 1 || limit > 1000) throw new WritError('INVALID_REQUEST', 'query parameter limit must be from 1 to 1000');
    const olderThan = c.req.query('older_than_s');
    const from = c.req.query('from');
    return c.json(
      await executions.queue(state, {
        limit,
        ...(olderThan !== undefined ? { olderThanS: intParam(c, 'older_than_s') } : {}),
        ...(from !== undefined && from !== '' ? { from } : {}),
      }),
    );
  });
  app.get('/v1/executions/:id', kit.roles('pep', 'auditor', 'approver'), async (c) => {
    const caller = c.get('caller');
    // A delegated pep speaks for many actors: it names the one it asks about, as an auditor does.
    const actor = caller.role === 'pep' && caller.delegated === undefined ? caller.actor! : actorParam(c);
    // An approver reads what it is asked to approve (§17): an execution one of whose decisions needed its group.
    return c.json(await executions.getExecution(actor, executionIdParam(c), caller.role === 'approver' ? caller.principal! : undefined));
  });
  app.post('/v1/executions/:id/outcome', kit.roles('pep'), async (c) => {
    const id = executionIdParam(c);
    const text = await kit.readBody(c);
    // A delegated pep reports for the actor its end user's identity_token names (docs/protocol.md §13).
    return c.json(await executions.outcome(await delegatedCaller(c.get('caller'), text, kit.jwt), id, text));
  });
  app.post('/v1/executions/:id/reconcile', kit.roles('reconciler'), async (c) => {
    const id = executionIdParam(c);
    const actor = actorParam(c);
    return c.json(await executions.reconcile(actor, id, await kit.readBody(c), c.get('caller')));
  });
  app.post('/v1/executions/:id/confirm', kit.roles('reconciler'), async (c) => {
    const id = executionIdParam(c);
    const actor = actorParam(c);
    return c.json(await executions.confirm(actor, id, await kit.readBody(c), c.get('caller')));
  });
  app.post('/v1/executions/:id/events', kit.roles('pep'), async (c) => {
    const id = executionIdParam(c);
    const text = await kit.readBody(c);
    return c.json(await executions.events(await delegatedCaller(c.get('caller'), text, kit.jwt), id, text));
  });
}
