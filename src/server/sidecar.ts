/**
 * The sidecar's request handlers, independent of HTTP: where a call is admitted, decided and recorded.
 *
 *   decide():   admit (binding) → validate envelope → evaluate Cedar → reserve/transition + ledger in one
 *               durable write → answer. Refusals of §4 are ledgered as `refusal` before they are answered.
 *   outcome(), reconcile(): the rest of the execution state machine (executions/machine.ts).
 *   approve(), revoke(): approvals bound to the consequence (approvals/approvals.ts).
 *   putEntity(): trusted facts, each change ledgered and moving entities_version.
 *
 * Every durable effect goes through Store.write, which resolves only after the commit is fsync'd, so an
 * answer is never sent for something that could still be lost.
 */
import { randomUUID } from 'node:crypto';
import { WritError, isWritError } from '../errors.js';
import { parseLossless, toPlain, type Json } from '../binding/index.js';
import { relabelDepthStop } from '../binding/parse.js';
import { admitNumberToken } from '../binding/admit.js';
import { jsonPointer, LosslessNumber, type LosslessValue } from '../binding/parse.js';
import {
  admitDecision, decisionIndexFields, decisionRecordFields, decisionResponseOf, executionKey, pdpNow, withPriorMember, type AdmittedDecision, type DecisionResponse, type PreparedCommit, type PreparedDecision,
} from './decision-admission.js';
import {
  applyConfirmation, applyOutcome, applyReconcile, checkDecisionAllowed, checkEventsAllowed, stateAfterDecision, takeSupersedeSlot,
  type Confirmation, type Execution, type OutcomeStatus, type Resolution,
} from '../executions/machine.js';
import { countsOf, PENDING_PREFIX, priorCountsKey, priorSeen, putExecution, queuePrefix, samePrior, withApprovalGroups, type Prior, type QueueState } from '../executions/prior.js';
import { admitEvents } from '../executions/events.js';
import { approvalView, invalidReason, type Approval, type ApprovalView } from '../approvals/approvals.js';
import { PolicyEngine, type ValidApproval } from '../policy/engine.js';
import { EvaluatorPool } from '../policy/evaluator-pool.js';
import { checkEntitiesFile, listSourceFiles, loadPolicyDir, policyVersionOf, readSourceFiles, validateEntity, type PolicyBundle } from '../policy/load.js';
import { PolicyFileAbsent, readPolicyFile, signatureOf } from '../policy/dir-files.js';
import { entityFromJson, malformedEscape, unrepresentableAttribute, type EntityJson } from '../policy/entities.js';
import { join } from 'node:path';
import type { LedgerStore, Table, WriteTx } from '../store/types.js';
import { ENTITIES_FILE_KEY, ENTITIES_VERSION_KEY, EntityStore, entitiesFileChanges, subjectRevisionKey } from '../entities/entity-store.js';
import { commitWithRevalidation, storeFailure, type Proposal } from '../pdp/commit.js';
import {
  validateApprovalRequest, validateConfirmRequest, validateEntityUpsert, validateOutcomeRequest, validateReconcileRequest,
} from '../schemas/validate.js';
import * as metrics from '../metrics/metrics.js';
import { callerFields, type Caller } from '../identity/caller.js';
import type { WritConfig } from '../config/config.js';
import { CEDAR_TYPE_NAME, parseUidKey, sameUid, uidKey, type Uid } from '../util/uid.js';
import { jcs } from '../util/canonical.js';
import { presealMembers } from '../store/seal.js';
import * as log from '../log/log.js';

/** Codes of §4 that are ledgered as `refusal` records before they are answered. */
const LEDGERED_REFUSALS = new Set([
  'EXECUTION_CONFLICT', 'EXECUTION_IN_FLIGHT', 'EXECUTION_TERMINAL', 'EXECUTION_SUPERSEDED',
  'EXECUTION_NOT_FOUND', 'EXECUTION_NOT_INVOKING', 'EXECUTION_NOT_UNKNOWN', 'EXECUTION_NOT_CONFIRMABLE',
  // An approval given for a state the execution is not in (or for no execution) is evidence too: the
  // auditor sees who tried to approve what, and why it did not count.
  'APPROVAL_STALE',
]);

/** The meta row of a shared store naming the policy set last recorded as loaded. */
const POLICY_VERSION_KEY = 'policy_version';

export { executionKey, type DecisionResponse } from './decision-admission.js';

/** The uid limits of schemas/defs.json. */
const MAX_TYPE_NAME = 256;
const MAX_ENTITY_ID = 1024;

/**
 * Refuses a number in an entity upsert that the store could not keep exactly: an integer token beyond
 * ±(2^53−1) (a trusted fact stored rounded would be a different fact than the one sent), and an integral
 * value written as a float (`1.0`, `1e0`), whose int/float distinction would be lost. The same rules and
 * codes as admission (§3), with a JSON pointer into the body. Other non-integers are Cedar's to refuse
 * (its entity format has no floats: a decimal is `{"__extn": {"fn": "decimal", "arg": "1.5"}}`).
 */
function refuseInexactIntegers(v: LosslessValue, trail: Array<string | number>): void {
  if (v instanceof LosslessNumber) {
    const admitted = admitNumberToken(v.text);
    if (typeof admitted === 'object' && (admitted.code === 'BINDING_UNSAFE_INTEGER' || admitted.code === 'BINDING_LOSSY_NUMBER')) {
      throw new WritError(admitted.code, admitted.message, { path: jsonPointer(trail) });
    }
  } else if (Array.isArray(v)) {
    v.forEach((item, i) => refuseInexactIntegers(item, [...trail, i]));
  } else if (v !== null && typeof v === 'object') {
    for (const key of Object.keys(v)) refuseInexactIntegers(v[key]!, [...trail, key]);
  }
}

/**
 * Refuses an upsert whose parents would close a cycle in the entity hierarchy through it (Cedar refuses
 * every request over a cyclic hierarchy, so one bad upsert would turn every decision touching it into a
 * deny). The store held no cycle before, so any new one passes through the upserted entity.
 */
function refuseParentCycle(entity: EntityJson, stored: (key: string) => EntityJson | undefined): void {
  const self = uidKey(entity.uid);
  const seen = new Set<string>();
  const walk = (parents: Uid[], path: string[]): void => {
    for (const p of parents) {
      const key = uidKey(p);
      if (key === self) {
        throw new WritError('INVALID_REQUEST', `parents would make a cycle: ${[self, ...path, key].join(' → ')}`, { path: '/parents' });
      }
      if (seen.has(key)) continue;
      seen.add(key);
      walk(stored(key)?.parents ?? [], [...path, key]);
    }
  };
  walk(entity.parents, []);
}

