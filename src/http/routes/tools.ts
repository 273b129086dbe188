/** `POST /v1/tools/visible` (docs/protocol.md §15): the tools a pep's actor may see; nothing is ledgered. */
import type { Hono } from 'hono';
import type { Caller } from '../../identity/caller.js';
import { delegatedCaller } from '../../identity/delegation.js';
import type { ToolsVisibleAnswer } from '../../server/tool-visibility.js';
import type { AppEnv, RouteKit } from '../route-kit.js';

/** The answer for a caller and the request's text (src/server/tool-visibility.ts over the core's engine and entities). */
export type ToolVisibility = (caller: Caller, text: string) => ToolsVisibleAnswer | Promise<ToolsVisibleAnswer>;

export function registerToolRoutes(app: Hono<AppEnv>, kit: RouteKit, visible: ToolVisibility): void {
  app.post('/v1/tools/visible', kit.roles('pep'), async (c) => {
    const text = await kit.readBody(c);
    return c.json(await visible(await delegatedCaller(c.get('caller'), text, kit.jwt), text));
  });
}
