/**
 * Task-augmented `tools/call` (docs/protocol.md §7, §14): how a PEP reads a task the server made, follows
 * it to its end, and turns its end into an outcome. Shared by the guard and `writ proxy`; the transport
 * (a task store in process, `tasks/get` requests over stdio) is the caller's.
 *
 * Two wire shapes exist:
 *   - MCP 2025-11-25 (core tasks, the SDK 1.x `experimental/tasks`): the client asks with `params.task`;
 *     the server answers `{task: {taskId, status, ttl, pollInterval, …}}`; `tasks/get` answers the task
 *     (flat), and the final result comes from `tasks/result`.
 *   - MCP 2026-07-28 (the `io.modelcontextprotocol/tasks` extension): the server may answer any call of a
 *     client that declared the extension with `{resultType: "task", taskId, status, ttlMs,
 *     pollIntervalMs, …}`; `tasks/get` answers the task with its `result` (completed) or `error`
 *     (failed) inline; there is no `tasks/result`.
 *
 * The execution stays `invoking` while the task works. Its end decides the outcome: `completed` →
 * `committed`, or `rejected` when the result has `isError`; `failed`, `cancelled`, a task that outlives
 * its ttl, disappears or cannot be read → `unknown` (the tool may or may not have acted).
 */
import { isObject } from './context.js';
import { malformedToolResult, type DispatchResult } from './core.js';

export type TaskShape = '2025-11-25' | '2026-07-28';

/** A task the server answered a `tools/call` with. */
export interface CreatedTask {
  taskId: string;
  shape: TaskShape;
  /** Suggested polling interval, ms (the PEP's own default when the server gives none). */
  pollMs: number;
  /** How long the server keeps the task, ms; null when unlimited. */
  ttlMs: number | null;
  /** The created task's own status (a server may create a task already ended). */
  status: string;
}

/** One reading of a task's state. */
export interface TaskView {
  status: string;
  /** The final CallToolResult (2026-07-28 `tasks/get` of a completed task). */
  result?: unknown;
  /** The JSON-RPC error of a failed task (2026-07-28). */
  error?: unknown;
  statusMessage?: string;
  pollMs?: number;
}

export const TERMINAL_TASK_STATUSES: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

/** Polling bounds: a server's interval is honoured within these, so a 0 cannot spin and a day cannot stall. */
const DEFAULT_POLL_MS = 1_000;
const MIN_POLL_MS = 50;
const MAX_POLL_MS = 30_000;
/** After a task's ttl has passed, it is read this much longer before it counts as expired. */
const TTL_GRACE_MS = 5_000;

function pollInterval(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, v)) : undefined;
}

function createdTask(t: Record<string, unknown>, shape: TaskShape, poll: unknown, ttl: unknown): CreatedTask {
  return {
    taskId: t.taskId as string,
    shape,
    pollMs: pollInterval(poll) ?? DEFAULT_POLL_MS,
    ttlMs: typeof ttl === 'number' ? ttl : null,
    status: typeof t.status === 'string' ? t.status : 'working',
  };
}

/** The task a `tools/call` result announces, in either shape, or undefined when it is a plain result. */
export function createdTaskOf(result: unknown): CreatedTask | undefined {
  if (!isObject(result)) return undefined;
  if (result.resultType === 'task' && typeof result.taskId === 'string') return createdTask(result, '2026-07-28', result.pollIntervalMs, result.ttlMs);
  const task = result.task;
  if (isObject(task) && typeof task.taskId === 'string' && !('content' in result)) return createdTask(task, '2025-11-25', task.pollInterval, task.ttl);
  return undefined;
}

/** A `tasks/get` result (either shape) as a view; undefined when it is not a task. */
export function taskViewOf(getResult: unknown): TaskView | undefined {
  if (!isObject(getResult)) return undefined;
  // 2025-11-25 answers the task flat; some servers nest it under `task`.
  const t = typeof getResult.status === 'string' ? getResult : isObject(getResult.task) ? getResult.task : undefined;
  if (!t || typeof t.status !== 'string') return undefined;
  const view: TaskView = { status: t.status };
  if ('result' in t) view.result = t.result;
  if ('error' in t) view.error = t.error;
  if (typeof t.statusMessage === 'string') view.statusMessage = t.statusMessage;
  const poll = pollInterval(t.pollIntervalMs ?? t.pollInterval);
  if (poll !== undefined) view.pollMs = poll;
  return view;
}