/** A request body, parsed without loss (number tokens kept); an empty one is INVALID_JSON. */
function parseLosslessBody(text: string): LosslessValue {
  if (text.trim() === '') throw new WritError('INVALID_JSON', 'the request body is empty');
  try {
    return parseLossless(text);
  } catch (e) {
    // These bodies carry no arguments: the parser's depth stop is no binding refusal here.
    throw relabelDepthStop(e, () => 'INVALID_REQUEST');
  }
}

function parseBody(text: string): Json {
  return toPlain(parseLosslessBody(text));
}

export class Sidecar {
  engine: PolicyEngine;
  /** Where decisions are evaluated: Cedar on worker threads, or in-process (config.evaluator_threads). */
  readonly evaluator: EvaluatorPool;
  bundle: PolicyBundle;
  readonly entities: EntityStore;
  /** The policy files' content as last applied, to tell a real change from a touch. */
  private lastEntitiesFileText: string | undefined;
  /** The entities.json text first seen changed; applied only when the next poll reads it again. */
  private settlingEntitiesText: string | undefined;
  /**
   * Executions by state, for the metrics gauge: counted from the store once (countExecutionStates, at
   * start), then moved by every committed transition. Performance (issue 8): the gauge used to re-read
   * and JSON.parse the whole executions table every 5 s — O(executions), i.e. the event loop blocked
   * for seconds once a sidecar has seen a million executions.
   */
  readonly executionStates: Record<string, number> = { proposed: 0, invoking: 0, committed: 0, rejected: 0, unknown: 0, reconciled: 0 };

  constructor(
    readonly config: WritConfig,
    readonly store: LedgerStore,
    bundle: PolicyBundle,
  ) {
    this.bundle = bundle;
    this.engine = new PolicyEngine(bundle, { memoSize: config.decision_memo_size });
    this.evaluator = new EvaluatorPool(config.evaluator_threads, { deadlineMs: config.evaluation_deadline_ms });
    this.evaluator.register(this.engine, bundle);
    this.entities = new EntityStore(store);
  }

  private readonly policyListeners: Array<(bundle: PolicyBundle) => void> = [];

  /** Calls `listener` with every policy set that comes into force by a reload. */
  onPolicyChange(listener: (bundle: PolicyBundle) => void): void {
    this.policyListeners.push(listener);
  }

  /** Stops the evaluator threads (decisions still in them are finished in-process). */
  async close(): Promise<void> {
    await this.evaluator.close();
  }

  /** Counts the executions by state from the store (once, at start; later transitions keep it current). */
  async countExecutionStates(): Promise<void> {
    for (const k of Object.keys(this.executionStates)) this.executionStates[k] = 0;
    const count = (e: Execution) => (this.executionStates[e.state] = (this.executionStates[e.state] ?? 0) + 1);
    const all = this.store.entries<Execution>('executions');
    // LMDB iterates synchronously (no microtask per execution when there are millions of them).
    if (Symbol.asyncIterator in all) for await (const [, e] of all) count(e);
    else for (const [, e] of all) count(e);
  }

  private moveExecutionState(from: string | undefined, to: string): void {
    if (from === to) return;
    if (from !== undefined) this.executionStates[from] = (this.executionStates[from] ?? 0) - 1;
    this.executionStates[to] = (this.executionStates[to] ?? 0) + 1;
  }

  /** The PDP clock; `clock_file` (tests only) pins it. */
  now(): Date {
    return pdpNow(this.config.clock_file);
  }

  // ── startup and hot reload ────────────────────────────────────────────────────────────────────

  /** Ledgers the policy set in force when it differs from the last one recorded, and seeds entities. */
  async recordStartup(): Promise<void> {
    await this.entities.reload();
    const last = await this.store.listRecords({ kind: 'policy', from: 0, limit: 1000 });
    let lastVersion: string | undefined;
    let page = last;
    for (;;) {
      for (const r of page.records) if (r.result !== 'rejected') lastVersion = r.policy_version as string;
      if (page.next === null) break;
      page = await this.store.listRecords({ kind: 'policy', from: page.next, limit: 1000 });
    }
    if (lastVersion !== this.bundle.policyVersion) await this.recordPolicyLoad(this.bundle, 'loaded');
    await this.syncEntitiesFile();
  }

  private async recordPolicyLoad(bundle: PolicyBundle | undefined, result: 'loaded' | 'rejected', error?: WritError, version?: string): Promise<void> {
    const fields: Record<string, unknown> = { kind: 'policy', result };
    if (bundle) Object.assign(fields, { policy_version: bundle.policyVersion, files: bundle.files.map(([p]) => p), ids: bundle.ids });
    // The trusted entities this load read from the dir, named by count and content version: they reach
    // the store (and the ledger) as `entity` records with `source: "file"`, which replay rebuilds from.
    if (bundle?.entitiesFile) {
      fields.entities_file = { path: 'entities.json', entities: bundle.entitiesFile.entities, entities_version: bundle.entitiesFile.entitiesVersion };
    }
    else fields.policy_version = version;
    if (error) fields.error = { code: error.code, message: error.message.slice(0, 4000) };
    // Replicas loading the same set (at a joint start or from one mounted policy dir): the first
    // records it, the others find it in force in the store (read under the store's write lock).
    const shared = this.store.shared && result === 'loaded';
    await this.store.write((tx) => {
      if (shared && tx.get<string>('meta', POLICY_VERSION_KEY) === fields.policy_version) return;
      if (shared) tx.put('meta', POLICY_VERSION_KEY, fields.policy_version);
      tx.append(fields as { kind: string });
    }, { label: 'policy', reads: [['meta', POLICY_VERSION_KEY]] });
  }

  /**
   * Hot reload (called on a timer): reload when the policy files' content changed; keep serving the old
   * set when the new one does not load. Entity file edits are applied as `entity` records.
   */
  private lastRejectedVersion: string | undefined;
  /** The policy files' version first seen changed; loaded only when the next poll sees it again. */
  private settlingVersion: string | undefined;
  /** The policy dir's file signature (dir-files.ts signatureOf) when the last poll left nothing settling. */
  private quietSignature: string | undefined;
  async reloadIfChanged(): Promise<void> {
    // Nothing read while no file's size, mtime or inode moved (a 50 MB entities.json is not read every
    // poll); a change still settling (read the same on two polls in a row) is polled until it settles.
    const dir = this.config.policy_dir;
    let signature: string | undefined;
    try {
      signature = signatureOf([...listSourceFiles(dir).map((rel) => join(dir, rel)), join(dir, 'entities.json')]);
    } catch {
      signature = undefined; // the dir cannot be walked: judged below, as before
    }
    if (signature !== undefined && signature === this.quietSignature) return;
    await this.reloadFromDir();
    this.quietSignature = this.settlingVersion === undefined && this.settlingEntitiesText === undefined ? signature : undefined;
  }

