/**
 * The one enforcement pipeline shared by the McpServer guard and `writ proxy`:
 *
 *   context (envelope, execution id) → PDP `execute` → refuse, or dispatch the tool ONCE with the
 *   PDP's admitted arguments → outcome (committed | rejected | unknown) → answer the client.
 *
 * The outcome is posted before the client is answered, so a retry that follows the answer always
 * meets the terminal state (EXECUTION_TERMINAL), never a race with EXECUTION_IN_FLIGHT.
 * A dispatch that outlives `callTimeoutMs` is reported `unknown` and the client is told
 * OUTCOME_UNKNOWN; its late answer is never delivered as success: it is posted to the PDP as a second
 * outcome (which the PDP refuses with 409 EXECUTION_TERMINAL and ledgers as a refusal record — the
 * evidence a reconciler needs) and logged.
 */
import { isWritError } from '../errors.js';
import { jcs, sha256Tagged } from '../util/canonical.js';
import { callContext, envelopeFromDefaults, isObject, type Defaults } from './context.js';
import type { PdpClient } from './client.js';
import type { DecisionMeta, DecisionResponse, OutcomeRequest, OutcomeStatus, PdpResult } from './types.js';
import { META_DECISION, META_ENVELOPE, META_EXECUTION_ID } from './types.js';

/** What a dispatch of the tool came to. `error` (guard only) is rethrown to the MCP layer. */
export interface DispatchResult {
  status: OutcomeStatus;
  result?: unknown;
  /** The result's raw JSON text, when the PEP has it (the proxy passes it on byte for byte). */
  raw?: string;
  error?: unknown;
  detail?: string;
  /**
   * The tool answered with a task (task.ts): `result` is the task handle the client gets now, and this
   * promise is the task's end. The execution stays `invoking` until it settles; then its outcome is posted.
   */
  task?: Promise<DispatchResult>;
}

export interface CallInput {
  tool: string;
  /** Parsed arguments (used for defaults pointers). */
  arguments: unknown;
  /** Raw JSON text of the arguments, when the PEP has it (the proxy does). */
  rawArguments?: string;
  /** `params._meta` of the call. */
  meta: unknown;
  /**
   * Aborted when the MCP client cancels the call (`notifications/cancelled`) or goes away. A call
   * cancelled before the PDP's allow arrives is never dispatched: nobody waits for its effect.
   */
  cancelled?: AbortSignal;
}

export interface PipelineOptions {
  pdp: PdpClient;
  server: string;
  defaults?: Defaults;
  callTimeoutMs: number;
  log: (line: string) => void;
  /** Given the work a call leaves behind after its answer (a late decision awaited and its outcome
   *  posted, a late tool answer posted): a caller about to exit (writ proxy) waits for it. */
  trackLate?: (work: Promise<unknown>) => void;
  /**
   * A delegated PEP's (writ gateway's) client token, sent to the PDP as `identity_token` on each
   * decision and tool list (docs/protocol.md §13); read when the call arrives.
   */
  identityToken?: () => string | undefined;
}

export type Dispatch = (admitted: Record<string, unknown>, signal: AbortSignal, execution: DecisionResponse) => Promise<DispatchResult>;

export type CallAnswer = { result: Record<string, unknown>; raw?: string } | { error: unknown };

/** A tool result carrying a refusal or an unknown outcome (docs/protocol.md §7). */
/**
 * Why `r` is not a tool result — not an object, or an `isError` that is not a boolean — or undefined
 * when it is one. Such an answer says nothing certain about what the tool did, so the guard and the
 * proxy report its outcome `unknown` rather than `committed`.
 */
