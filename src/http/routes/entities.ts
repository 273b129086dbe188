/** The trusted facts (docs/protocol.md §7): an admin writes an entity, an admin or an auditor reads it. */
import type { Hono } from 'hono';
import type { EntityService } from '../../pdp/entities.js';
import type { AppEnv, RouteKit } from '../route-kit.js';

export function registerEntityRoutes(app: Hono<AppEnv>, kit: RouteKit, entities: EntityService): void {
  app.put('/v1/entities/:type/:id', kit.roles('admin'), async (c) => {
    return c.json(await entities.putEntity(c.get('caller'), c.req.param('type') ?? '', c.req.param('id') ?? '', await kit.readBody(c)));
  });
  app.get('/v1/entities/:type/:id', kit.roles('admin', 'auditor'), async (c) =>
    c.json(await entities.getEntity(c.req.param('type') ?? '', c.req.param('id') ?? '')),
  );
}
