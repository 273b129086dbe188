/**
 * Approvals bound to the consequence (approvals/approvals.ts, docs/protocol.md §5, §17): giving and
 * revoking them, the approver's pending queue, and their validity now.
 */
import { randomUUID } from 'node:crypto';
import { WritError, isWritError } from '../errors.js';
import { executionKey } from './admission.js';
import type { Execution } from '../executions/machine.js';
import { PENDING_PREFIX, putExecution } from '../executions/prior.js';
import { approvalView, invalidReason, type Approval, type ApprovalView } from '../approvals/approvals.js';
import type { WriteTx } from '../store/types.js';
import { ENTITIES_VERSION_KEY } from '../entities/entity-cache.js';
import { commitWithRevalidation, storeFailure } from './commit.js';
import { validateApprovalRequest, type DecisionEnvelope } from '../schemas/validate.js';
import { callerFields, type Caller } from '../identity/caller.js';
import { parseUidKey, sameUid, uidKey, type Uid } from '../util/uid.js';
import type { PdpCore } from './core.js';
import { parseBody } from './body.js';

/** Approvals: given, revoked, pending, and judged now. */
/** The members of a stored `decision` record (docs/protocol.md §6) the pending listing reads. */
type StoredDecision = {
  kind: string;
  envelope: DecisionEnvelope;
  now: string;
  server: string;
  tool: string;
  arguments: unknown;
  reasons: string[];
  obligations: unknown[];
};

export class ApprovalService {
  constructor(private readonly core: PdpCore) {}

  /** Whether `principal` is in the approver group `group` (`Type::"id"`) in the entity store, transitively. */
  inApproverGroup(principal: Uid, group: string): boolean {
    const target = parseUidKey(group);
    if (!target) return false;
    const goal = uidKey(target);
    const seen = new Set<string>();
    const walk = (key: string): boolean => {
      if (key === goal) return true;
      if (seen.has(key)) return false;
      seen.add(key);
      return (this.core.entities.get(key)?.parents ?? []).some((p) => walk(uidKey(p)));
    };
    return walk(uidKey(principal));
  }

  /**
   * GET /v1/approvals/pending (§17): the executions waiting for an approval this approver can give —
   * `proposed`, latest decision approval_required with an approver group the approver is in — newest
   * first, each with the call exactly as admitted and the approvals it already has.
   */
  async pendingApprovals(caller: Caller): Promise<{ pending: Array<Record<string, unknown>> }> {
    await this.core.entities.refresh();
    const approver = caller.principal!;
    const now = this.core.now();
    const keys: string[] = [];
    const rows = this.core.store.entries<{ actor: Uid; execution_id: string }>('meta', PENDING_PREFIX);
    if (Symbol.asyncIterator in rows) for await (const [, row] of rows) keys.push(executionKey(row.actor, row.execution_id));
    else for (const [, row] of rows) keys.push(executionKey(row.actor, row.execution_id));
    const pending: Array<Record<string, unknown> & { decided_at: string }> = [];
    for (const key of keys) {
      const e = await this.core.store.get<Execution>('executions', key);
      if (e?.state !== 'proposed' || !e.pending || !e.pending.groups.some((g) => this.inApproverGroup(approver, g))) continue;
      const r = (await this.core.store.getRecord(e.pending.seq)) as StoredDecision | undefined;
      if (r?.kind !== 'decision') continue;
      const env = r.envelope;
      const item: Record<string, unknown> & { decided_at: string } = {
        execution_id: e.execution_id,
        actor: e.actor,
        requester: env.requester,
        subject: env.subject,
        task_id: env.task_id,
        purpose: env.purpose,
        decided_at: r.now,
      };
      for (const f of ['authoritative_event', 'execute_after', 'evidence_refs'] as const) if (env[f] !== undefined && env[f] !== null) item[f] = env[f];
      Object.assign(item, {
        action: { server: r.server, tool: r.tool, arguments: r.arguments },
        binding: e.binding,
        envelope_digest: e.envelope_digest,
        decided_at: r.now,
        reasons: r.reasons,
        obligations: r.obligations,
        approvals: await this.approvalViews(e, now),
      });
      pending.push(item);
    }
    pending.sort((a, b) => Date.parse(b.decided_at) - Date.parse(a.decided_at));
    return { pending };
  }

  /** An execution's approvals with their validity now (§4), as GET /v1/executions shows them. */
  async approvalViews(e: Execution, now: Date): Promise<ApprovalView[]> {
    const current = { binding: e.binding, envelope_digest: e.envelope_digest, subjectDigest: await this.core.entities.approvalDigest(uidKey(e.subject)) };
    return (await Promise.all(e.approvals.map((id) => this.core.store.get<Approval>('approvals', id))))
      .filter((a): a is Approval => a !== undefined)
      .map((a) => approvalView(a, invalidReason(a, now, current)));
  }