  private async reloadFromDir(): Promise<void> {
    const probe = probePolicyVersion(this.config.policy_dir, this.config.policy_file_max_bytes);
    // A file being written (truncated, half its text) must not be loaded as a policy set of its own:
    // a change is loaded once the files read the same on two polls in a row.
    const settled = probe === this.settlingVersion;
    this.settlingVersion = probe === this.bundle.policyVersion ? undefined : probe;
    if (settled && probe !== this.bundle.policyVersion && probe !== this.lastRejectedVersion) {
      try {
        const bundle = loadPolicyDir(this.config.policy_dir, { maxFileBytes: this.config.policy_file_max_bytes });
        const engine = new PolicyEngine(bundle, { memoSize: this.config.decision_memo_size });
        await this.recordPolicyLoad(bundle, 'loaded');
        this.evaluator.register(engine, bundle);
        this.bundle = bundle;
        this.engine = engine;
        for (const l of this.policyListeners) l(bundle);
        this.lastRejectedVersion = undefined;
        metrics.policyReloads.inc({ result: 'ok' });
        log.notice(`writ: policies reloaded (${bundle.policyVersion})`);
      } catch (e) {
        const err = isWritError(e) ? e : new WritError('POLICY_INVALID', String((e as Error)?.message ?? e));
        this.lastRejectedVersion = probe;
        metrics.policyReloads.inc({ result: 'failed' });
        log.warn(`writ: policy reload rejected, still serving ${this.bundle.policyVersion}: ${err.message}`);
        await this.recordPolicyLoad(undefined, 'rejected', err, probe).catch(() => undefined);
      }
    }
    await this.syncEntitiesFile({ settle: true });
  }

  /**
   * Applies `<policy_dir>/entities.json` to the store: on a store that never saw it, it seeds what the
   * store does not hold; afterwards each edit (while running, or while stopped) is applied as what
   * changed in the file (entity-store.ts entitiesFileChanges), once per store whatever the replicas.
   */
  private async syncEntitiesFile(opts: { settle?: boolean } = {}): Promise<void> {
    let text: string;
    let unread: WritError | undefined;
    try {
      text = readPolicyFile(join(this.config.policy_dir, 'entities.json'), 'entities.json', this.config.policy_file_max_bytes);
    } catch (e) {
      if (e instanceof PolicyFileAbsent || !isWritError(e)) return;
      // Not a regular file, or over the size limit: refused below as a file that does not parse is,
      // once for as long as it stays so (the marker stands for its text).
      unread = e;
      text = `\0unread: ${e.message}`;
    }
    if (text === this.lastEntitiesFileText) {
      this.settlingEntitiesText = undefined; // an edit undone before it settled is forgotten
      return;
    }
    // While running, an edit is applied (or refused) once the file reads the same on two polls in a row,
    // as policy files are: a file being written is not judged by its first half.
    if (opts.settle) {
      const settled = text === this.settlingEntitiesText;
      this.settlingEntitiesText = text;
      if (!settled) return;
    }
    this.settlingEntitiesText = undefined;
    let parsed: EntityJson[];
    try {
      // The load-time check, against the schema in force: an entity the next restart would refuse
      // (an undeclared type, a wrong attribute) is refused now, not taken live and ledgered.
      if (unread !== undefined) throw unread;
      parsed = checkEntitiesFile(text, this.bundle.schema);
    } catch (e) {
      this.lastEntitiesFileText = text;
      metrics.policyReloads.inc({ result: 'failed' });
      log.warn(`writ: entities.json not applied: ${(e as Error).message.replace(/\s+/g, ' ')}`);
      // Ledgered as a broken policy file is (a `policy` record, `rejected`, naming the set still in force):
      // an auditor sees that an edit was refused, not only the operator reading stderr.
      const refusal = new WritError('POLICY_INVALID', `entities.json not applied, the entities in force are unchanged: ${(e as Error).message}`);
      await this.recordPolicyLoad(undefined, 'rejected', refusal, this.bundle.policyVersion).catch(() => undefined);
      return;
    }
    await this.entities.unheld();
    await this.applyEntitiesFile(parsed);
    this.lastEntitiesFileText = text;
  }

  private async applyEntitiesFile(parsed: EntityJson[]): Promise<void> {
    const fileText = jcs(parsed);
    let staged: ReturnType<EntityStore['stage']> | undefined;
    await commitWithRevalidation(this, async () => ({
      write: (tx) => {
        staged = undefined;
        const applied = tx.get<EntityJson[]>('meta', ENTITIES_FILE_KEY);
        // Already applied to this store: by another replica, or before a restart.
        if (applied !== undefined && jcs(applied) === fileText) return;
        // The diff reads the entities held here: they must be the store's (checked before this runs),
        // with no change of this process still landing (EntitiesUnsettled → wait for it, again).
        this.entities.checkSettled();
        const changes = entitiesFileChanges(applied, parsed, (key) => this.entities.get(key));
        tx.put('meta', ENTITIES_FILE_KEY, parsed);
        if (changes.length > 0) staged = this.entities.stage(tx, changes, 'file');
      },
      label: 'entity',
      // Every row the write may read, declared: a shared store fetches them in one round trip, where a
      // row it meets undeclared costs a round trip and a fresh run of the whole write (one per entity
      // of a large file: quadratic). The subject revisions of entities the edit drops are not known
      // yet; those few are fetched as met.
      reads: [['meta', ENTITIES_FILE_KEY], ['meta', ENTITIES_VERSION_KEY], ...parsed.map((e): [Table, string] => ['meta', subjectRevisionKey(uidKey(e.uid))])],
      answer: () => staged?.commit(),
      failed: (e) => {
        staged?.abort();
        return e;
      },
    }), { holdEntities: false });
  }

  // ── decisions ─────────────────────────────────────────────────────────────────────────────────

  async decide(caller: Caller, text: string): Promise<DecisionResponse> {
    // performance.now(), not hrtime.bigint(): no BigInt per request, and Node 20's V8 was seen to abort
    // ("Deoptimizer … unreachable code") in hot code timed with BigInt (also noted in bench/decide.mjs).
    const started = performance.now();
    // 1. Admission: lossless parse of the raw text; then the envelope schema; then the arguments.
    const admitted = admitDecision(caller, text, this.config.admission_limits);
    return commitWithRevalidation(this, () => this.decisionProposal(admitted, started), { holdEntities: true });
  }

