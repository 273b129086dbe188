/** The app's middleware that counts every answer by the route that gave it (src/http/answered.ts). */
import type { MiddlewareHandler } from 'hono';
import { countAnswer } from './answered.js';

/**
 * Every answer is counted by the route pattern that answered it (`/v1/executions/:id`), not its path,
 * so the series stay few; a path no route knows is `unmatched`.
 */
export const countAnswersByRoute: MiddlewareHandler = async (c, next) => {
  await next();
  const routes = c.req.matchedRoutes;
  let route = 'unmatched';
  for (let i = routes.length - 1; i >= 0; i--) {
    if (routes[i]!.method !== 'ALL') {
      route = routes[i]!.path;
      break;
    }
  }
  countAnswer(route, c.res.status);
};
