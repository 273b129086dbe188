/**
 * Prometheus metrics (docs/protocol.md §8 `GET /metrics`), on writ's own prom-client Registry — never the
 * global one, so embedding writ (or loading it twice in tests) cannot collide with a host's metrics.
 * Default process/Node.js metrics are collected on the same registry.
 */
import promClient from 'prom-client';
import { addTally, evaluationTally, type EvaluationTally } from '../policy/memo.js';

// prom-client is CommonJS; under NodeNext its default import is module.exports.
const { Registry, Counter, Gauge, Histogram, collectDefaultMetrics } = promClient;

export const registry = new Registry();

/** Decisions answered, by result: allow | deny | approval_required. */
export const decisionsTotal = new Counter({
  name: 'writ_decisions_total',
  help: 'Decisions answered, by decision (allow, deny, approval_required).',
  labelNames: ['decision'] as const,
  registers: [registry],
});

/** AuthZEN evaluations answered (docs/protocol.md §10), by writ's decision; kept apart from MCP decisions. */
export const authzenEvaluationsTotal = new Counter({
  name: 'writ_authzen_evaluations_total',
  help: 'AuthZEN evaluations answered, by decision (allow, deny, approval_required).',
  labelNames: ['decision'] as const,
  registers: [registry],
});

/** Refusals (4xx/5xx answers with an error code), by code. */
export const refusalsTotal = new Counter({
  name: 'writ_refusals_total',
  help: 'Requests refused with an error code, by code (e.g. ENVELOPE_INVALID, EXECUTION_CONFLICT).',
  labelNames: ['code'] as const,
  registers: [registry],
});

/** Time from a decision request's admission to its durable answer, in seconds. */
export const decisionLatency = new Histogram({
  name: 'writ_decision_latency_seconds',
  help: 'Decision latency in seconds, from admission to durable answer.',
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [registry],
});

/** Records in the ledger (the next seq). */
export const ledgerRecords = new Gauge({
  name: 'writ_ledger_records',
  help: 'Number of records in the ledger.',
  registers: [registry],
});

/** Policy loads and hot reloads, by result: ok | failed. */
export const policyReloads = new Counter({
  name: 'writ_policy_reloads_total',
  help: "Policy set loads (the start's included) and hot reloads, by result (ok, failed; a refused entities.json edit counts as failed).",
  labelNames: ['result'] as const,
  registers: [registry],
});

/**
 * Polls of the policy dir that have ended, whatever they found: a poll that finds nothing new leaves no
 * record or log line, and this is how an operator or a test knows the dir has been looked at since.
 */
export const policyPolls = new Counter({
  name: 'writ_policy_polls_total',
  help: 'Polls of the policy dir (policy files and entities.json) that have ended, whether they found nothing, applied a change or failed.',
  registers: [registry],
});

/** JWKS fetch rounds (discovery and keys, docs/protocol.md §13), by issuer and result: a failing issuer shows here first. */
export const jwksFetches = new Counter({
  name: 'writ_jwks_fetches_total',
  help: "Fetches of a JWT issuer's keys (at most one per 30 s per issuer), by issuer and result (ok, failed).",
  labelNames: ['issuer', 'result'] as const,
  registers: [registry],
});

/** Checkpoints this process signed and wrote (docs/protocol.md §6): a replica whose count stalls is not checkpointing. */
export const checkpointsWritten = new Counter({
  name: 'writ_checkpoints_written_total',
  help: 'Signed checkpoints this process wrote into the ledger.',
  registers: [registry],
});

/** 1 once this process's signing key was rotated out by `writ keys rotate`: it writes no more checkpoints until restarted with the new key. */
export const signingKeyRetired = new Gauge({
  name: 'writ_signing_key_retired',
  help: "1 when this replica's signing key is no longer the ledger's (rotated out): it writes no checkpoints until restarted with the new key file.",
  registers: [registry],
});

/** The largest checkpoint size each witness cosigned (docs/protocol.md §16): one that stays behind the ledger is down or refusing. */
export const witnessCosignedSize = new Gauge({
  name: 'writ_witness_cosigned_size',
  help: 'Tree size of the latest checkpoint each configured witness cosigned, by witness URL.',
  labelNames: ['witness'] as const,
  registers: [registry],
});