  /**
   * Commits a decision an HTTP front thread prepared (src/front/): one durable write that reserves the
   * execution and appends the record the front built, if everything the front assumed still holds
   * under the write — no execution under the key (so no approvals and no snapshot to check), the policy
   * set and the entities it evaluated against. Otherwise the request is decided here again from
   * scratch, exactly as if it had come straight to decide().
   */
  async commitPrepared(p: PreparedDecision): Promise<PreparedCommit> {
    const started = p.startedAt - performance.timeOrigin;
    let admitted: AdmittedDecision | undefined;
    return commitWithRevalidation(this, async (attempt): Promise<Proposal<Written, PreparedCommit>> => {
      if (attempt === 0 && p.policyVersion === this.engine.policyVersion && p.entitiesVersion === this.entities.version) return this.preparedProposal(p);
      admitted ??= admitDecision(p.caller, p.text, this.config.admission_limits);
      const direct = await this.decisionProposal(admitted, started);
      return { ...direct, answer: (written) => ({ response: direct.answer(written) }) };
    }, { holdEntities: true });
  }

  /**
   * A decision on a snapshot of the execution, its approvals, the prior counts, the entities and the
   * clock; committed (reserve / transition and ledger, atomically and durably) while that snapshot
   * still holds. Refusals of §4 are ledgered before they are answered.
   */
  private async decisionProposal(admitted: AdmittedDecision, started: number): Promise<Proposal<Written, DecisionResponse>> {
    const { envelope, actor, executionId, phase, server, tool, bound, envDigest, key } = admitted;
    // A refused request that named an execution to supersede says which (the loser of a supersede race
    // is otherwise a refusal of an id that never existed).
    const refusalFields = {
      actor, execution_id: executionId, phase, binding: bound.binding, envelope_digest: envDigest, caller: admitted.caller, ...(admitted.identity ? { identity: admitted.identity } : {}),
      ...(typeof envelope.supersedes === 'string' ? { supersedes: envelope.supersedes } : {}),
    };
    const countsKey = priorCountsKey(actor, bound.binding);
    const [snapshot, priorRow] = await Promise.all([this.store.get<Execution>('executions', key), this.store.get<Prior>('meta', countsKey)]);
    if (snapshot) {
      try {
        checkDecisionAllowed(snapshot, { phase, binding: bound.binding, envelope_digest: envDigest });
      } catch (e) {
        throw await this.refuse(e, key, refusalFields);
      }
    }
    const now = this.now();
    let supersedes: { execution_id: string; state: string; resolution?: Resolution } | undefined;
    // The revision of the retried execution whose state the policy sees: the write checks it.
    let supersedesRev = -1;
    let superseded: Execution | undefined;
    const supersedesId = typeof envelope.supersedes === 'string' ? envelope.supersedes : undefined;
    const supersedesKey = supersedesId === undefined ? undefined : executionKey(actor, supersedesId);
    if (supersedesId !== undefined) {
      const target = await this.store.get<Execution>('executions', supersedesKey!);
      try {
        takeSupersedeSlot(target, executionId, supersedesId);
      } catch (e) {
        throw await this.refuse(e, key, refusalFields);
      }
      superseded = target;
      supersedesRev = target!.rev ?? -1;
      supersedes = { execution_id: target!.execution_id, state: target!.state };
      if (target!.resolution) supersedes.resolution = target!.resolution;
    }
    const subject: Uid = envelope.subject;
    const { valid, views, subjectDigest: approvalsSubjectDigest } = await this.approvalsFor(snapshot, now, bound.binding, envDigest, subject);
    const engine = this.engine;
    const entitiesVersion = this.entities.version;
    const prior = priorSeen(priorRow, bound.binding, snapshot, superseded);
    // Only counts a policy can observe must still hold at the write (many fresh ids for one call that
    // no policy counts are not evaluated again in turn).
    const readsPrior = engine.readsPrior(server, tool);
    const outcome = await this.evaluator.decide(engine, {
      actor, server, tool, subject, envelope, phase, binding: bound.binding, cedarArguments: bound.cedar,
      now, approvals: valid, ...(supersedes ? { supersedes } : {}), prior, entities: this.entities,
    });
    const decisionId = randomUUID();
    // The execution as the write reads it (stillValid reads it once for the write).
    let current: Execution | undefined;
    return {
      entitiesVersion,
      stillValid: (tx) => {
        current = tx.get<Execution>('executions', key);
        if ((current?.rev ?? -1) !== (snapshot?.rev ?? -1)) return false;
        // The approvals were judged against the subject's record as it was then: a change since (even
        // one undone, which leaves the entities version as it was) makes them stale.
        if (approvalsSubjectDigest !== undefined && this.entities.approvalDigestIn(tx, uidKey(subject)) !== approvalsSubjectDigest) return false;
        // Another execution of this call moved (a second id for one consequence ran): evaluate again.
        if (readsPrior && !samePrior(tx.get<Prior>('meta', countsKey), priorRow)) return false;
        // The retried execution moved (an outcome, a reconciliation, an approval) after the policy saw
        // its state: evaluate again, so no retry is allowed on a state it no longer has.
        const seen = supersedesKey === undefined ? undefined : tx.get<Execution>('executions', supersedesKey);
        return seen === undefined || (seen.rev ?? -1) === supersedesRev;
      },
      write: (tx) => {
        if (current) checkDecisionAllowed(current, { phase, binding: bound.binding, envelope_digest: envDigest });
        if (supersedesId !== undefined) {
          const seen = tx.get<Execution>('executions', supersedesKey!);
          const target = takeSupersedeSlot(seen, executionId, supersedesId);
          if (target.superseded_by !== undefined) putExecution(tx, supersedesKey!, seen, { ...target, rev: (target.rev ?? 0) + 1 }, now);
        }
        const state = stateAfterDecision(phase, outcome.decision);
        const fields = decisionRecordFields(admitted, { decisionId, outcome, views, policyVersion: engine.policyVersion, entitiesVersion, now, state, prior });
        const rec = tx.append(decisionIndexFields({ ...admitted, taskId: envelope.task_id }), presealMembers(fields));
        const next: Execution = current
          // A decision that leaves the state as it was changes nothing another decision reads (the records
          // list is not policy input): its revision stays, so concurrent decisions on one execution (many
          // proposes, an execute that denies) are all committed, not evaluated again in turn.
          ? { ...current, state, records: [...current.records, rec.seq], rev: state === current.state ? (current.rev ?? 0) : (current.rev ?? 0) + 1 }
          : {
              execution_id: executionId, actor, state, binding: bound.binding, envelope_digest: envDigest, subject, server, tool,
              ...(supersedesId !== undefined ? { supersedes: supersedesId } : {}),
              approvals: [], records: [rec.seq], rev: 0,
            };
        if (state === 'proposed' && outcome.decision === 'allow') next.allowed = true;
        else delete next.allowed;
        putExecution(tx, key, current, withApprovalGroups(next, outcome.decision, outcome.obligations.map((o) => o.approver_group), rec.seq), now);
        return { seq: rec.seq, hash: rec.hash, state };
      },
      label: snapshot ? 'decision' : 'reserve',
      reads: decisionReads(key, countsKey, supersedesKey),
      answer: (written) => {
        // The write checked that the execution is still the snapshot's (same rev), so it left snapshot.state.
        this.moveExecutionState(snapshot?.state, written.state);
        metrics.decisionsTotal.inc({ decision: outcome.decision });
        metrics.decisionLatency.observe((performance.now() - started) / 1e3);
        return decisionResponseOf(admitted, { decisionId, outcome, policyVersion: engine.policyVersion, entitiesVersion, state: written.state }, written);
      },
      // Refused, and the refusal ledgered like any other (§4).
      failed: (e) => this.refuse(e, key, refusalFields),
      keepsMoving: () => this.refuse(new WritError('EXECUTION_IN_FLIGHT', 'the execution keeps changing; retry later'), key, refusalFields),
    };
  }

