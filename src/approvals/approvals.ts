/**
 * Approvals bound to the consequence (docs/protocol.md §5). Pure: what an approval binds, and whether it is
 * still valid evidence at a given moment. An approval binds the actor, execution id, binding, envelope
 * digest, an expiry, and the digest of the subject entity's record as it was when approved; it stops
 * counting when revoked, expired, or when that record changed.
 */
import { digestOf } from '../util/canonical.js';
import type { Uid } from '../util/uid.js';
import type { EntityJson } from '../policy/entities.js';

export interface Approval {
  approval_id: string;
  approver: Uid;
  actor: Uid;
  execution_id: string;
  binding: string;
  envelope_digest: string;
  approved_at: string;
  expires_at: string;
  subject: Uid;
  subject_digest: string;
  revoked_at?: string;
  /** The revocation's ledger record, so that revoking again answers exactly the first revocation. */
  revocation_record?: { seq: number; hash: string };
}

export type InvalidReason = 'revoked' | 'expired' | 'subject_changed' | 'binding_changed';

/**
 * Digest of a subject's trusted record as an approval binds it; a missing record has its own fixed
 * digest. `revision` counts the times the record changed (EntityCache keeps it): a record changed and
 * then changed back is the same record but not the same fact history, and an approval given before the
 * first change must stay dead (§5: "a changed fact invalidates it"). Revision 0 keeps the first recipe,
 * so approvals given before revisions were counted keep their digest while their subject never changes.
 */
export function subjectDigest(entity: EntityJson | undefined, revision = 0): string {
  const record = entity ? { uid: entity.uid, attrs: entity.attrs, parents: entity.parents } : null;
  return revision === 0 ? digestOf('writ-subject/1\n', record) : digestOf('writ-subject/2\n', { record, revision });
}

/** Why an approval does not count now, or undefined when it is valid. */
export function invalidReason(a: Approval, now: Date, current: { binding: string; envelope_digest: string; subjectDigest: string }): InvalidReason | undefined {
  if (a.revoked_at !== undefined) return 'revoked';
  if (Date.parse(a.expires_at) <= now.getTime()) return 'expired';
  if (a.binding !== current.binding || a.envelope_digest !== current.envelope_digest) return 'binding_changed';
  if (a.subject_digest !== current.subjectDigest) return 'subject_changed';
  return undefined;
}

export interface ApprovalView {
  approval_id: string;
  approver: Uid;
  approved_at: string;
  expires_at: string;
  valid: boolean;
  invalid_reason?: InvalidReason;
}

export function approvalView(a: Approval, reason: InvalidReason | undefined): ApprovalView {
  const v: ApprovalView = {
    approval_id: a.approval_id,
    approver: a.approver,
    approved_at: a.approved_at,
    expires_at: a.expires_at,
    valid: reason === undefined,
  };
  if (reason !== undefined) v.invalid_reason = reason;
  return v;
}