/** The outcome of a task's final CallToolResult: committed, rejected (`isError`), or unknown when malformed. */
export function outcomeOfTaskResult(result: unknown, taskId: string): DispatchResult {
  const bad = malformedToolResult(result);
  if (bad) return { status: 'unknown', detail: `task ${taskId} completed with ${bad}` };
  const r = result as Record<string, unknown>;
  return { status: r.isError === true ? 'rejected' : 'committed', result, detail: `task ${taskId} completed` };
}

/** The outcome of a task that ended other than `completed` (or could no longer be read). */
export function unknownTaskOutcome(taskId: string, why: string): DispatchResult {
  return { status: 'unknown', detail: `task ${taskId} ${why}` };
}

export interface TaskPort {
  /** Reads the task's state; 'gone' when the server no longer knows it (or cannot be asked). */
  get(): Promise<TaskView | 'gone'>;
  /** The final result of a completed task, when `get` does not carry it (2025-11-25 `tasks/result`). */
  result(): Promise<unknown>;
  /** Resolves when following must stop (the server exited, the PEP is closing); its value says why. */
  stopped?: Promise<string>;
}

/**
 * Follows a task until it ends and says what its end means as an outcome. Never throws: every doubt
 * is `unknown`. Polls at the server's interval; gives up as `expired` once the ttl (plus a grace) has
 * passed since the task was created.
 */
export async function followTask(task: CreatedTask, port: TaskPort, now: () => number = Date.now): Promise<DispatchResult> {
  const started = now();
  let pollMs = task.pollMs;
  let stoppedWhy: string | undefined;
  void port.stopped?.then((why) => {
    stoppedWhy = why;
  });
  // A task created already ended is read at once; otherwise each reading waits the interval first.
  let wait = !TERMINAL_TASK_STATUSES.has(task.status);
  for (;;) {
    if (wait) {
      const slept = new Promise<void>((res) => setTimeout(res, pollMs).unref());
      await (port.stopped ? Promise.race([slept, port.stopped]) : slept);
    }
    wait = true;
    if (stoppedWhy !== undefined) return unknownTaskOutcome(task.taskId, `was still working when ${stoppedWhy}`);
    let view: TaskView | 'gone';
    try {
      view = await port.get();
    } catch (e) {
      return unknownTaskOutcome(task.taskId, `could not be read: ${(e as Error)?.message ?? String(e)}`);
    }
    if (stoppedWhy !== undefined) return unknownTaskOutcome(task.taskId, `was still working when ${String(stoppedWhy)}`);
    if (view === 'gone') return unknownTaskOutcome(task.taskId, 'disappeared before it ended');
    if (view.pollMs !== undefined) pollMs = view.pollMs;
    if (view.status === 'completed') {
      if (view.result !== undefined) return outcomeOfTaskResult(view.result, task.taskId);
      try {
        return outcomeOfTaskResult(await port.result(), task.taskId);
      } catch (e) {
        return unknownTaskOutcome(task.taskId, `completed but its result could not be read: ${(e as Error)?.message ?? String(e)}`);
      }
    }
    if (view.status === 'failed') {
      const err = isObject(view.error) ? ` (${String(view.error.code)} ${String(view.error.message)})` : '';
      return unknownTaskOutcome(task.taskId, `failed${err}${view.statusMessage ? `: ${view.statusMessage}` : ''}`);
    }
    if (view.status === 'cancelled') return unknownTaskOutcome(task.taskId, `was cancelled${view.statusMessage ? `: ${view.statusMessage}` : ''}`);
    if (task.ttlMs !== null && now() - started > task.ttlMs + TTL_GRACE_MS) {
      return unknownTaskOutcome(task.taskId, `expired (ttl ${task.ttlMs} ms) while ${view.status}`);
    }
  }
}
