/** `POST /v1/tools/visible` (docs/protocol.md §15): the tools a pep's actor may see; nothing is ledgered. */
import type { Hono } from 'hono';
import { delegatedCaller } from '../../identity/delegation.js';
import type { PdpCore } from '../../pdp/core.js';
import { visibleTools } from '../../server/tool-visibility.js';
import type { AppEnv, RouteKit } from '../route-kit.js';

export function registerToolRoutes(app: Hono<AppEnv>, kit: RouteKit, core: PdpCore): void {
  app.post('/v1/tools/visible', kit.roles('pep'), async (c) => {
    const text = await kit.readBody(c);
    return c.json(visibleTools(core.engine, core.entities, await delegatedCaller(c.get('caller'), text, kit.jwt), text));
  });
}
