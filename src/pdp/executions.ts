/**
 * The rest of the execution state machine (executions/machine.ts): outcomes, reconciliation,
 * confirmations and events, and the reads of executions (one execution, the reconciliation queue).
 */
import { WritError, isWritError } from '../errors.js';
import { executionKey } from './admission.js';
import {
  applyConfirmation,
  applyOutcome,
  applyReconcile,
  checkEventsAllowed,
  type Confirmation,
  type Execution,
  type OutcomeStatus,
  type Resolution,
} from '../executions/machine.js';
import { putExecution, queuePrefix, type QueueState } from '../executions/prior.js';
import { admitEvents } from '../executions/events.js';
import { validateConfirmRequest, validateOutcomeRequest, validateReconcileRequest } from '../schemas/validate.js';
import { callerFields, type Caller } from '../identity/caller.js';
import { uidKey, type Uid } from '../util/uid.js';
import type { PdpCore } from './core.js';
import { parseBody } from './body.js';
import type { ApprovalService } from './approvals.js';

/** Execution transitions after the decision, and the reads of executions. */
export class ExecutionService {
  constructor(
    private readonly core: PdpCore,
    private readonly approvals: ApprovalService,
  ) {}

  async outcome(caller: Caller, executionId: string, text: string): Promise<Record<string, unknown>> {
    const body: unknown = parseBody(text);
    validateOutcomeRequest(body);
    if (caller.requester === undefined && body.identity_token !== undefined) {
      throw new WritError('INVALID_REQUEST', 'identity_token is sent only by a delegated pep (docs/protocol.md §13)', { path: '/identity_token' });
    }
    const actor = caller.actor!;
    const key = executionKey(actor, executionId);
    const status: OutcomeStatus = body.status;
    const fields: Record<string, unknown> = {
      kind: 'outcome',
      actor,
      execution_id: executionId,
      status,
      confirmation: body.confirmation ?? 'tool_reported',
      ...callerFields(caller),
    };
    for (const f of ['result_digest', 'downstream_ref', 'detail'] as const) if (body[f] !== undefined) fields[f] = body[f];
    return this.transition(key, executionId, actor, (e) => applyOutcome(e, status, fields.confirmation as Confirmation), fields, 'terminal');
  }

  async reconcile(actorParam: Uid, executionId: string, text: string, caller: Caller): Promise<Record<string, unknown>> {
    const body: unknown = parseBody(text);
    validateReconcileRequest(body);
    const resolution: Resolution = body.resolution;
    const key = executionKey(actorParam, executionId);
    const fields: Record<string, unknown> = {
      kind: 'reconciliation',
      actor: actorParam,
      execution_id: executionId,
      resolution,
      evidence_ref: body.evidence_ref,
      reconciler: caller.role,
      ...callerFields(caller),
    };
    const stuck = { now: this.core.now(), stuckAfterS: this.core.config.stuck_after_s };
    return this.transition(key, executionId, actorParam, (e) => applyReconcile(e, resolution, stuck), fields, 'reconcile');
  }

  /** POST /v1/executions/{id}/confirm (§17): the system of record confirms a committed outcome, later. */
  async confirm(actorParam: Uid, executionId: string, text: string, caller: Caller): Promise<Record<string, unknown>> {
    const body: unknown = parseBody(text);
    validateConfirmRequest(body);
    const fields: Record<string, unknown> = {
      kind: 'confirmation',
      actor: actorParam,
      execution_id: executionId,
      confirmation: 'system_of_record',
      evidence_ref: body.evidence_ref,
      ...(body.downstream_ref !== undefined ? { downstream_ref: body.downstream_ref } : {}),
      ...callerFields(caller),
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
      return await this.core.store.write(
        (tx) => {
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
          putExecution(tx, key, current, { ...current, records: [...current.records, ...seqs] }, this.core.now());
          return { execution_id: executionId, state: current.state, records: sealed };
        },
        { label: 'events', reads: [['executions', key]] },
      );
    } catch (e) {
      if (isWritError(e) && e.code === 'EXECUTION_NOT_FOUND') throw e;
      throw await this.core.refuse(e, key, {
        actor,
        execution_id: executionId,
        ...who,
        attempted: { kind: 'event', count: events.length, types: events.map((ev) => ev.type) },
      });
    }
  }

