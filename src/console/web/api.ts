/**
 * The auditor API as the page sees it: same-origin fetches with the bearer token the user typed.
 * The token lives in this object only (never in storage or cookies).
 */

/** A ledger record as the API returns it: the header fields plus kind-specific ones. */
export interface LedgerRecord {
  v: number;
  seq: number;
  ts: string;
  kind: string;
  prev: string;
  hash: string;
  [field: string]: unknown;
}

export interface RecordPage {
  records: LedgerRecord[];
  next: number | null;
}

export interface ApprovalView {
  approval_id: string;
  approver: { type: string; id: string };
  approved_at: string;
  expires_at: string;
  valid: boolean;
  invalid_reason?: string;
}

export interface ExecutionView {
  execution_id: string;
  actor: { type: string; id: string };
  state: string;
  resolution?: string;
  binding: string;
  envelope_digest: string;
  supersedes?: string | null;
  superseded_by?: string;
  approvals: ApprovalView[];
  records: number[];
}

/** One execution waiting for an approval, as GET /v1/approvals/pending lists it. */
export interface PendingApproval {
  execution_id: string;
  actor: { type: string; id: string };
  requester: { type: string; id: string };
  subject: { type: string; id: string };
  task_id: string;
  purpose: string;
  authoritative_event?: string;
  execute_after?: string;
  evidence_refs?: string[];
  action: { server: string; tool: string; arguments: unknown };
  binding: string;
  envelope_digest: string;
  decided_at: string;
  reasons: string[];
  obligations: Array<{ policy: string; approver_group: string }>;
  approvals: ApprovalView[];
}

export interface Filters {
  kind?: string;
  actor?: string;
  execution_id?: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
  get unauthorized(): boolean {
    return this.status === 401 || this.status === 403;
  }
}

export class Api {
  readonly #token: string;

  constructor(token: string) {
    this.#token = token;
  }

  get<T>(path: string): Promise<T> {
    return this.request<T>('GET', path);
  }