  /** A front's prepared decision (front/prepare.ts), committed while no execution holds its key. */
  private preparedProposal(p: PreparedDecision): Proposal<Written, PreparedCommit> {
    const countsKey = priorCountsKey(p.actor, p.binding);
    let prior: Prior | undefined;
    return {
      entitiesVersion: p.entitiesVersion,
      stillValid: (tx) => {
        if (tx.get<Execution>('executions', p.key) !== undefined) return false;
        // The front evaluated with no other execution of this call: where a policy counts them, that must hold.
        prior = countsOf(tx.get<Prior>('meta', countsKey));
        return !p.readsPrior || samePrior(prior, undefined);
      },
      write: (tx) => {
        const rec = tx.append(decisionIndexFields(p), { parts: withPriorMember(p.parts, prior!) });
        const next: Execution = {
          execution_id: p.executionId, actor: p.actor, state: p.state as Execution['state'], binding: p.binding, envelope_digest: p.envDigest, subject: p.subject,
          server: p.server, tool: p.tool, approvals: [], records: [rec.seq], rev: 0,
          ...(p.state === 'proposed' && p.decision === 'allow' ? { allowed: true as const } : {}),
        };
        putExecution(tx, p.key, undefined, withApprovalGroups(next, p.decision, p.approverGroups, rec.seq), new Date(p.now));
        return { seq: rec.seq, hash: rec.hash, state: p.state };
      },
      label: 'reserve',
      reads: decisionReads(p.key, countsKey, undefined),
      answer: (written) => {
        this.moveExecutionState(undefined, p.state);
        metrics.decisionsTotal.inc({ decision: p.decision });
        metrics.decisionLatency.observe((performance.timeOrigin + performance.now() - p.startedAt) / 1e3);
        return { record: { seq: written.seq, hash: written.hash } };
      },
    };
  }

  /** Valid approvals for Cedar (earliest first) and the view of every approval, valid or not. */
  private async approvalsFor(exec: Execution | undefined, now: Date, binding: string, envDigest: string, subject: Uid): Promise<{ valid: ValidApproval[]; views: ApprovalView[]; subjectDigest?: string }> {
    const valid: ValidApproval[] = [];
    const views: ApprovalView[] = [];
    if (!exec || exec.approvals.length === 0) return { valid, views };
    const current = { binding, envelope_digest: envDigest, subjectDigest: await this.entities.approvalDigest(uidKey(subject)) };
    for (const id of exec.approvals) {
      const a = await this.store.get<Approval>('approvals', id);
      if (!a) continue;
      const reason = invalidReason(a, now, current);
      views.push(approvalView(a, reason));
      if (reason === undefined) valid.push({ approval_id: a.approval_id, approver: a.approver, approved_at: a.approved_at, expires_at: a.expires_at });
    }
    return { valid, views, subjectDigest: current.subjectDigest };
  }

  /**
   * Ledgers a §4 refusal (kind `refusal`) and returns the error to answer with. Errors that are not
   * state-machine refusals pass through unchanged; store failures become STORE_UNAVAILABLE.
   */
  private async refuse(e: unknown, key: string | undefined, fields: Record<string, unknown>): Promise<unknown> {
    if (!isWritError(e)) return storeFailure(e);
    if (!LEDGERED_REFUSALS.has(e.code)) return e;
    // Counted once, by the HTTP layer that answers it (src/http/app.ts onError), like every refusal.
    try {
      await this.store.write((tx) => {
        const rec = tx.append({ kind: 'refusal', code: e.code, message: e.message, ...fields });
        const current = key ? tx.get<Execution>('executions', key) : undefined;
        if (current && key) putExecution(tx, key, current, { ...current, records: [...current.records, rec.seq] }, this.now());
      }, { label: 'refusal' });
    } catch (storeError) {
      return storeFailure(storeError);
    }
    return e;
  }

  // ── outcomes and reconciliation ───────────────────────────────────────────────────────────────

  async outcome(caller: Caller, executionId: string, text: string): Promise<Record<string, unknown>> {
    const body = parseBody(text) as Record<string, any>;
    validateOutcomeRequest(body);
    if (caller.requester === undefined && body.identity_token !== undefined) {
      throw new WritError('INVALID_REQUEST', 'identity_token is sent only by a delegated pep (docs/protocol.md §13)', { path: '/identity_token' });
    }
    const actor = caller.actor!;
    const key = executionKey(actor, executionId);
    const status: OutcomeStatus = body.status;
    const fields: Record<string, unknown> = {
      kind: 'outcome', actor, execution_id: executionId, status, confirmation: body.confirmation ?? 'tool_reported', ...callerFields(caller),
    };
    for (const f of ['result_digest', 'downstream_ref', 'detail']) if (body[f] !== undefined) fields[f] = body[f];
    return this.transition(key, executionId, actor, (e) => applyOutcome(e, status, fields.confirmation as Confirmation), fields, 'terminal');
  }

  async reconcile(actorParam: Uid, executionId: string, text: string, caller: Caller): Promise<Record<string, unknown>> {
    const body = parseBody(text) as Record<string, any>;
    validateReconcileRequest(body);
    const resolution: Resolution = body.resolution;
    const key = executionKey(actorParam, executionId);
    const fields: Record<string, unknown> = {
      kind: 'reconciliation', actor: actorParam, execution_id: executionId, resolution, evidence_ref: body.evidence_ref, reconciler: caller.role,
      ...callerFields(caller),
    };
    const stuck = { now: this.now(), stuckAfterS: this.config.stuck_after_s };
    return this.transition(key, executionId, actorParam, (e) => applyReconcile(e, resolution, stuck), fields, 'reconcile');
  }

