/**
 * The one channel from an HTTP front to the sidecar for everything but the decision fast path: the
 * front serves the sidecar's own app (src/http/app.ts) over a backend whose services, store reads and
 * signed notes are calls by message to the sidecar, the one ledger writer, which runs them on its own
 * services (`answerCall`). Only what the app's routes call is callable (CALLABLE); arguments and
 * answers are plain data (structured clone), and a refusal crosses as its status and body.
 */
import type { ServingBackend } from '../http/app.js';
import type { Readiness } from '../http/routes/health.js';
import type { AuthzenService } from '../authzen/handler.js';
import type { CheckpointNotes } from '../checkpoints/notes.js';
import { WritError, type ErrorCode } from '../errors.js';
import * as metrics from '../metrics/metrics.js';
import type { PdpServices } from '../pdp/services.js';
import { visibleTools, type ToolsVisibleAnswer } from '../server/tool-visibility.js';
import type { LedgerStore } from '../store/types.js';

/** Every method a front may call, by target. */
const CALLABLE = {
  decisions: ['decide'],
  executions: ['outcome', 'reconcile', 'confirm', 'events', 'queue', 'getExecution'],
  approvals: ['approve', 'revoke', 'pendingApprovals'],
  entities: ['putEntity', 'getEntity'],
  authzen: ['evaluate', 'search'],
  tools: ['visible'],
  store: ['size', 'getRecord', 'listRecords', 'exportPage', 'root', 'inclusionProof', 'consistencyProof', 'subtreeHashes', 'latestCheckpoint', 'keys'],
  notes: ['latest'],
  health: ['probe', 'metrics'],
} as const;

export type CallTarget = keyof typeof CALLABLE;

/** A call a front makes: `target.method(...args)` on the sidecar. */
export interface BackendCall {
  target: CallTarget;
  method: string;
  args: unknown[];
}

/** Export lines travel in pages of this many (the app streams them on as they come). */
const EXPORT_PAGE = 512;

/** What the sidecar answers a front's calls with: its own services. */
export interface WriterBackend {
  pdp: PdpServices;
  authzen: AuthzenService;
  readiness: Readiness;
  notes: CheckpointNotes | undefined;
}

/** Runs a front's call on the sidecar's services (the sidecar's side of the channel). */
export async function answerCall(b: WriterBackend, call: BackendCall): Promise<unknown> {
  const allowed = CALLABLE[call.target] as readonly string[] | undefined;
  if (allowed === undefined || !allowed.includes(call.method)) throw new Error(`a front called ${call.target}.${call.method}, which is not callable`);
  const { core } = b.pdp;
  const targets: Record<CallTarget, object | undefined> = {
    decisions: b.pdp.decisions,
    executions: b.pdp.executions,
    approvals: b.pdp.approvals,
    entities: b.pdp.entities,
    authzen: b.authzen,
    tools: { visible: (caller: Parameters<typeof visibleTools>[2], text: string) => visibleTools(core.engine, core.entities, caller, text) },
    store: {
      size: () => core.store.size(),
      getRecord: (seq: number) => core.store.getRecord(seq),
      listRecords: (q: Parameters<LedgerStore['listRecords']>[0]) => core.store.listRecords(q),
      exportPage: (from: number, to: number) => exportPage(core.store, from, to),
      root: (size?: number) => core.store.root(size),
      inclusionProof: (seq: number, size: number) => core.store.inclusionProof(seq, size),
      consistencyProof: (from: number, to: number) => core.store.consistencyProof(from, to),
      subtreeHashes: (level: number, from: number, count: number) => core.store.subtreeHashes(level, from, count),
      latestCheckpoint: () => core.store.latestCheckpoint(),
      keys: () => core.store.keys(),
    },
    notes: b.notes,
    health: {
      probe: () => b.readiness.probe(),
      metrics: async () => {
        await b.readiness.beforeScrape?.();
        return metrics.renderMetrics();
      },
    },
  };
  const target = targets[call.target] as Record<string, (...args: unknown[]) => unknown> | undefined;
  if (target === undefined) throw new WritError('NOT_FOUND', 'this sidecar serves no signed notes');
  return await target[call.method]!.apply(target, call.args);
}

/** Up to EXPORT_PAGE lines of the export from `from` (before `to`). */
async function exportPage(store: LedgerStore, from: number, to: number): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of store.exportLines(from, Math.min(to, from + EXPORT_PAGE))) lines.push(line);
  return lines;
}

/** The refusal a call answered with, as the front's app throws it (its onError answers it in the same shape). */
export function refusalOf(status: number, body: unknown): WritError {
  const e = (body as { error?: { code?: string; message?: string; path?: string } } | undefined)?.error;
  return new WritError((e?.code ?? 'STORE_UNAVAILABLE') as ErrorCode, e?.message ?? 'the sidecar could not complete the request', {
    status,
    ...(e?.path !== undefined ? { path: e.path } : {}),
  });
}

/**
 * The front's backend: the sidecar's services as calls by message (`call` rejects with the sidecar's
 * refusal). `origin`: the signed notes' origin, which the keys route reads synchronously; undefined when
 * the sidecar serves no notes.
 */
export function callingBackend(call: (c: BackendCall) => Promise<unknown>, origin: string | undefined): ServingBackend {
  const service = <T extends object>(target: CallTarget): T =>
    new Proxy({} as T, {
      get(_, method) {
        if (typeof method !== 'string' || method === 'then') return undefined;
        return (...args: unknown[]) => call({ target, method, args });
      },
    });
  const remoteStore = service<LedgerStore>('store');
  const store = new Proxy(remoteStore, {
    get(target, member) {
      if (member === 'exportLines') return (from = 0, to = Number.MAX_SAFE_INTEGER) => exportPages(call, from, to);
      return Reflect.get(target, member) as unknown;
    },
  });
  const core = { store } as unknown as PdpServices['core'];
  const notes =
    origin === undefined
      ? undefined
      : new Proxy(service<CheckpointNotes>('notes'), {
          get(target, member) {
            return member === 'origin' ? origin : (Reflect.get(target, member) as unknown);
          },
        });
  return {
    pdp: {
      core,
      decisions: service('decisions'),
      executions: service('executions'),
      approvals: service('approvals'),
      entities: service('entities'),
      // Policy reloads are the sidecar's own (no route asks for one).
      policy: {} as PdpServices['policy'],
    },
    // Readiness is the sidecar's: its store, and whether it is shutting down.
    ready: async () => ((await call({ target: 'health', method: 'probe', args: [] })) as { ready: boolean }).ready,
    readiness: {
      probe: () => call({ target: 'health', method: 'probe', args: [] }) as ReturnType<Readiness['probe']>,
      render: () => call({ target: 'health', method: 'metrics', args: [] }) as Promise<string>,
    },
    notes,
    authzen: service('authzen'),
    toolsVisible: (caller, text) => call({ target: 'tools', method: 'visible', args: [caller, text] }) as Promise<ToolsVisibleAnswer>,
  };
}

/** The export's lines, page by page, as the app's export route streams them. */
async function* exportPages(call: (c: BackendCall) => Promise<unknown>, from: number, to: number): AsyncGenerator<string> {
  let next = from;
  while (next < to) {
    const lines = (await call({ target: 'store', method: 'exportPage', args: [next, to] })) as string[];
    if (lines.length === 0) return;
    yield* lines;
    next += lines.length;
  }
}