export function malformedToolResult(r: unknown): string | undefined {
  if (!isObject(r)) return `a result that is not an object (${r === null ? 'null' : Array.isArray(r) ? 'array' : typeof r})`;
  if (r.isError !== undefined && typeof r.isError !== 'boolean') return `isError that is not a boolean (${JSON.stringify(r.isError)})`;
  // MCP 2026-07-28: a result that is not `complete` (an `input_required` round trip, a kind this PEP does
  // not know) is not the tool's final answer: what the tool did is not known from it. (Task handles are
  // read by task.ts before this check.)
  if (r.resultType !== undefined && r.resultType !== 'complete') return `a result of type ${JSON.stringify(r.resultType)}, not a final tool result`;
  return undefined;
}

/** Where a tool reports what it did inside its call, for the PEP to seal (docs/protocol.md §17). */
export const META_EVENTS = 'io.writ/events';

/** The events a tool result reports in `_meta["io.writ/events"]`, or undefined when it reports none. */
export function reportedEvents(result: unknown): Array<{ type: string; data: unknown }> | undefined {
  const meta = isObject(result) && isObject(result._meta) ? result._meta : undefined;
  const events = meta?.[META_EVENTS];
  if (!Array.isArray(events) || events.length === 0) return undefined;
  return events.map((e) => (isObject(e) ? { type: e.type as string, data: e.data } : { type: '', data: e }));
}

/**
 * The `_meta` a dispatched call carries to the tool: the client's, with `io.writ/execution_id` set to
 * the execution's id (also when this PEP minted it), so the target system can use it as its
 * idempotency key (docs/protocol.md §17).
 */
export function metaForTool(meta: unknown, executionId: string): Record<string, unknown> {
  return { ...(isObject(meta) ? meta : {}), [META_EXECUTION_ID]: executionId };
}

export function refusalResult(meta: DecisionMeta, text: string): Record<string, unknown> {
  return { content: [{ type: 'text', text }], isError: true, _meta: { [META_DECISION]: meta } };
}

function decisionMeta(code: string, executionId: unknown, d?: DecisionResponse): DecisionMeta {
  const m: DecisionMeta = {
    code,
    reasons: d?.reasons ?? [],
    obligations: d?.obligations ?? [],
    execution_id: typeof executionId === 'string' ? executionId : null,
  };
  if (d) {
    return {
      decision: d.decision,
      code,
      reasons: m.reasons,
      obligations: m.obligations,
      execution_id: m.execution_id,
      binding: d.binding,
      envelope_digest: d.envelope_digest,
    };
  }
  return m;
}

function resultDigest(result: unknown): string | undefined {
  try {
    return sha256Tagged(jcs(result));
  } catch {
    return undefined;
  }
}

function outcomeBody(r: DispatchResult): OutcomeRequest {
  const body: OutcomeRequest = { status: r.status, confirmation: 'tool_reported' };
  if (r.status !== 'unknown' && r.result !== undefined) {
    const dg = resultDigest(r.result);
    if (dg) body.result_digest = dg;
  }
  if (r.detail) body.detail = r.detail.slice(0, 1000);
  return body;
}

