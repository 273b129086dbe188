/**
 * The PDP's HTTP API as the PEP sees it (docs/protocol.md §2, §4). Only the fields the PEP relies on are
 * typed strictly; everything else rides along untouched.
 */
import type { DecisionEnvelope } from '../schemas/validate.js';

/** The §2 envelope (the schema's type). The PDP validates it; the PEP only carries it. */
export interface Envelope extends DecisionEnvelope {
  [k: string]: unknown;
}

export type Phase = 'propose' | 'execute';

export interface DecisionRequest {
  execution_id: string;
  phase: Phase;
  envelope: Envelope | Record<string, unknown>;
  action: { server: string; tool: string; arguments: unknown };
}

export type Decision = 'allow' | 'deny' | 'approval_required';

export interface Obligation {
  policy: string;
  approver_group?: string;
  [k: string]: unknown;
}

export interface DecisionResponse {
  decision: Decision;
  decision_id: string;
  execution_id: string;
  state: string;
  binding: string;
  envelope_digest: string;
  /** The admitted arguments: the ONLY value a PEP may forward to the tool. */
  arguments: Record<string, unknown>;
  policy_version: string;
  entities_version: string;
  reasons: string[];
  errors: unknown[];
  obligations: Obligation[];
  approval_used?: string;
  record: { seq: number; hash: string };
  [k: string]: unknown;
}

export type OutcomeStatus = 'committed' | 'rejected' | 'unknown';

export interface OutcomeRequest {
  status: OutcomeStatus;
  confirmation?: 'tool_reported' | 'system_of_record';
  result_digest?: string;
  downstream_ref?: string;
  detail?: string;
}

export interface PdpErrorBody {
  code: string;
  message: string;
  path?: string;
}

/** Every PDP call answers one of these; it never throws. */
export type PdpResult<T> = { ok: true; status: number; body: T } | { ok: false; status: number; error: PdpErrorBody };

/**
 * What the MCP client sees in `_meta["io.writ/decision"]` of every refusal and every unknown outcome
 * (docs/protocol.md §7). Exactly these keys.
 */
export interface DecisionMeta {
  decision?: Decision;
  code: string;
  reasons: string[];
  obligations: Obligation[];
  execution_id: string | null;
  binding?: string;
  envelope_digest?: string;
}

export const META_ENVELOPE = 'io.writ/envelope';
export const META_EXECUTION_ID = 'io.writ/execution_id';
export const META_DECISION = 'io.writ/decision';