  /** POST /v1/executions/{id}/confirm (§17): the system of record confirms a committed outcome, later. */
  async confirm(actorParam: Uid, executionId: string, text: string, caller: Caller): Promise<Record<string, unknown>> {
    const body = parseBody(text) as Record<string, any>;
    validateConfirmRequest(body);
    const fields: Record<string, unknown> = {
      kind: 'confirmation', actor: actorParam, execution_id: executionId, confirmation: 'system_of_record', evidence_ref: body.evidence_ref,
      ...(body.downstream_ref !== undefined ? { downstream_ref: body.downstream_ref } : {}), ...callerFields(caller),
    };
    return this.transition(executionKey(actorParam, executionId), executionId, actorParam, applyConfirmation, fields, 'confirmation');
  }

  /**
   * POST /v1/executions/{id}/events (§17): what the tool did inside the call, one `event` record per
   * event, in order, in one durable write — only while the PEP's own execution is `invoking`.
   */
  async events(caller: Caller, executionId: string, text: string): Promise<Record<string, unknown>> {
    const events = admitEvents(text, caller.requester !== undefined);
    const actor = caller.actor!;
    const key = executionKey(actor, executionId);
    const who = callerFields(caller);
    try {
      return await this.store.write((tx) => {
        const current = tx.get<Execution>('executions', key);
        if (!current) throw new WritError('EXECUTION_NOT_FOUND', `no execution ${executionId} for ${uidKey(actor)}`);
        checkEventsAllowed(current);
        const seqs: number[] = [];
        const sealed: Array<{ seq: number; hash: string }> = [];
        for (const event of events) {
          const rec = tx.append({ kind: 'event', actor, execution_id: executionId, event, ...who });
          seqs.push(rec.seq);
          sealed.push({ seq: rec.seq, hash: rec.hash });
        }
        // Events change nothing a decision reads: the revision stays.
        putExecution(tx, key, current, { ...current, records: [...current.records, ...seqs] }, this.now());
        return { execution_id: executionId, state: current.state, records: sealed };
      }, { label: 'events', reads: [['executions', key]] });
    } catch (e) {
      if (isWritError(e) && e.code === 'EXECUTION_NOT_FOUND') throw e;
      throw await this.refuse(e, key, { actor, execution_id: executionId, ...who, attempted: { kind: 'event', count: events.length, types: events.map((ev) => ev.type) } });
    }
  }

  /**
   * GET /v1/executions?state=… (§17): the reconciliation queue — executions `unknown` or `invoking`,
   * oldest first (by when they entered that state), optionally only those in it for `olderThanS`
   * seconds; `from` is the `next` of the page before.
   */
  async queue(state: QueueState, opts: { olderThanS?: number; limit: number; from?: string }): Promise<{ executions: Array<Record<string, unknown>>; next: string | null }> {
    const prefix = queuePrefix(state);
    const after = opts.from === undefined ? undefined : prefix + decodeCursor(opts.from);
    const cutoff = opts.olderThanS === undefined ? undefined : this.now().getTime() - opts.olderThanS * 1000;
    const page: Array<Record<string, unknown>> = [];
    let next: string | null = null;
    const rows = this.store.entries<{ actor: Uid; execution_id: string }>('meta', prefix);
    const visit = async (rowKey: string, row: { actor: Uid; execution_id: string }): Promise<boolean> => {
      if (after !== undefined && rowKey <= after) return true;
      const since = rowKey.slice(prefix.length, rowKey.indexOf('\n', prefix.length));
      if (cutoff !== undefined && Date.parse(since) > cutoff) return false;
      if (page.length === opts.limit) {
        next = encodeCursor(page.at(-1)!.cursor as string);
        return false;
      }
      const e = await this.store.get<Execution>('executions', executionKey(row.actor, row.execution_id));
      // A row is written with its execution in one transaction; a mismatch is only a read between two writes.
      if (!e || e.state !== state) return true;
      page.push({ execution_id: e.execution_id, actor: e.actor, state: e.state, binding: e.binding, server: e.server, tool: e.tool, since: e.since, cursor: rowKey.slice(prefix.length) });
      return true;
    };
    if (Symbol.asyncIterator in rows) {
      for await (const [k, row] of rows) if (!(await visit(k, row))) break;
    } else {
      for (const [k, row] of rows) if (!(await visit(k, row))) break;
    }
    return { executions: page.map(({ cursor: _cursor, ...view }) => view), next };
  }

  private async transition(key: string, executionId: string, actor: Uid, step: (e: Execution) => Execution, fields: Record<string, unknown>, label: string) {
    let from: string | undefined;
    let to: string | undefined;
    const now = this.now();
    try {
      const answer = await this.store.write((tx) => {
        const current = tx.get<Execution>('executions', key);
        if (!current) throw new WritError('EXECUTION_NOT_FOUND', `no execution ${executionId} for ${uidKey(actor)}`);
        const next = step(current);
        from = current.state;
        to = next.state;
        const rec = tx.append(fields as { kind: string });
        putExecution(tx, key, current, { ...next, records: [...current.records, rec.seq], rev: (current.rev ?? 0) + 1 }, now);
        const answer: Record<string, unknown> = { execution_id: executionId, state: next.state, record: { seq: rec.seq, hash: rec.hash } };
        if (next.resolution) answer.resolution = next.resolution;
        return answer;
      }, { label });
      this.moveExecutionState(from, to!);
      return answer;
    } catch (e) {
      if (isWritError(e) && e.code === 'EXECUTION_NOT_FOUND') throw e;
      // The refused request is kept whole (a late "committed" after a timeout is evidence for a reconciler).
      const { kind: _kind, actor: _actor, execution_id: _id, caller: who, identity, ...attempted } = fields;
      throw await this.refuse(e, key, { actor, execution_id: executionId, caller: who, ...(identity ? { identity } : {}), attempted: { kind: fields.kind, ...attempted } });
    }
  }

  /** Whether `principal` is in the approver group `group` (`Type::"id"`) in the entity store, transitively. */
  private inApproverGroup(principal: Uid, group: string): boolean {
    const target = parseUidKey(group);
    if (!target) return false;
    const goal = uidKey(target);
    const seen = new Set<string>();
    const walk = (key: string): boolean => {
      if (key === goal) return true;
      if (seen.has(key)) return false;
      seen.add(key);
      return (this.entities.get(key)?.parents ?? []).some((p) => walk(uidKey(p)));
    };
    return walk(uidKey(principal));
  }

