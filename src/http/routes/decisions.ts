/** `POST /v1/decisions` (docs/protocol.md §2–§4): a pep's decision, admitted, decided and committed by DecisionService. */
import type { Hono } from 'hono';
import { delegatedCaller } from '../../identity/delegation.js';
import type { DecisionService } from '../../pdp/decisions.js';
import type { AppEnv, RouteKit } from '../route-kit.js';

export function registerDecisionRoutes(app: Hono<AppEnv>, kit: RouteKit, decisions: DecisionService): void {
  app.post('/v1/decisions', kit.roles('pep'), async (c) => {
    const text = await kit.readBody(c);
    return c.json(await decisions.decide(await delegatedCaller(c.get('caller'), text, kit.jwt), text));
  });
}