export async function runGuardedCall(pipeline: PipelineOptions, call: CallInput, dispatch: Dispatch): Promise<CallAnswer> {
  // A delegated PEP's client token as it was when the call came: its decision and every outcome of it
  // (also one posted when a task ends) carry that token.
  const identityToken = pipeline.identityToken?.();
  const opts: PipelineOptions = identityToken === undefined ? pipeline : { ...pipeline, identityToken: () => identityToken };
  const { pdp, log } = opts;
  let ctx: { envelope: unknown; executionId: unknown };
  try {
    ctx = callContext(call.meta, opts.defaults, call.tool, call.arguments);
  } catch (e) {
    if (!isWritError(e)) throw e;
    const exec = (call.meta as Record<string, unknown> | undefined)?.['io.writ/execution_id'];
    return { result: refusalResult(decisionMeta(e.code, exec), `writ: refused (${e.code}): ${e.message}`) };
  }
  const { envelope, executionId } = ctx;
  const decideBody = {
    execution_id: executionId as string,
    phase: 'execute' as const,
    envelope: envelope as Record<string, unknown>,
    action: { server: opts.server, tool: call.tool, arguments: call.arguments ?? {} },
  };
  // A decision that comes after the PEP stopped waiting (the client was told PDP_UNAVAILABLE and the
  // tool did not run) may be an allow, and then the execution is `invoking` for a call that will never
  // be dispatched: only this PEP knows that, so it ends the execution as `rejected` (not invoked).
  const onLateAnswer = (late: PdpResult<DecisionResponse>): void => {
    if (!late.ok || late.body.decision !== 'allow') return;
    const lateId = late.body.execution_id ?? (executionId as string);
    const detail = `not invoked: the PDP's allow came after this PEP's ${pdp.timeoutMs} ms timeout; the client was told PDP_UNAVAILABLE`;
    const posted = postOutcome(opts, lateId, { status: 'rejected', detail }).then((ok) =>
      log(`writ pep: execution ${lateId} was allowed after the PEP's timeout and never dispatched; outcome rejected ${ok ? 'recorded' : 'NOT recorded'}`),
    );
    opts.trackLate?.(posted);
  };
  const onLateWindow = opts.trackLate;
  const decideOpts = {
    onLateAnswer,
    onLateWindow,
    ...(call.rawArguments !== undefined ? { rawArguments: call.rawArguments } : {}),
    ...(identityToken !== undefined ? { identityToken } : {}),
  };
  const r = await pdp.decide(decideBody, decideOpts);
  if (!r.ok) {
    const text =
      r.error.code === 'PDP_UNAVAILABLE'
        ? `writ: the policy decision point is unavailable, so the tool did not run: ${r.error.message}`
        : `writ: refused by the policy decision point (${r.error.code}${r.error.path !== undefined ? ` at ${r.error.path}` : ''}): ${r.error.message}`;
    return { result: refusalResult(decisionMeta(r.error.code, executionId), text) };
  }
  const d = r.body;
  const id = d.execution_id ?? (executionId as string);
  if (d.decision === 'deny') {
    const errs = d.errors?.length ? ` (${d.errors.length} evaluation error(s))` : '';
    // No determining policy and no error is Cedar's default deny: say so, rather than an empty list.
    // `reasons` in _meta stay exactly as the PDP gave them.
    const why = d.reasons.length ? ` by ${d.reasons.join(', ')}` : errs ? '' : ': no policy permits this call';
    return { result: refusalResult(decisionMeta('DENIED', id, d), `writ: denied${why}${errs}; execution ${id}`) };
  }
  if (d.decision === 'approval_required') {
    const groups = d.obligations.map((o) => o.approver_group).filter((g): g is string => typeof g === 'string');
    const who = groups.length ? ` from ${groups.join(' or ')}` : '';
    return {
      result: refusalResult(
        decisionMeta('APPROVAL_REQUIRED', id, d),
        `writ: approval required${who}; execution ${id}, binding ${d.binding}, envelope ${d.envelope_digest}. ` +
          'Once approved, retry the same call with the same execution id.',
      ),
    };
  }

  // allow — unless the client cancelled the call while the PDP decided: then the tool does not run (MCP:
  // the receiver of a cancellation stops processing it), and this PEP ends the execution it reserved as
  // `rejected` (not invoked), as it does for an allow that came after its PDP timeout.
  if (call.cancelled?.aborted) {
    const detail = 'not invoked: the client cancelled the call before the PDP allowed it';
    const ok = await postOutcome(opts, id, { status: 'rejected', detail });
    log(`writ pep: execution ${id} was cancelled by the client before the PDP's allow; not dispatched; outcome rejected ${ok ? 'recorded' : 'NOT recorded'}`);
    return {
      result: refusalResult(decisionMeta('CANCELLED', id, d), `writ: the call was cancelled before it was dispatched; execution ${id} was not invoked`),
    };
  }

  // allow: dispatch once, bounded.
  const ctl = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = Symbol('timeout');
  const running = dispatch(d.arguments, ctl.signal, d).catch(
    (e): DispatchResult => ({ status: 'unknown', detail: `dispatch failed: ${(e as Error)?.message ?? String(e)}` }),
  );
  const first = await Promise.race([
    running,
    new Promise<typeof timedOut>((res) => {
      timer = setTimeout(() => res(timedOut), opts.callTimeoutMs);
    }),
  ]);
  clearTimeout(timer);
  let outcome: DispatchResult;
  if (first === timedOut) {
    ctl.abort();
    outcome = { status: 'unknown', detail: `no answer from the tool within ${opts.callTimeoutMs} ms` };
    const lateAnswer = running.then(async (late) => {
      const body = outcomeBody(late);
      body.detail = `late answer after the ${opts.callTimeoutMs} ms timeout (outcome already reported unknown): ${late.status}${late.detail ? `: ${late.detail}` : ''}`;
      const lr = await pdp.outcome(id, body, identityToken);
      // The execution already ended `unknown`, so the PDP is expected to refuse this second outcome — and
      // to ledger the refusal with the late answer in it, as evidence for a reconciler.
      const fate = lr.ok
        ? 'the PDP accepted it'
        : lr.error.code === 'EXECUTION_TERMINAL'
          ? 'the PDP ledgered it as a refused second outcome (EXECUTION_TERMINAL), evidence for a reconciler'
          : `the PDP did not take it (${lr.error.code})`;
      log(`writ pep: late answer for execution ${id} after timeout: ${late.status}; not delivered to the client; ${fate}`);
    });
    opts.trackLate?.(lateAnswer);
  } else {
    outcome = first;
  }

  if (outcome.task !== undefined && outcome.status !== 'unknown') {
    // A task: the client gets its handle now; the execution stays `invoking` until the task ends, and
    // the outcome is posted then (retried while the PDP is unreachable).
    const ended = outcome.task.then(async (end) => {
      const ok = await postOutcome(opts, id, outcomeBody(end), [0, ...OUTCOME_BACKGROUND_DELAYS_MS]);
      log(
        `writ pep: the task of execution ${id} ended: outcome ${end.status}${end.detail ? ` (${end.detail})` : ''} ${ok ? 'recorded' : 'NOT recorded; it stays invoking until a pep posts its outcome'}`,
      );
    });
    opts.trackLate?.(ended);
    const handle: CallAnswer = { result: outcome.result as Record<string, unknown> };
    if (outcome.raw !== undefined) handle.raw = outcome.raw;
    return handle;
  }

  // Events the tool reported in its result (`_meta["io.writ/events"]`) are sealed before its outcome,
  // while the execution is still invoking (docs/protocol.md §17).
  const reported = reportedEvents(outcome.result);
  if (reported !== undefined && outcome.status !== 'unknown') {
    const sealed = await pdp.events(id, reported, identityToken);
    if (!sealed.ok)
      log(`writ pep: the ${reported.length} event(s) execution ${id}'s tool reported were not sealed: ${sealed.error.code}: ${sealed.error.message}`);
  }
  const posted = await pdp.outcome(id, outcomeBody(outcome), identityToken);
  if (!posted.ok) {
    log(`writ pep: could not record outcome ${outcome.status} of execution ${id}: ${posted.error.code}: ${posted.error.message}`);
    // The PDP may be restarting: keep trying for a while in the background, or the execution would
    // stay `invoking` (the client is answered now; a retry of it meanwhile meets EXECUTION_IN_FLIGHT).
    if (posted.error.code === 'PDP_UNAVAILABLE') {
      const body = outcomeBody(outcome);
      void postOutcome(opts, id, body, OUTCOME_BACKGROUND_DELAYS_MS).then((ok) =>
        log(
          `writ pep: outcome ${outcome.status} of execution ${id} ${ok ? 'recorded after retries' : 'could not be recorded; it stays invoking until a pep posts its outcome'}`,
        ),
      );
    }
  }
  if (outcome.status === 'unknown') {
    return {
      result: refusalResult(
        decisionMeta('OUTCOME_UNKNOWN', id, d),
        `writ: the outcome of execution ${id} is unknown — the tool may or may not have acted (${outcome.detail ?? 'no detail'}). ` +
          'Retrying this execution id is refused; a reconciler must resolve it, then a new execution that supersedes it may run.',
      ),
    };
  }
  if (outcome.error !== undefined) return { error: outcome.error };
  const answer: CallAnswer = { result: outcome.result as Record<string, unknown> };
  if (outcome.raw !== undefined) answer.raw = outcome.raw;
  return answer;
}