  /**
   * GET /v1/approvals/pending (§17): the executions waiting for an approval this approver can give —
   * `proposed`, latest decision approval_required with an approver group the approver is in — newest
   * first, each with the call exactly as admitted and the approvals it already has.
   */
  async pendingApprovals(caller: Caller): Promise<{ pending: Array<Record<string, unknown>> }> {
    await this.entities.refresh();
    const approver = caller.principal!;
    const now = this.now();
    const keys: string[] = [];
    const rows = this.store.entries<{ actor: Uid; execution_id: string }>('meta', PENDING_PREFIX);
    if (Symbol.asyncIterator in rows) for await (const [, row] of rows) keys.push(executionKey(row.actor, row.execution_id));
    else for (const [, row] of rows) keys.push(executionKey(row.actor, row.execution_id));
    const pending: Array<Record<string, unknown> & { decided_at: string }> = [];
    for (const key of keys) {
      const e = await this.store.get<Execution>('executions', key);
      if (!e || e.state !== 'proposed' || !e.pending || !e.pending.groups.some((g) => this.inApproverGroup(approver, g))) continue;
      const r = (await this.store.getRecord(e.pending.seq)) as Record<string, any> | undefined;
      if (!r || r.kind !== 'decision') continue;
      const env = r.envelope as Record<string, any>;
      const item: Record<string, unknown> & { decided_at: string } = {
        execution_id: e.execution_id, actor: e.actor, requester: env.requester, subject: env.subject, task_id: env.task_id, purpose: env.purpose,
        decided_at: r.now as string,
      };
      for (const f of ['authoritative_event', 'execute_after', 'evidence_refs']) if (env[f] !== undefined && env[f] !== null) item[f] = env[f];
      Object.assign(item, {
        action: { server: r.server, tool: r.tool, arguments: r.arguments }, binding: e.binding, envelope_digest: e.envelope_digest,
        decided_at: r.now, reasons: r.reasons, obligations: r.obligations, approvals: await this.approvalViews(e, now),
      });
      pending.push(item);
    }
    pending.sort((a, b) => Date.parse(b.decided_at) - Date.parse(a.decided_at));
    return { pending };
  }

  /** An execution's approvals with their validity now (§4), as GET /v1/executions shows them. */
  private async approvalViews(e: Execution, now: Date): Promise<ApprovalView[]> {
    const current = { binding: e.binding, envelope_digest: e.envelope_digest, subjectDigest: await this.entities.approvalDigest(uidKey(e.subject)) };
    return (await Promise.all(e.approvals.map((id) => this.store.get<Approval>('approvals', id))))
      .filter((a): a is Approval => a !== undefined)
      .map((a) => approvalView(a, invalidReason(a, now, current)));
  }

  /** GET /v1/executions/{id}: the execution, its approvals with validity now, and every record naming it.
   *  `approver`: only an approver of a group one of its decisions required may read it (else 404). */
  async getExecution(actor: Uid, executionId: string, approver?: Uid): Promise<Record<string, unknown>> {
    await this.entities.refresh();
    const e = await this.store.get<Execution>('executions', executionKey(actor, executionId));
    if (!e || (approver !== undefined && !(e.approval_groups ?? []).some((g) => this.inApproverGroup(approver, g)))) {
      throw new WritError('EXECUTION_NOT_FOUND', `no execution ${executionId} for ${uidKey(actor)}`);
    }
    const approvals = await this.approvalViews(e, this.now());
    const view: Record<string, unknown> = {
      execution_id: e.execution_id, actor: e.actor, state: e.state, binding: e.binding, envelope_digest: e.envelope_digest,
    };
    if (e.resolution) view.resolution = e.resolution;
    if (e.supersedes !== undefined) view.supersedes = e.supersedes;
    if (e.superseded_by !== undefined) view.superseded_by = e.superseded_by;
    view.approvals = approvals;
    // A refusal that named this id before it was reserved (a `supersedes` of an unknown execution, the
    // loser of a supersede race) could not be listed on an execution that did not exist yet: it comes
    // from the ledger's index, so `records` is every record naming the execution.
    const first = e.records[0] ?? Number.MAX_SAFE_INTEGER;
    const earlier = first === 0 ? [] : (await this.store.listRecords({ execution_id: executionId, actor: uidKey(actor), from: 0, limit: 1000 })).records
      .map((r) => r.seq)
      .filter((seq) => seq < first);
    view.records = earlier.length ? [...earlier, ...e.records] : e.records;
    return view;
  }

  // ── approvals ─────────────────────────────────────────────────────────────────────────────────

  async approve(caller: Caller, text: string): Promise<Record<string, unknown>> {
    const body = parseBody(text) as Record<string, any>;
    validateApprovalRequest(body);
    const now = this.now();
    const expires = Date.parse(body.expires_at);
    if (!(expires > now.getTime())) throw new WritError('INVALID_REQUEST', 'expires_at is not in the future', { path: '/expires_at' });
    if (expires > now.getTime() + this.config.approval_max_ttl_s * 1000) {
      throw new WritError('INVALID_REQUEST', `expires_at is beyond approval_max_ttl_s (${this.config.approval_max_ttl_s} s)`, { path: '/expires_at' });
    }
    const actor: Uid = { type: body.actor.type, id: body.actor.id };
    const key = executionKey(actor, body.execution_id);
    const approvalId = `apr_${randomUUID()}`;
    return commitWithRevalidation(this, async () => ({
      write: (tx: WriteTx) => {
        const e = tx.get<Execution>('executions', key);
        if (!e || e.state !== 'proposed' || e.binding !== body.binding || e.envelope_digest !== body.envelope_digest) {
          throw new WritError('APPROVAL_STALE', e ? `execution ${body.execution_id} is ${e.state} with ${e.binding === body.binding && e.envelope_digest === body.envelope_digest ? 'these' : 'other'} digests` : `no execution ${body.execution_id} for ${uidKey(actor)}`);
        }
        const approval: Approval = {
          approval_id: approvalId, approver: caller.principal!, actor, execution_id: e.execution_id, binding: e.binding,
          envelope_digest: e.envelope_digest, approved_at: now.toISOString(), expires_at: body.expires_at, subject: e.subject,
          subject_digest: this.entities.approvalDigestIn(tx, uidKey(e.subject)),
        };
        tx.put('approvals', approvalId, approval);
        const rec = tx.append({ kind: 'approval', ...approval, ...callerFields(caller) });
        putExecution(tx, key, e, { ...e, approvals: [...e.approvals, approvalId], records: [...e.records, rec.seq], rev: (e.rev ?? 0) + 1 }, now);
        return { approval_id: approvalId, approved_at: approval.approved_at, expires_at: approval.expires_at, record: { seq: rec.seq, hash: rec.hash } };
      },
      label: 'approval',
      reads: [['executions', key], ['meta', ENTITIES_VERSION_KEY]],
      answer: (answer: Record<string, unknown>) => answer,
      failed: async (e: unknown) => {
        if (!isWritError(e) || e.code !== 'APPROVAL_STALE') return storeFailure(e);
        return this.refuse(e, key, {
          actor, execution_id: body.execution_id, approver: caller.principal!, ...callerFields(caller),
          attempted: { kind: 'approval', binding: body.binding, envelope_digest: body.envelope_digest, expires_at: body.expires_at },
        });
      },
    }), { holdEntities: false });
  }

