/**
 * The one HTTP surface: the Hono app every listener serves, composed of middleware modules and route
 * groups. No decision logic lives here; each route group takes the src/pdp/ service it needs.
 *
 *   middleware   answers counted by route (count-answers.ts), request ids (request-id.ts), no-store
 *                (no-store.ts), path and query checks (request-checks.ts), the error shape
 *                (error-shape.ts), auth and roles (route-kit.ts), each caller's share (share.ts)
 *   routes       health, console, C2SP checkpoints and tiles, decisions, executions, tools, AuthZEN,
 *                approvals, entities, ledger (src/http/routes/, src/console/, src/checkpoints/, src/authzen/)
 */
import { Hono } from 'hono';
import { WritError } from '../errors.js';
import type { CheckpointNotes } from '../checkpoints/notes.js';
import { registerTransparencyRoutes } from '../checkpoints/routes.js';
import { registerConsoleRoutes } from '../console/routes.js';
import { AUTHZEN_EVALUATION_PATH, AUTHZEN_EVALUATIONS_PATH, registerAuthzenRoutes } from '../authzen/routes.js';
import type { PdpServices } from '../pdp/services.js';
import type { PdpCore } from '../pdp/core.js';
import type { LedgerStore } from '../store/types.js';
import { COUNTED_HERE, countAnswersByRoute, type AnswerCounts } from './count-answers.js';
import type { AuthzenService } from '../authzen/handler.js';
import { visibleTools } from '../server/tool-visibility.js';
import { answerErrorsInShape } from './error-shape.js';
import { CallerGate, type FairnessSettings } from './fairness.js';
import { noStore } from './no-store.js';
import { decodablePath, singleQueryParameters } from './request-checks.js';
import { echoRequestIdHeader } from './request-id.js';
import { routeKit, type AppEnv, type CallerAuthenticator } from './route-kit.js';
import { callerShare } from './share.js';
import { registerApprovalRoutes } from './routes/approvals.js';
import { registerDecisionRoutes } from './routes/decisions.js';
import { registerEntityRoutes } from './routes/entities.js';
import { registerExecutionRoutes } from './routes/executions.js';
import { registerHealthRoutes, storeReadiness, type Readiness } from './routes/health.js';
import { registerLedgerRoutes } from './routes/ledger.js';
import { registerToolRoutes, type ToolVisibility } from './routes/tools.js';

/** A running sidecar: its decision core and services, answering every route. */
export interface ServingBackend {
  pdp: PdpServices;
  /** False while shutting down or when the store cannot write. */
  ready: () => Promise<boolean>;
  /** The ledger as C2SP signed notes and tiles (docs/protocol.md §16). */
  notes?: CheckpointNotes | undefined;
  /** How ready the sidecar is; by default from `ready` and the core's store (storeReadiness). */
  readiness?: Readiness;
  /**
   * AuthZEN's evaluations and searches: an AuthzenService over the core, or a front's calls. Given rather
   * than made here, so that an HTTP front's app never loads the commit path it does not run.
   */
  authzen: Pick<AuthzenService, 'evaluate' | 'search'>;
  /** The tools a caller may see; by default the core's engine and entities (src/server/tool-visibility.ts). */
  toolsVisible?: ToolVisibility;
}

/**
 * Nothing to serve yet (a replica waiting for its database, src/server/waiting.ts): what needs no
 * backend answers as always (health, metrics, the console's page and sign-in, AuthZEN discovery, the
 * OpenAPI document), what a running sidecar refuses before it reads the store (404, 405, 401, 403) is
 * refused alike, and every other request is answered `refusal()`.
 */
export interface UnavailableBackend {
  refusal: () => WritError;
}

export interface AppOptions {
  backend: ServingBackend | UnavailableBackend;
  /** Static tokens, JWT issuers and client certificates (src/http/auth.ts). */
  auth: CallerAuthenticator;
  maxBodyBytes: number;
  /** Callers' shares of the work (src/http/fairness.ts fairnessOf). */
  fairness: FairnessSettings;
  /** The callers' shares to enter; by default the app's own (an HTTP front's app shares its fast path's). */
  gate?: CallerGate;
  /** `http://host:port` the sidecar listens on, once it does (absolute URLs for requests without a Host header). */
  publicOrigin?: () => string | undefined;
  /** The configured `public_url`: AuthZEN discovery names it rather than the request's Host. */
  publicUrl?: string;
  /** `public_tiles`: tiles need no token. */
  publicTiles?: boolean;
  /** Where answers are counted (COUNTED_HERE by default; an HTTP front relays them to the sidecar). */
  counts?: AnswerCounts;
}