/** Background retries of an outcome the PDP could not take (about a minute in all). */
const OUTCOME_BACKGROUND_DELAYS_MS = [1_000, 2_000, 4_000, 8_000, 15_000, 30_000];

/** Posts an outcome, after each delay in turn until one lands; true when the PDP has it (or had it). */
async function postOutcome(opts: PipelineOptions, id: string, body: OutcomeRequest, delaysMs: number[] = [0]): Promise<boolean> {
  for (const delay of delaysMs) {
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay).unref());
    const r = await opts.pdp.outcome(id, body, opts.identityToken?.());
    if (r.ok) return true;
    if (r.error.code !== 'PDP_UNAVAILABLE') return r.error.code === 'EXECUTION_TERMINAL';
  }
  return false;
}

/**
 * A `tools/list` result with only the tools this caller could be allowed (or need approval) to call
 * (docs/protocol.md §15), judged by the PDP (`POST /v1/tools/visible`) per distinct envelope. The
 * envelope is the request's `_meta["io.writ/envelope"]`, else the PEP's defaults for each tool; a tool
 * whose envelope cannot be known before its arguments are (a subject read from them) stays listed, and
 * so does every tool when the PDP cannot answer: a list is a courtesy, and a call of any tool is decided
 * as any call. The result's other members are kept as they are.
 */