  /**
   * GET /v1/executions?state=… (§17): the reconciliation queue — executions `unknown` or `invoking`,
   * oldest first (by when they entered that state), optionally only those in it for `olderThanS`
   * seconds; `from` is the `next` of the page before.
   */
  async queue(
    state: QueueState,
    opts: { olderThanS?: number; limit: number; from?: string },
  ): Promise<{ executions: Array<Record<string, unknown>>; next: string | null }> {
    const prefix = queuePrefix(state);
    const after = opts.from === undefined ? undefined : prefix + decodeCursor(opts.from);
    const cutoff = opts.olderThanS === undefined ? undefined : this.core.now().getTime() - opts.olderThanS * 1000;
    const page: Array<Record<string, unknown>> = [];
    let next: string | null = null;
    const rows = this.core.store.entries<{ actor: Uid; execution_id: string }>('meta', prefix);
    const visit = async (rowKey: string, row: { actor: Uid; execution_id: string }): Promise<boolean> => {
      if (after !== undefined && rowKey <= after) return true;
      const since = rowKey.slice(prefix.length, rowKey.indexOf('\n', prefix.length));
      if (cutoff !== undefined && Date.parse(since) > cutoff) return false;
      if (page.length === opts.limit) {
        next = encodeCursor(page.at(-1)!.cursor as string);
        return false;
      }
      const e = await this.core.store.get<Execution>('executions', executionKey(row.actor, row.execution_id));
      // A row is written with its execution in one transaction; a mismatch is only a read between two writes.
      if (!e || e.state !== state) return true;
      page.push({
        execution_id: e.execution_id,
        actor: e.actor,
        state: e.state,
        binding: e.binding,
        server: e.server,
        tool: e.tool,
        since: e.since,
        cursor: rowKey.slice(prefix.length),
      });
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
    const now = this.core.now();
    try {
      const answer = await this.core.store.write(
        (tx) => {
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
        },
        { label },
      );
      this.core.moveExecutionState(from, to!);
      return answer;
    } catch (e) {
      if (isWritError(e) && e.code === 'EXECUTION_NOT_FOUND') throw e;
      // The refused request is kept whole (a late "committed" after a timeout is evidence for a reconciler).
      const { kind: _kind, actor: _actor, execution_id: _id, caller: who, identity, ...attempted } = fields;
      throw await this.core.refuse(e, key, {
        actor,
        execution_id: executionId,
        caller: who,
        ...(identity ? { identity } : {}),
        attempted: { kind: fields.kind, ...attempted },
      });
    }
  }

  /** GET /v1/executions/{id}: the execution, its approvals with validity now, and every record naming it.
   *  `approver`: only an approver of a group one of its decisions required may read it (else 404). */
  async getExecution(actor: Uid, executionId: string, approver?: Uid): Promise<Record<string, unknown>> {
    await this.core.entities.refresh();
    const e = await this.core.store.get<Execution>('executions', executionKey(actor, executionId));
    if (!e || (approver !== undefined && !(e.approval_groups ?? []).some((g) => this.approvals.inApproverGroup(approver, g)))) {
      throw new WritError('EXECUTION_NOT_FOUND', `no execution ${executionId} for ${uidKey(actor)}`);
    }
    const approvals = await this.approvals.approvalViews(e, this.core.now());
    const view: Record<string, unknown> = {
      execution_id: e.execution_id,
      actor: e.actor,
      state: e.state,
      binding: e.binding,
      envelope_digest: e.envelope_digest,
    };
    if (e.resolution) view.resolution = e.resolution;
    if (e.supersedes !== undefined) view.supersedes = e.supersedes;
    if (e.superseded_by !== undefined) view.superseded_by = e.superseded_by;
    view.approvals = approvals;
    // A refusal that named this id before it was reserved (a `supersedes` of an unknown execution, the
    // loser of a supersede race) could not be listed on an execution that did not exist yet: it comes
    // from the ledger's index, so `records` is every record naming the execution.
    const first = e.records[0] ?? Number.MAX_SAFE_INTEGER;
    const earlier =
      first === 0
        ? []
        : (await this.core.store.listRecords({ execution_id: executionId, actor: uidKey(actor), from: 0, limit: 1000 })).records
            .map((r) => r.seq)
            .filter((seq) => seq < first);
    view.records = earlier.length ? [...earlier, ...e.records] : e.records;
    return view;
  }
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