  post<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>('POST', path, body);
  }

  async request<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    // A bearer token is visible ASCII (RFC 6750 b64token is narrower still); anything else — a control
    // character, an emoji — cannot even be put in a header, and is no auditor's token.
    if (!/^[\x21-\x7e]+$/.test(this.#token)) throw new ApiError(401, 'UNAUTHENTICATED', 'not a bearer token');
    let res: Response;
    try {
      const headers: Record<string, string> = { authorization: `Bearer ${this.#token}`, accept: 'application/json' };
      if (body !== undefined) headers['content-type'] = 'application/json';
      res = await fetch(path, { method, headers, cache: 'no-store', ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    } catch (e) {
      throw new ApiError(0, 'NETWORK', `the sidecar could not be reached (${(e as Error).message})`);
    }
    const text = await res.text();
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      throw new ApiError(res.status, 'MALFORMED', `${path} did not answer JSON (HTTP ${res.status})`);
    }
    if (!res.ok) {
      const error = (answer as { error?: { code?: string; message?: string } }).error;
      throw new ApiError(res.status, error?.code ?? `HTTP_${res.status}`, error?.message ?? `HTTP ${res.status}`);
    }
    return answer as T;
  }

  /** The executions waiting for this approver (docs/protocol.md §17). */
  pending(): Promise<{ pending: PendingApproval[] }> {
    return this.get('/v1/approvals/pending');
  }

  /** Approves exactly the binding and envelope digest shown. */
  approve(p: PendingApproval, expiresAt: string): Promise<{ approval_id: string }> {
    return this.post('/v1/approvals', {
      actor: p.actor,
      execution_id: p.execution_id,
      binding: p.binding,
      envelope_digest: p.envelope_digest,
      expires_at: expiresAt,
    });
  }

  /** Whether the token is an auditor's (the console's own check: always 200, never a failed load). */
  async isAuditor(): Promise<boolean> {
    return (await this.get<{ auditor: boolean }>('/console/session')).auditor === true;
  }

  execution(id: string, actor: string): Promise<ExecutionView> {
    return this.get(`/v1/executions/${encodeURIComponent(id)}?actor=${encodeURIComponent(actor)}`);
  }

  async record(seq: number): Promise<LedgerRecord> {
    const r = await this.get<LedgerRecord>(`/v1/ledger/records/${seq}`);
    // Drawn and proved as record #seq: another record in its place would show one record twice and hide one.
    if (r === null || typeof r !== 'object' || r.seq !== seq) {
      throw new ApiError(
        200,
        'MALFORMED',
        `the sidecar answered record #${seq} with ${r !== null && typeof r === 'object' ? `record #${String(r.seq)}` : 'no record'}`,
      );
    }
    return r;
  }

  records(from: number, limit: number, filters: Filters = {}): Promise<RecordPage> {
    const q = new URLSearchParams({ from: String(from), limit: String(limit) });
    for (const [name, value] of Object.entries(filters)) if (value) q.set(name, value);
    return this.get(`/v1/ledger/records?${q}`);
  }

  /** The latest checkpoint record, or null when none has been written yet. */
  async checkpoint(): Promise<LedgerRecord | null> {
    try {
      return await this.get<LedgerRecord>('/v1/ledger/checkpoint');
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) return null;
      throw e;
    }
  }

  /** The latest checkpoint as a C2SP signed note (docs/protocol.md §16), or null when there is none. */
  async note(): Promise<string | null> {
    let res: Response;
    try {
      res = await fetch('/ledger/checkpoint', { cache: 'no-store' });
    } catch (e) {
      throw new ApiError(0, 'NETWORK', `the sidecar could not be reached (${(e as Error).message})`);
    }
    if (res.status === 404) return null;
    if (!res.ok) throw new ApiError(res.status, `HTTP_${res.status}`, `/ledger/checkpoint answered HTTP ${res.status}`);
    return res.text();
  }

  keys(): Promise<{ keys: Array<{ key_id: string; public_key: string }> }> {
    return this.get('/v1/ledger/keys');
  }

  /** The ledger's `key` records, in seq order (a handful: one per rotation). */
  async keyRecords(): Promise<LedgerRecord[]> {
    const out: LedgerRecord[] = [];
    let cursor: number | null = 0;
    while (cursor !== null) {
      const page: RecordPage = await this.records(cursor, 1000, { kind: 'key' });
      out.push(...page.records);
      cursor = page.next;
    }
    return out;
  }

  consistencyProof(from: number, to: number): Promise<{ from: number; to: number; path: unknown }> {
    return this.get(`/v1/ledger/proofs/consistency?from=${from}&to=${to}`);
  }

  inclusionProof(seq: number, size: number): Promise<{ seq: number; size: number; leaf?: string; root?: string; path: string[] }> {
    return this.get(`/v1/ledger/proofs/inclusion?seq=${seq}&size=${size}`);
  }

  /** The ledger's size: past the latest checkpoint, follow the listing to its end. */
  async ledgerEnd(): Promise<number> {
    const cp = await this.checkpoint();
    let from = cp ? Number(cp.size) : 0;
    let end = from;
    for (;;) {
      const page = await this.records(from, 1000);
      const last = page.records[page.records.length - 1];
      if (last) end = last.seq + 1;
      if (page.next === null) return end;
      from = page.next;
    }
  }

  /**
   * The last `n` records before `end` that match the filters. The listing only walks forward, so
   * the window before `end` widens until it holds `n` matches or reaches seq 0.
   */
  async recordsBefore(end: number, n: number, filters: Filters): Promise<LedgerRecord[]> {
    let width = n;
    let found: LedgerRecord[] = [];
    let upTo = end; // [upTo, end) has been read already: each widening reads only what is new
    for (;;) {
      const from = Math.max(0, end - width);
      const older: LedgerRecord[] = [];
      let cursor: number | null = from;
      while (cursor !== null && cursor < upTo) {
        const page: RecordPage = await this.records(cursor, 1000, filters);
        for (const r of page.records) if (r.seq < upTo) older.push(r);
        cursor = page.next;
      }
      found = older.concat(found);
      upTo = from;
      if (found.length >= n || from === 0) return found.slice(-n);
      width *= 4;
    }
  }
}