/** Checkpoint submissions to witnesses, by witness and result (cosigned, conflict, refused, unreachable). */
export const witnessSubmissions = new Counter({
  name: 'writ_witness_submissions_total',
  help: 'add-checkpoint requests to witnesses, by witness URL and result (cosigned, conflict, refused, unreachable).',
  labelNames: ['witness', 'result'] as const,
  registers: [registry],
});

/** Executions currently in each state. */
export const executionsByState = new Gauge({
  name: 'writ_executions',
  help: 'Executions by state (proposed, invoking, committed, rejected, unknown, reconciled).',
  labelNames: ['state'] as const,
  registers: [registry],
});

/**
 * Answers not yet added to `httpRequests`: counted in a plain map on the hot path (the ledger writer's
 * thread counts every front's decision) and added to the counter when it is scraped.
 */
const uncountedAnswers = new Map<string, { route: string; status: string; n: number }>();

/** One HTTP answer, by route pattern (e.g. /v1/executions/:id) and status. */
export function countHttpAnswer(route: string, status: number): void {
  const key = `${status} ${route}`;
  const entry = uncountedAnswers.get(key);
  if (entry) entry.n++;
  else uncountedAnswers.set(key, { route, status: String(status), n: 1 });
}

/** HTTP requests answered, by route pattern (e.g. /v1/executions/:id) and status. */
export const httpRequests = new Counter({
  name: 'writ_http_requests_total',
  help: 'HTTP requests answered, by route pattern and status code.',
  labelNames: ['route', 'status'] as const,
  registers: [registry],
  collect() {
    for (const entry of uncountedAnswers.values()) {
      if (entry.n === 0) continue;
      this.inc({ route: entry.route, status: entry.status }, entry.n);
      entry.n = 0;
    }
  },
});

// Known label values start at 0 so dashboards and rate() see every series from the first scrape.
for (const decision of ['allow', 'deny', 'approval_required']) decisionsTotal.inc({ decision }, 0);
for (const result of ['ok', 'failed']) policyReloads.inc({ result }, 0);
for (const state of ['proposed', 'invoking', 'committed', 'rejected', 'unknown', 'reconciled']) executionsByState.set({ state }, 0);

/**
 * Where decision-memo and residual counts come from at scrape time: this thread's own tally, plus every
 * source added here (the HTTP fronts' latest tallies, src/front/fronts.ts).
 */
const tallySources = new Set<() => EvaluationTally>();
export function addEvaluationTallySource(source: () => EvaluationTally): () => void {
  tallySources.add(source);
  return () => tallySources.delete(source);
}
function summedTally(): EvaluationTally {
  const sum = { ...evaluationTally };
  for (const source of tallySources) addTally(sum, source());
  return sum;
}

/** Decision-memo lookups by result (hit, miss): the share of decisions answered without evaluating policies. */
export const decisionMemoLookups = new Counter({
  name: 'writ_decision_memo_lookups_total',
  help: 'Decision memo lookups, by result (hit, miss); hits are answered without evaluating policies.',
  labelNames: ['result'] as const,
  registers: [registry],
  collect() {
    const t = summedTally();
    this.reset();
    this.inc({ result: 'hit' }, t.memoHits);
    this.inc({ result: 'miss' }, t.memoMisses);
  },
});

/** Memo misses answered by a residual program (Cedar's partial evaluation, src/policy/residual.ts) rather than a full Cedar call. */
export const residualAnswersTotal = new Counter({
  name: 'writ_decision_residual_answers_total',
  help: 'Decisions answered by a residual program of the policies (partial evaluation) instead of a full Cedar call.',
  registers: [registry],
  collect() {
    this.reset();
    this.inc(summedTally().residualAnswers);
  },
});

collectDefaultMetrics({ register: registry });

/** The Content-Type of renderMetrics()'s text (Prometheus text exposition format 0.0.4). */
export const metricsContentType: string = registry.contentType;

/** The Prometheus text exposition of every writ metric. */
export function renderMetrics(): Promise<string> {
  return registry.metrics();
}