export function buildApp(o: AppOptions): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const { auth, backend } = o;
  const serving = 'pdp' in backend ? backend : undefined;
  // Unavailable: each service is one that refuses whatever is asked of it; the routes that need one
  // and admit a role are refused right after their role check (src/http/route-kit.ts).
  const refusal = serving ? undefined : (backend as UnavailableBackend).refusal;
  const core = serving?.pdp.core ?? refusing<PdpCore>(refusal!);
  const pdp: PdpServices = serving?.pdp ?? {
    core,
    decisions: refusing(refusal!),
    executions: refusing(refusal!),
    approvals: refusing(refusal!),
    entities: refusing(refusal!),
    policy: refusing(refusal!),
  };
  const store = serving?.pdp.core.store ?? refusing<LedgerStore>(refusal!);
  const notes = serving ? serving.notes : refusing<CheckpointNotes>(refusal!);
  const kit = routeKit(auth, o.maxBodyBytes, refusal);

  const counts = o.counts ?? COUNTED_HERE;
  answerErrorsInShape(app, refusal ?? (() => new WritError('STORE_UNAVAILABLE', 'the sidecar could not complete the request', { status: 503 })), counts);
  app.use('*', countAnswersByRoute(counts));
  app.use('*', echoRequestIdHeader);
  app.use('*', noStore);
  app.use('*', decodablePath);
  app.use('*', singleQueryParameters);

  // ── operations (no auth) ──
  registerHealthRoutes(
    app,
    serving
      ? (serving.readiness ?? storeReadiness({ store, policyVersion: () => core.engine.policyVersion, ready: serving.ready }))
      : { probe: async () => ({ ready: false, body: { ready: false } }) },
  );
  // The auditor console (§11): a static page; its data calls carry the auditor token.
  registerConsoleRoutes(app, { tokens: { authenticate: (header) => auth.authenticate(header) } });
  if (notes) registerTransparencyRoutes(app, { notes, store, publicTiles: o.publicTiles ?? false, auditor: kit.roles('auditor') });

  // ── a caller's share (src/http/share.ts): every request that evaluates policy ──
  const gate = o.gate ?? new CallerGate({ maxInFlight: o.fairness.callerMaxInFlight, maxInFlightBytes: o.fairness.callerMaxInFlightBytes });
  const share = callerShare(gate, kit.authenticate, o.maxBodyBytes);
  for (const path of ['/v1/decisions', AUTHZEN_EVALUATION_PATH, AUTHZEN_EVALUATIONS_PATH]) app.post(path, share);

  registerDecisionRoutes(app, kit, pdp.decisions);
  registerExecutionRoutes(app, kit, pdp.executions);
  // Tool lists (docs/protocol.md §15): nothing is ledgered.
  registerToolRoutes(app, kit, serving?.toolsVisible ?? ((caller, text) => visibleTools(core.engine, core.entities, caller, text)));
  // AuthZEN Authorization API 1.0 (docs/protocol.md §10).
  registerAuthzenRoutes(app, {
    service: serving?.authzen ?? refusing(refusal!),
    callerIn: kit.callerIn,
    readBody: (c) => kit.readBody(c),
    ...(o.publicOrigin ? { publicOrigin: o.publicOrigin } : {}),
    ...(o.publicUrl ? { publicUrl: o.publicUrl } : {}),
  });
  registerApprovalRoutes(app, kit, pdp.approvals);
  registerEntityRoutes(app, kit, pdp.entities);
  registerLedgerRoutes(app, kit, { store, notes });
  return app;
}

/** An object every member of which is refused: a service of the unavailable backend. */
function refusing<T extends object>(refusal: () => WritError): T {
  return new Proxy({} as T, {
    get(_, member) {
      // Not a thenable: a promise resolved with it must not ask it for `then`.
      if (member === 'then') return undefined;
      throw refusal();
    },
  });
}