export async function filterToolList(
  opts: Pick<PipelineOptions, 'pdp' | 'server' | 'defaults' | 'log'>,
  meta: unknown,
  result: unknown,
  identityToken?: string,
): Promise<unknown> {
  if (!isObject(result) || !Array.isArray(result.tools)) return result;
  const tools = result.tools as unknown[];
  const sent = isObject(meta) && isObject(meta[META_ENVELOPE]) ? meta[META_ENVELOPE] : undefined;
  const byEnvelope = new Map<string, { envelope: Record<string, unknown>; names: string[] }>();
  for (const t of tools) {
    const name = isObject(t) && typeof t.name === 'string' ? t.name : undefined;
    if (name === undefined) continue;
    let envelope: Record<string, unknown> | undefined = sent;
    if (!envelope && opts.defaults) {
      try {
        envelope = envelopeFromDefaults(opts.defaults, name, {});
      } catch {
        envelope = undefined; // known only from the call's arguments: the tool stays listed
      }
    }
    if (!envelope) continue;
    const key = jcs(envelope);
    const group = byEnvelope.get(key) ?? { envelope, names: [] };
    group.names.push(name);
    byEnvelope.set(key, group);
  }
  const hidden = new Set<string>();
  for (const { envelope, names } of byEnvelope.values()) {
    const r = await opts.pdp.visibleTools(envelope, opts.server, names, identityToken);
    if (!r.ok) {
      opts.log(`writ pep: tools/list not filtered (${r.error.code}: ${r.error.message}); every tool stays listed, each call is still decided`);
      continue;
    }
    const visible = new Set(r.body.visible);
    for (const n of names) if (!visible.has(n)) hidden.add(n);
  }
  if (hidden.size === 0) return result;
  return { ...result, tools: tools.filter((t) => !(isObject(t) && typeof t.name === 'string' && hidden.has(t.name))) };
}