  async approve(caller: Caller, text: string): Promise<Record<string, unknown>> {
    const body: unknown = parseBody(text);
    validateApprovalRequest(body);
    const now = this.core.now();
    const expires = Date.parse(body.expires_at);
    if (!(expires > now.getTime())) throw new WritError('INVALID_REQUEST', 'expires_at is not in the future', { path: '/expires_at' });
    if (expires > now.getTime() + this.core.config.approval_max_ttl_s * 1000) {
      throw new WritError('INVALID_REQUEST', `expires_at is beyond approval_max_ttl_s (${this.core.config.approval_max_ttl_s} s)`, { path: '/expires_at' });
    }
    const actor: Uid = { type: body.actor.type, id: body.actor.id };
    const key = executionKey(actor, body.execution_id);
    const approvalId = `apr_${randomUUID()}`;
    return commitWithRevalidation(
      this.core,
      async () => ({
        write: (tx: WriteTx) => {
          const e = tx.get<Execution>('executions', key);
          if (e?.state !== 'proposed' || e.binding !== body.binding || e.envelope_digest !== body.envelope_digest) {
            throw new WritError(
              'APPROVAL_STALE',
              e
                ? `execution ${body.execution_id} is ${e.state} with ${e.binding === body.binding && e.envelope_digest === body.envelope_digest ? 'these' : 'other'} digests`
                : `no execution ${body.execution_id} for ${uidKey(actor)}`,
            );
          }
          const approval: Approval = {
            approval_id: approvalId,
            approver: caller.principal!,
            actor,
            execution_id: e.execution_id,
            binding: e.binding,
            envelope_digest: e.envelope_digest,
            approved_at: now.toISOString(),
            expires_at: body.expires_at,
            subject: e.subject,
            subject_digest: this.core.entities.approvalDigestIn(tx, uidKey(e.subject)),
          };
          tx.put('approvals', approvalId, approval);
          const rec = tx.append({ kind: 'approval', ...approval, ...callerFields(caller) });
          putExecution(tx, key, e, { ...e, approvals: [...e.approvals, approvalId], records: [...e.records, rec.seq], rev: (e.rev ?? 0) + 1 }, now);
          return { approval_id: approvalId, approved_at: approval.approved_at, expires_at: approval.expires_at, record: { seq: rec.seq, hash: rec.hash } };
        },
        label: 'approval',
        reads: [
          ['executions', key],
          ['meta', ENTITIES_VERSION_KEY],
        ],
        answer: (answer: Record<string, unknown>) => answer,
        failed: async (e: unknown) => {
          if (!isWritError(e) || e.code !== 'APPROVAL_STALE') return storeFailure(e);
          return this.core.refuse(e, key, {
            actor,
            execution_id: body.execution_id,
            approver: caller.principal!,
            ...callerFields(caller),
            attempted: { kind: 'approval', binding: body.binding, envelope_digest: body.envelope_digest, expires_at: body.expires_at },
          });
        },
      }),
      { holdEntities: false },
    );
  }

  async revoke(caller: Caller, approvalId: string): Promise<Record<string, unknown>> {
    const now = this.core.now();
    return this.core.store
      .write(
        (tx) => {
          const a = tx.get<Approval>('approvals', approvalId);
          if (!a) throw new WritError('NOT_FOUND', `no approval ${approvalId}`);
          if (!sameUid(a.approver, caller.principal!)) throw new WritError('FORBIDDEN_ROLE', 'only the approver who gave an approval can revoke it');
          // Revoking again answers the first revocation (its record too, for approvals revoked since it is kept).
          if (a.revoked_at !== undefined)
            return { approval_id: approvalId, revoked_at: a.revoked_at, ...(a.revocation_record ? { record: a.revocation_record } : {}) };
          const revokedAt = now.toISOString();
          const rec = tx.append({
            kind: 'revocation',
            approval_id: approvalId,
            approver: a.approver,
            actor: a.actor,
            execution_id: a.execution_id,
            revoked_at: revokedAt,
            ...callerFields(caller),
          });
          const revoked: Approval = { ...a, revoked_at: revokedAt, revocation_record: { seq: rec.seq, hash: rec.hash } };
          tx.put('approvals', approvalId, revoked);
          const key = executionKey(a.actor, a.execution_id);
          const e = tx.get<Execution>('executions', key);
          if (e) putExecution(tx, key, e, { ...e, records: [...e.records, rec.seq], rev: (e.rev ?? 0) + 1 }, now);
          return { approval_id: approvalId, revoked_at: revokedAt, record: { seq: rec.seq, hash: rec.hash } };
        },
        { label: 'revocation' },
      )
      .catch((e) => {
        throw isWritError(e) ? e : storeFailure(e);
      });
  }
}