  async revoke(caller: Caller, approvalId: string): Promise<Record<string, unknown>> {
    const now = this.now();
    return this.store.write((tx) => {
      const a = tx.get<Approval>('approvals', approvalId);
      if (!a) throw new WritError('NOT_FOUND', `no approval ${approvalId}`);
      if (!sameUid(a.approver, caller.principal!)) throw new WritError('FORBIDDEN_ROLE', 'only the approver who gave an approval can revoke it');
      // Revoking again answers the first revocation (its record too, for approvals revoked since it is kept).
      if (a.revoked_at !== undefined) return { approval_id: approvalId, revoked_at: a.revoked_at, ...(a.revocation_record ? { record: a.revocation_record } : {}) };
      const revokedAt = now.toISOString();
      const rec = tx.append({ kind: 'revocation', approval_id: approvalId, approver: a.approver, actor: a.actor, execution_id: a.execution_id, revoked_at: revokedAt, ...callerFields(caller) });
      const revoked: Approval = { ...a, revoked_at: revokedAt, revocation_record: { seq: rec.seq, hash: rec.hash } };
      tx.put('approvals', approvalId, revoked);
      const key = executionKey(a.actor, a.execution_id);
      const e = tx.get<Execution>('executions', key);
      if (e) putExecution(tx, key, e, { ...e, records: [...e.records, rec.seq], rev: (e.rev ?? 0) + 1 }, now);
      return { approval_id: approvalId, revoked_at: revokedAt, record: { seq: rec.seq, hash: rec.hash } };
    }, { label: 'revocation' }).catch((e) => { throw isWritError(e) ? e : storeFailure(e); });
  }

  // ── trusted facts ─────────────────────────────────────────────────────────────────────────────

  async putEntity(caller: Caller, type: string, id: string, text: string): Promise<Record<string, unknown>> {
    // The same limits as a uid anywhere else (schemas/defs.json): a path the store cannot key is bad input, not an outage.
    if (!CEDAR_TYPE_NAME.test(type) || type.length > MAX_TYPE_NAME) throw new WritError('INVALID_REQUEST', `${JSON.stringify(type)} is not a Cedar type name`);
    if (id.length > MAX_ENTITY_ID) throw new WritError('INVALID_REQUEST', `an entity id is at most ${MAX_ENTITY_ID} characters`);
    const raw = parseLosslessBody(text);
    refuseInexactIntegers(raw, []);
    const body = toPlain(raw) as Record<string, any>;
    validateEntityUpsert(body);
    const problem = malformedEscape(body.attrs, ['attrs']) ?? unrepresentableAttribute(body.attrs, ['attrs']);
    if (problem) throw new WritError('INVALID_REQUEST', problem.message, { path: jsonPointer(problem.trail) });
    const checked = entityFromJson({ uid: { type, id }, attrs: body.attrs, parents: body.parents }, 'body');
    if (Array.isArray(checked)) throw new WritError('INVALID_REQUEST', checked.join('; '));
    validateEntity(this.bundle, checked);
    let staged: ReturnType<EntityStore['stage']> | undefined;
    // A decision starved by entity changes goes first (EntityStore.hold()).
    await this.entities.unheld();
    const rec = await commitWithRevalidation(this, async () => ({
      write: (tx: WriteTx) => {
        // Fresh (checked before this runs) and settled before the cycle check reads the entities held
        // here (stage() checks again).
        this.entities.checkSettled();
        refuseParentCycle(checked, (key) => this.entities.get(key));
        staged = this.entities.stage(tx, [{ entity: checked }], 'api', callerFields(caller));
        return staged.records[0]!;
      },
      label: 'entity',
      reads: [['meta', ENTITIES_VERSION_KEY], ['meta', subjectRevisionKey(uidKey(checked.uid))]] as Array<[Table, string]>,
      answer: (seq: number) => seq,
      failed: (e: unknown) => {
        staged?.abort();
        return storeFailure(e);
      },
    }), { holdEntities: false });
    staged!.commit();
    const record = await this.store.getRecord(rec);
    return { uid: checked.uid, attrs: checked.attrs, parents: checked.parents, entities_version: staged!.version, record: { seq: rec, hash: record?.hash } };
  }

  async getEntity(type: string, id: string): Promise<EntityJson> {
    await this.entities.refresh();
    const e = this.entities.get(uidKey({ type, id }));
    if (!e) throw new WritError('NOT_FOUND', `no entity ${uidKey({ type, id })}`);
    return e;
  }
}

/** What a decision's write returns: its record and the state it left the execution in. */
type Written = { seq: number; hash: string; state: string };

/** The rows a decision's write reads, fetched with its batch by a shared store. */
function decisionReads(key: string, countsKey: string, supersedesKey: string | undefined): Array<[Table, string]> {
  const reads: Array<[Table, string]> = [['executions', key], ['meta', ENTITIES_VERSION_KEY], ['meta', countsKey]];
  if (supersedesKey !== undefined) reads.push(['executions', supersedesKey]);
  return reads;
}

/** A queue page's `next`: the position after its last row, opaque to the client (URL-safe). */
function encodeCursor(position: string): string {
  return Buffer.from(position, 'utf8').toString('base64url');
}
function decodeCursor(cursor: string): string {
  const position = /^[A-Za-z0-9_-]{1,4000}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  if (!/^\d{4}-\d\d-\d\dT[^\n]+\n[^\n]+\n/.test(position)) throw new WritError('INVALID_REQUEST', 'query parameter from is not a `next` this route answered');
  return position;
}

/** The policy version the dir would have now, computed cheaply from file contents (no Cedar parsing). */
function probePolicyVersion(dir: string, maxFileBytes: number): string {
  try {
    return policyVersionOf(readSourceFiles(dir, maxFileBytes));
  } catch {
    return 'unreadable';
  }
}
