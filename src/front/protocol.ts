/**
 * Messages between the sidecar (the one ledger writer, on the main thread) and its HTTP front threads
 * (front-thread.ts). Both directions travel in batches, one message per event-loop turn.
 */
import type { TokenSpec } from '../config/config.js';
import type { JwtIssuerSpec } from '../identity/issuers.js';
import type { JSONWebKeySet } from 'jose';
import type { ErrorCode } from '../errors.js';
import type { Caller } from '../identity/caller.js';
import type { EntityJson } from '../policy/entities.js';
import type { PolicyBundle } from '../policy/load.js';
import type { EvaluationTally } from '../policy/memo.js';
import type { TlsMaterial } from '../http/tls.js';
import type { FairnessSettings } from '../http/fairness.js';
import type { PendingDecisionResult, PendingDecision } from '../pdp/admission.js';
import type { PendingAuthzen } from '../authzen/request.js';
import type { BackendCall } from './backend-calls.js';

export interface FrontStart {
  host: string;
  port: number;
  /** What the sidecar's app, served by the front for every request off the fast path, takes from the config. */
  app: {
    publicUrl?: string;
    publicTiles: boolean;
    /** The signed notes' origin (the keys route names it); absent when the sidecar serves no notes. */
    notesOrigin?: string;
  };
  tokens: TokenSpec[];
  jwtIssuers: JwtIssuerSpec[];
  maxBodyBytes: number;
  /** Admission limits, callers' shares and the evaluation deadline, as the sidecar's own app applies them. */
  fairness: FairnessSettings;
  clockFile: string | null;
  memoSize: number;
  /** Threads that run this front's Cedar misses beside it (0: on the front itself). */
  evaluatorThreads: number;
  policy: PolicyBundle;
  entities: { version: string; list: EntityJson[] };
  /** Say `ready` once loaded and listen only on a `listen` message (the port is still someone else's). */
  holdListen?: boolean;
  /** The public port's TLS material (config tls_cert_file / tls_key_file): the front serves HTTPS. */
  tls?: TlsMaterial;
}

/**
 * A request for the sidecar: commit a decision the front prepared, decide a decision's text itself,
 * record (or evaluate) an AuthZEN request, or run a call of the app the front serves (backend-calls.ts).
 */
export type FrontAsk =
  | { id: number; pending: PendingDecision }
  | { id: number; decide: { caller: Caller; text: string } }
  | { id: number; authzen: AuthzenAsk }
  | { id: number; call: BackendCall }
  /** An issuer's keys once `kid` was looked up in the sidecar's one key cache (src/identity/jwks-cache.ts). */
  | { id: number; jwks: { issuer: string; kid: string } };

/** An AuthZEN request: evaluated by the front (`pending`: awaiting its records' commit), or left to the sidecar to evaluate. */
export interface AuthzenAsk {
  caller: Caller;
  text: string;
  /** /access/v1/evaluations rather than /access/v1/evaluation. */
  batch: boolean;
  pending?: PendingAuthzen;
}

export type SidecarAnswer =
  | { id: number; ok: PendingDecisionResult | { authzen: unknown } | { called: unknown } | { jwks: JSONWebKeySet } }
  | { id: number; error: { status: number; body: unknown } };

export type ToFront =
  | { type: 'policy'; bundle: PolicyBundle }
  | { type: 'entities'; version: string; list: EntityJson[] }
  | { type: 'answers'; batch: SidecarAnswer[] }
  | { type: 'listen' }
  | { type: 'close' };

export type FromFront =
  | { type: 'hello' }
  | { type: 'ready' }
  | { type: 'listening'; port: number }
  | { type: 'failed'; message: string }
  /** `tally`: the front's decision-memo and residual counts so far (policy/memo.ts), for the sidecar's /metrics. */
  | { type: 'asks'; batch: FrontAsk[]; tally: EvaluationTally }
  /**
   * A refusal the front answered itself (a request line or Host refused, a request Node's parser refused,
   * the sidecar unreachable), for the sidecar's /metrics; `route` as writ_http_requests_total labels it,
   * absent when the sidecar's app already counts that request.
   */
  | { type: 'refused'; route?: string; status: number; code: ErrorCode; message: string; logged?: boolean }
  /** An answer of the app on the front, by the route pattern that gave it (src/http/count-answers.ts). */
  | { type: 'answered'; route: string; status: number }
  | { type: 'closed' };
