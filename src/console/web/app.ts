/**
 * The auditor console (docs/protocol.md §11): sign in with the auditor token (kept in this module's
 * memory only), read one execution's story with a proof per record, or browse the ledger.
 * Only the active view is in the document, so each view's `Execution id` field is unambiguous.
 */
import { Api, ApiError, type ExecutionView, type Filters, type LedgerRecord, type PendingApproval } from './api.js';
import { decisionsChart } from './chart.js';
import { digest, fill, h, timeEl, uidText } from './dom.js';
import { cosignedText, verdictText, verifyRecord } from './verify.js';

const PAGE_SIZE = 50;
const KINDS = [
  'decision',
  'approval',
  'revocation',
  'outcome',
  'reconciliation',
  'confirmation',
  'event',
  'refusal',
  'entity',
  'policy',
  'key',
  'checkpoint',
  'chain_break',
];
// Glyphs from the common symbol blocks every system font covers (no icon font to fetch).
const ICONS: Record<string, string> = {
  decision: '⚖',
  approval: '✔',
  revocation: '✕',
  outcome: '◆',
  reconciliation: '↻',
  refusal: '⊘',
  entity: '✎',
  policy: '§',
  key: '✦',
  checkpoint: '⚑',
  chain_break: '⚠',
  confirmation: '☑',
  event: '●',
};

let api: Api | null = null;
const root = document.getElementById('app')!;

function describeError(e: unknown): string {
  if (e instanceof ApiError) return e.unauthorized ? 'unauthorized' : `${e.code}: ${e.message}`;
  return (e as Error)?.message ?? String(e);
}

/** `Type::"id"` as the API takes it; checked here so a half-typed value never becomes a failed request. */
const ACTOR = /^[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*::"(?:[^"\\]|\\.)*"$/;
const EXECUTION_ID = /^(?!\.\.?$)[A-Za-z0-9._:-]{1,128}$/;
/** The decisions the chart counts at most (one page of the API). */
const CHART_DECISIONS = 1000;
const ACTOR_HINT = 'Actor must be Type::"id", e.g. Agent::"offboarding-agent-prod"';

/** The uid an actor field names, when its id is a JSON string (a spelling the page cannot read is left to the sidecar). */
function parseActor(text: string): { type: string; id: string } | undefined {
  const m = /^(.*?)::("(?:[^"\\]|\\.)*")$/.exec(text);
  if (!m) return undefined;
  try {
    return { type: m[1]!, id: JSON.parse(m[2]!) as string };
  } catch {
    return undefined;
  }
}

function kindBadge(kind: string): HTMLElement {
  // The kind's name in an element of its own (the icon beside it is decoration): found by its exact text.
  return h(
    'span',
    { class: `kind kind-${kind}` },
    h('span', { class: 'icon', 'aria-hidden': 'true' }, ICONS[kind] ?? '•'),
    h('span', { class: 'kind-name' }, kind),
  );
}

/** A record's seq: the number in an element of its own, after a decorative `#`. */
function seqEl(seq: number): HTMLElement {
  return h('span', { class: 'seq' }, h('span', { 'aria-hidden': 'true' }, '#'), h('span', { class: 'seq-number' }, String(seq)));
}

function decisionBadge(decision: unknown): HTMLElement {
  return h('span', { class: `decision decision-${String(decision)}` }, String(decision));
}

// ── sign in ───────────────────────────────────────────────────────────────────────────────────────

/**
 * A sign-in form: a password field labelled `label`, a `Sign in` button and an alert. `accept` checks the
 * token (true: signed in; false: `unauthorized`; a thrown error is shown); the token never leaves memory.
 */
function signInForm(o: {
  id: string;
  title: string;
  hint: string;
  label: string;
  message: string;
  footer: HTMLElement;
  accept: (candidate: Api) => Promise<boolean>;
}): HTMLElement {
  const token = h('input', { id: o.id, type: 'password', autocomplete: 'off', required: true, spellcheck: 'false' });
  const status = h('p', { class: 'error', role: 'alert' }, o.message);
  const form = h(
    'form',
    { class: 'card signin' },
    h('h2', {}, o.title),
    h('p', { class: 'hint' }, o.hint),
    h('label', { for: o.id }, o.label),
    token,
    h('button', { type: 'submit' }, 'Sign in'),
    status,
    o.footer,
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    fill(status, 'checking…');
    try {
      if (!(await o.accept(new Api(token.value.trim())))) {
        fill(status, 'unauthorized');
        return;
      }
    } catch (e) {
      fill(status, describeError(e));
      return;
    }
    token.value = '';
  });
  return form;
}

function signInView(message = ''): HTMLElement {
  return signInForm({
    id: 'token',
    title: 'Auditor sign-in',
    label: 'Auditor token',
    message,
    hint: 'Paste the auditor token (for the dev setup, the auditor entry of .writ/tokens.json). It stays in this page’s memory only.',
    footer: h('p', { class: 'hint' }, 'Approving an execution? ', h('a', { href: '#/approvals' }, 'Approvals'), ' has its own sign-in.'),
    accept: async (candidate) => {
      if (!(await candidate.isAuditor())) return false;
      api = candidate;
      renderShell();
      // Keyboard users land where the work starts, not on <body>.
      (document.getElementById(currentRoute().view === 'ledger' ? 'f-kind' : 'exec-id') as HTMLInputElement | null)?.focus();
      return true;
    },
  });
}

// ── execution view ────────────────────────────────────────────────────────────────────────────────

function field(label: string, value: Node | string): HTMLElement[] {
  return [h('dt', {}, label), h('dd', {}, value)];
}

/** The kind-specific lines of one timeline entry. */
function recordDetails(r: LedgerRecord): Node[] {
  const rows: HTMLElement[] = [];
  const add = (label: string, value: Node | string | undefined) => {
    if (value !== undefined && value !== '') rows.push(...field(label, value));
  };
  switch (r.kind) {
    case 'decision': {
      const reasons = Array.isArray(r.reasons) ? (r.reasons as unknown[]).map(String) : [];
      const errors = Array.isArray(r.errors) ? (r.errors as unknown[]) : [];
      add('phase', String(r.phase ?? ''));
      // Plain spans, not a nested list: the timeline's list items are its records, one each.
      add(
        'reasons',
        reasons.length
          ? h(
              'span',
              { class: 'reasons' },
              reasons.map((x) => h('code', { class: 'reason' }, x)),
            )
          : 'none',
      );
      if (errors.length)
        add(
          'errors',
          h(
            'span',
            { class: 'reasons' },
            errors.map((x) => h('code', { class: 'reason' }, typeof x === 'string' ? x : JSON.stringify(x))),
          ),
        );
      add('approval used', r.approval_used ? h('code', {}, String(r.approval_used)) : 'none');
      add('policy version', digest(r.policy_version));
      add('entities version', digest(r.entities_version));
      break;
    }
    case 'approval':
      add('approval', h('code', {}, String(r.approval_id)));
      add('approver', uidText(r.approver));
      add('approved at', timeEl(r.approved_at));
      add('expires at', timeEl(r.expires_at));
      break;
    case 'revocation':
      add('approval', h('code', {}, String(r.approval_id)));
      add('approver', uidText(r.approver));
      add('revoked at', timeEl(r.revoked_at));
      break;
    case 'outcome':
      add('status', String(r.status));
      add('confirmation', String(r.confirmation ?? ''));
      if (r.downstream_ref !== undefined) add('downstream ref', String(r.downstream_ref));
      if (r.result_digest !== undefined) add('result digest', digest(r.result_digest));
      if (r.detail !== undefined) add('detail', String(r.detail));
      break;
    case 'reconciliation':
      add('resolution', String(r.resolution));
      add('evidence', String(r.evidence_ref ?? ''));
      break;
    case 'confirmation':
      add('confirmation', String(r.confirmation ?? ''));
      add('evidence', String(r.evidence_ref ?? ''));
      if (r.downstream_ref !== undefined) add('downstream ref', String(r.downstream_ref));
      break;
    case 'event': {
      // What the tool itself reported doing inside the call (§17).
      const event = (r.event ?? {}) as { type?: unknown; data?: unknown };
      add('event', h('code', {}, String(event.type ?? '')));
      add('data', h('code', {}, JSON.stringify(event.data ?? null)));
      break;
    }
    case 'refusal':
      add('code', h('code', {}, String(r.code)));
      add('message', String(r.message ?? ''));
      if (typeof r.supersedes === 'string') add('supersedes', executionLink(r.supersedes, uidText(r.actor)));
      break;
  }
  // Who caused the record (§17): the token's role and name; and a verified identity (§13).
  const caller = r.caller as { role?: unknown; name?: unknown } | undefined;
  if (caller && typeof caller === 'object') add('by', `${String(caller.role)} ${String(caller.name ?? '')}`.trim());
  add('verified identity', identityText(r.identity));
  add('hash', digest(r.hash));
  return [h('dl', { class: 'details' }, rows)];
}

/**
 * Who a record's request came from, as its verified identity says (docs/protocol.md §13): `jwt` with the
 * issuer and subject (and the client, the acting party, the token id), or `mtls` with the certificate's URI.
 */
function identityText(identity: unknown): string | undefined {
  if (identity === null || typeof identity !== 'object') return undefined;
  const i = identity as { method?: unknown; iss?: unknown; sub?: unknown; client_id?: unknown; act?: { sub?: unknown }; jti?: unknown };
  const parts = [`${String(i.method)} ${String(i.sub)}`];
  if (typeof i.iss === 'string') parts.push(`issuer ${i.iss}`);
  if (typeof i.client_id === 'string') parts.push(`client ${i.client_id}`);
  if (i.act && typeof i.act.sub === 'string') parts.push(`acting ${i.act.sub}`);
  if (typeof i.jti === 'string') parts.push(`token id ${i.jti}`);
  return parts.join(' · ');
}

function verifyControl(record: LedgerRecord): HTMLElement {
  const seq = record.seq;
  const result = h('span', { class: 'verdict', role: 'status', 'aria-live': 'polite' });
  // Beside the verdict, not in it: how many witnesses cosigned the checkpoint it used (§16).
  const cosigned = h('span', { class: 'cosigned' });
  const button = h('button', { type: 'button', class: 'verify', 'aria-describedby': `verdict-${seq}` }, 'Verify');
  result.id = `verdict-${seq}`;
  button.addEventListener('click', async () => {
    if (!api) return;
    button.disabled = true;
    result.className = 'verdict pending';
    fill(result, 'checking…');
    fill(cosigned, '');
    let text: string;
    let status: string;
    try {
      const verdict = await verifyRecord(api, record);
      text = verdictText(verdict);
      status = verdict.status;
      fill(cosigned, cosignedText(verdict));
    } catch (e) {
      // The token stopped being an auditor's (revoked, rotated): sign out, as every other view does.
      if (e instanceof ApiError && e.unauthorized) return signOut('unauthorized');
      text = `NOT verified: ${describeError(e)}`;
      status = 'failed';
    }
    result.className = `verdict verdict-${status}`;
    fill(result, text);
    button.disabled = false;
  });
  return h('div', { class: 'verify-box' }, button, result, cosigned);
}

function timelineItem(r: LedgerRecord): HTMLElement {
  const summary = h(
    'div',
    { class: 'entry-head' },
    seqEl(r.seq),
    kindBadge(r.kind),
    r.kind === 'decision' ? decisionBadge(r.decision) : null,
    r.kind === 'outcome' ? h('span', { class: `decision outcome-${String(r.status)}` }, String(r.status)) : null,
    r.kind === 'reconciliation' ? h('span', { class: 'decision' }, String(r.resolution)) : null,
    r.kind === 'refusal' ? h('span', { class: 'decision decision-deny' }, String(r.code)) : null,
    timeEl(r.ts),
  );
  return h(
    'li',
    { class: `entry entry-${r.kind}`, 'data-seq': r.seq, 'data-kind': r.kind },
    h('span', { class: 'dot', 'aria-hidden': 'true' }, ICONS[r.kind] ?? '•'),
    h('div', { class: 'entry-body' }, summary, recordDetails(r), verifyControl(r)),
  );
}

function approvalsTable(view: ExecutionView): HTMLElement {
  if (view.approvals.length === 0) return h('p', { class: 'hint' }, 'No approvals.');
  return h(
    'table',
    { class: 'approvals' },
    h('caption', {}, 'Approvals'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['approval', 'approver', 'approved', 'expires', 'status'].map((c) => h('th', { scope: 'col' }, c)),
      ),
    ),
    h(
      'tbody',
      {},
      view.approvals.map((a) =>
        h(
          'tr',
          {},
          h('td', {}, h('code', {}, a.approval_id)),
          h('td', {}, uidText(a.approver)),
          h('td', {}, timeEl(a.approved_at)),
          h('td', {}, timeEl(a.expires_at)),
          h('td', {}, a.valid ? h('span', { class: 'valid' }, 'valid') : h('span', { class: 'invalid' }, `invalid: ${a.invalid_reason ?? 'unknown'}`)),
        ),
      ),
    ),
  );
}

async function loadRecords(seqs: number[]): Promise<LedgerRecord[]> {
  const out: LedgerRecord[] = [];
  // A few at a time: an execution has a handful of records, and the sidecar serves many callers.
  for (let i = 0; i < seqs.length; i += 8) out.push(...(await Promise.all(seqs.slice(i, i + 8).map((s) => api!.record(s)))));
  return out.sort((a, b) => a.seq - b.seq);
}

/** The records one page lists at most while a timeline gathers the records naming an execution. */
const NAMING_PAGE = 1000;
/** Pages gathered at most: past this many records the timeline says it shows a part. */
const NAMING_PAGES = 5;

/** The records the ledger's index lists as naming this execution id and actor, in seq order. */
async function recordsNaming(id: string, actor: string): Promise<{ records: LedgerRecord[]; more: boolean }> {
  const records: LedgerRecord[] = [];
  let from = 0;
  for (let page = 0; page < NAMING_PAGES; page++) {
    const listed = await api!.records(from, NAMING_PAGE, { execution_id: id, actor });
    records.push(...listed.records);
    if (listed.next === null || listed.records.length === 0) return { records, more: false };
    from = listed.next;
  }
  return { records, more: true };
}

/** A link to another execution of the same actor (a `supersedes` in either direction). */
function executionLink(id: string, actor: string): HTMLElement {
  return h('a', { href: `#/execution?id=${encodeURIComponent(id)}&actor=${encodeURIComponent(actor)}` }, h('code', {}, id));
}

async function showExecution(target: HTMLElement, id: string, actor: string): Promise<void> {
  const problem = (text: string) => fill(target, h('p', { class: 'error', role: 'alert' }, text));
  if (!EXECUTION_ID.test(id)) return problem('Execution id must be 1–128 characters of A-Za-z0-9._:-, and not . or ..');
  if (!ACTOR.test(actor)) return problem(ACTOR_HINT);
  fill(target, h('p', { class: 'hint' }, 'loading…'));
  try {
    // Every execution has at least its first decision on record: no record at all means no such
    // execution, said without a 404 (which the browser would log as a failed load).
    const first = await api!.records(0, 1, { execution_id: id, actor });
    if (first.records.length === 0) return problem(`EXECUTION_NOT_FOUND: no execution ${id} for ${actor}`);
    const asked = parseActor(actor);
    // Only refusals name an id that was never reserved (the loser of a supersede race, an outcome for
    // an unknown id): its story is the records the ledger's index lists, with no state to ask for.
    const decided = await api!.records(0, 1, { execution_id: id, actor, kind: 'decision' });
    const view = decided.records.length > 0 ? await api!.execution(id, actor) : undefined;
    if (view && (view.execution_id !== id || (asked !== undefined && uidText(view.actor) !== uidText(asked)))) {
      return problem(`the sidecar answered for execution ${String(view.execution_id)} of ${uidText(view.actor)}, not the one asked for`);
    }
    const execId = view?.execution_id ?? id;
    const execActor = view ? uidText(view.actor) : uidText(asked) || actor;
    // The timeline holds only records that name this execution and its actor; anything else the
    // sidecar lists is said out loud, not drawn (nor silently dropped).
    const naming = view ? { records: await loadRecords([...view.records].sort((a, b) => a - b)), more: false } : await recordsNaming(id, actor);
    const listed = naming.records;
    const names = (r: LedgerRecord) => r.execution_id === execId && uidText(r.actor) === execActor;
    const records = listed.filter(names);
    const foreign = listed.filter((r) => !names(r));
    const warning =
      foreign.length === 0
        ? []
        : h(
            'p',
            { class: 'error', role: 'alert' },
            `The sidecar listed ${foreign.length === 1 ? 'a record' : `${foreign.length} records`} of another execution here ` +
              `(${foreign.map((r) => `#${r.seq}`).join(', ')}): not shown.`,
          );
    const partial = naming.more ? h('p', { class: 'hint' }, `The first ${records.length} records naming this execution are shown.`) : [];
    const facts = view
      ? h(
          'dl',
          { class: 'facts' },
          field('state', h('span', { class: `state state-${view.state}` }, view.state)),
          field('actor', uidText(view.actor)),
          field('execution', h('code', {}, view.execution_id)),
          view.resolution ? field('resolution', view.resolution) : [],
          view.supersedes ? field('supersedes', executionLink(view.supersedes, execActor)) : [],
          view.superseded_by ? field('superseded by', executionLink(view.superseded_by, execActor)) : [],
          // In full: these are what an auditor compares with an approval or a PEP's log.
          field('binding', digest(view.binding, { full: true })),
          field('envelope digest', digest(view.envelope_digest, { full: true })),
        )
      : h(
          'dl',
          { class: 'facts' },
          field('state', h('span', { class: 'state state-never-reserved' }, 'never reserved')),
          field('actor', execActor),
          field('execution', h('code', {}, execId)),
          field('why', 'no request under this id was ever decided: the ledger holds only refusals naming it'),
        );
    // One click for the whole story: presses each record's Verify in turn (named apart from
    // `Verify` so the per-record buttons stay unambiguous).
    const proveAll = h('button', { type: 'button', class: 'quiet' }, 'Prove every record');
    proveAll.addEventListener('click', async () => {
      proveAll.disabled = true;
      for (const button of target.querySelectorAll<HTMLButtonElement>('button.verify')) {
        button.click();
        await new Promise((resolve) => setTimeout(resolve, 0));
        while (button.disabled) await new Promise((resolve) => setTimeout(resolve, 25));
      }
      proveAll.disabled = false;
    });
    fill(
      target,
      warning,
      partial,
      h('section', { class: 'card summary', 'aria-label': 'Current state' }, h('h2', {}, 'Current state'), facts, view ? approvalsTable(view) : []),
      h(
        'section',
        { class: 'card', 'aria-label': 'Timeline' },
        h('div', { class: 'section-head' }, h('h2', {}, `Timeline (${records.length} ${records.length === 1 ? 'record' : 'records'})`), proveAll),
        h('ol', { class: 'timeline', 'aria-label': 'Timeline' }, records.map(timelineItem)),
      ),
    );
  } catch (e) {
    if (e instanceof ApiError && e.unauthorized) return signOut('unauthorized');
    fill(target, h('p', { class: 'error', role: 'alert' }, describeError(e)));
  }
}

function executionView(initial: { id?: string; actor?: string } = {}): HTMLElement {
  const id = h('input', {
    id: 'exec-id',
    type: 'search',
    required: true,
    spellcheck: 'false',
    placeholder: 'OFF-2048:disable-sign-in',
    value: initial.id ?? '',
  });
  const actor = h('input', {
    id: 'exec-actor',
    type: 'text',
    required: true,
    spellcheck: 'false',
    placeholder: 'Agent::"offboarding-agent-prod"',
    value: initial.actor ?? '',
  });
  const result = h('div', { class: 'result' });
  const form = h(
    'form',
    { class: 'card search', role: 'search' },
    h('div', { class: 'field' }, h('label', { for: 'exec-id' }, 'Execution id'), id),
    h('div', { class: 'field' }, h('label', { for: 'exec-actor' }, 'Actor'), actor),
    h('button', { type: 'submit' }, 'Show'),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void showExecution(result, id.value.trim(), actor.value.trim());
  });
  if (initial.id && initial.actor) void showExecution(result, initial.id, initial.actor);
  return h('div', { class: 'view' }, form, result);
}

// ── ledger view ───────────────────────────────────────────────────────────────────────────────────

function recordSummary(r: LedgerRecord): Array<Node | string> {
  switch (r.kind) {
    case 'decision':
      if (r.api === 'authzen') {
        // An AuthZEN evaluation has no server, tool or execution: what it was about is its subject,
        // action and resource, and why is its reasons; who asked is the caller.
        const action = (r.action as { name?: unknown } | undefined)?.name;
        const caller = r.caller as { role?: unknown; actor?: unknown } | undefined;
        const asker = uidText(caller?.actor) || String(caller?.role ?? '');
        const reasons = Array.isArray(r.reasons) && r.reasons.length > 0 ? ` · ${r.reasons.join(', ')}` : '';
        return [
          decisionBadge(r.decision),
          ' ',
          `${uidText(r.subject)} ${String(action ?? '')} ${uidText(r.resource)}`,
          ` (AuthZEN, asked by ${asker})${reasons}`,
        ];
      }
      return [decisionBadge(r.decision), ' ', String(r.server ?? ''), '/', String(r.tool ?? '')];
    case 'approval':
      return [`by ${uidText(r.approver)}`];
    case 'revocation':
      return [`${String(r.approval_id)} by ${uidText(r.approver)}`];
    case 'outcome':
      return [String(r.status)];
    case 'reconciliation':
      return [String(r.resolution)];
    case 'refusal':
      return [h('code', {}, String(r.code))];
    case 'entity':
      return [uidText(r.uid)];
    case 'checkpoint':
      return [`size ${String(r.size)}`];
    case 'key':
      return [h('code', {}, String(r.key_id))];
    default:
      return [];
  }
}

function ledgerRow(r: LedgerRecord): HTMLElement {
  const exec = typeof r.execution_id === 'string' ? r.execution_id : '';
  const actor = uidText(r.actor);
  const link = exec && actor ? executionLink(exec, actor) : exec;
  return h(
    'tr',
    { 'data-seq': r.seq, 'data-kind': r.kind },
    h('td', { class: 'num' }, seqEl(r.seq)),
    h('td', { class: 'nowrap' }, timeEl(r.ts)),
    h('td', { class: 'nowrap' }, kindBadge(r.kind)),
    h('td', { class: 'nowrap' }, actor),
    h('td', { class: 'nowrap' }, link),
    h('td', {}, recordSummary(r)),
    h('td', { class: 'proof' }, verifyControl(r)),
  );
}

/**
 * The Kind select also takes a kind typed as text (what a script's `fill('decision')` or a paste does):
 * the select is marked editable, the text edit itself is cancelled (the options stay), and the typed
 * name chooses its option — or, for a name that is not a known kind, an option of its own, so the filter
 * is applied as typed rather than silently widened to any kind. Deleting the text means any kind.
 * Mouse, arrow keys and the browser's type-to-select behave as in any select.
 */
function acceptTypedKind(kind: HTMLSelectElement): void {
  kind.contentEditable = 'true';
  const choose = (typed: string) => {
    const name = typed.trim();
    let option = [...kind.options].find((o) => o.value.toLowerCase() === name.toLowerCase());
    if (!option) {
      kind.querySelector('option[data-typed]')?.remove();
      option = h('option', { value: name, 'data-typed': '' }, name);
      kind.append(option);
    }
    if (kind.value === option.value) return;
    kind.value = option.value;
    kind.dispatchEvent(new Event('change', { bubbles: true }));
  };
  kind.addEventListener('beforeinput', (e) => {
    e.preventDefault();
    if (e.inputType.startsWith('delete')) choose('');
    else if (typeof e.data === 'string') choose(e.data);
    else if (e.dataTransfer) choose(e.dataTransfer.getData('text/plain'));
  });
  kind.addEventListener('keydown', (e) => {
    // A select has no text to delete: Delete or Backspace clears the filter (how a script's `fill('')` clears it).
    if (e.key === 'Delete' || e.key === 'Backspace') {
      e.preventDefault();
      choose('');
    }
  });
}

function ledgerView(): HTMLElement {
  // Kind is one of a fixed set: a select (an empty value = any kind), so it applies on its change event.
  const kind = h('select', { id: 'f-kind' }, h('option', { value: '' }, 'any'), ...KINDS.map((k) => h('option', { value: k }, k)));
  acceptTypedKind(kind);
  const actor = h('input', { id: 'f-actor', type: 'text', spellcheck: 'false', placeholder: 'Agent::"…"' });
  const exec = h('input', { id: 'f-exec', type: 'text', spellcheck: 'false', placeholder: 'any' });
  const status = h('p', { class: 'hint', role: 'status' });
  const body = h('tbody', {});
  const chartBox = h('div', { class: 'chart-slot' });
  const older = h('button', { type: 'button' }, 'Older');
  const newer = h('button', { type: 'button' }, 'Newer');
  let shown: LedgerRecord[] = [];
  let generation = 0;

  const filters = (): Filters => {
    const f: Filters = {};
    if (kind.value.trim()) f.kind = kind.value.trim();
    if (actor.value.trim()) f.actor = actor.value.trim();
    if (exec.value.trim()) f.execution_id = exec.value.trim();
    return f;
  };

  const show = (records: LedgerRecord[], more: { older: boolean; newer: boolean }) => {
    shown = records;
    // Newest first: the top of the table is the most recent activity.
    fill(body, [...records].reverse().map(ledgerRow));
    older.disabled = !more.older;
    newer.disabled = !more.newer;
    fill(status, records.length ? `records ${records[0]!.seq}–${records[records.length - 1]!.seq}` : 'no records match');
  };

  /** The filters of the last load started (as JSON): what the rows show, or are about to. */
  let applied: string | undefined;
  const guard = async (work: (g: number) => Promise<void>) => {
    const g = ++generation;
    fill(status, 'loading…');
    try {
      await work(g);
    } catch (e) {
      if (e instanceof ApiError && e.unauthorized) return signOut('unauthorized');
      if (g === generation) {
        applied = undefined; // a failed load shows nothing of its filters: the next change tries again
        fill(status, describeError(e));
      }
    }
  };

  const latest = () =>
    guard(async (g) => {
      const f = filters();
      applied = JSON.stringify(f);
      if (f.actor && !ACTOR.test(f.actor)) {
        // No rows under a filter that is not one: the rows shown before would pass for its result.
        fill(status, ACTOR_HINT);
        fill(body, []);
        fill(chartBox, []);
        older.disabled = true;
        newer.disabled = true;
        return;
      }
      const end = await api!.ledgerEnd();
      // The chart counts decisions under the same actor / execution filters (none when Kind excludes them).
      const chartable = !f.kind || f.kind === 'decision';
      const [page, decisions] = await Promise.all([
        api!.recordsBefore(end, PAGE_SIZE, f),
        chartable ? api!.recordsBefore(end, CHART_DECISIONS, { ...f, kind: 'decision' }) : Promise.resolve([]),
      ]);
      if (g !== generation) return;
      // A full page of decisions may be the newest of more: its oldest minute is then only partly counted.
      fill(chartBox, decisionsChart(decisions, decisions.length >= CHART_DECISIONS));
      show(page, { older: page.length > 0 && page[0]!.seq > 0 && page.length === PAGE_SIZE, newer: false });
    });

  older.addEventListener('click', () =>
    guard(async (g) => {
      const first = shown[0];
      if (!first) return;
      const page = await api!.recordsBefore(first.seq, PAGE_SIZE, filters());
      if (g !== generation) return;
      if (page.length) show(page, { older: page.length === PAGE_SIZE && page[0]!.seq > 0, newer: true });
      else older.disabled = true;
    }),
  );
  newer.addEventListener('click', () =>
    guard(async (g) => {
      const last = shown[shown.length - 1];
      if (!last) return;
      const page = await api!.records(last.seq + 1, PAGE_SIZE, filters());
      if (g !== generation) return;
      if (page.records.length) show(page.records, { older: true, newer: page.next !== null });
      else newer.disabled = true;
    }),
  );

  // Filters apply on change, and while typing after a short pause. A change event that brings nothing
  // new (the field losing focus after its typing was already applied — e.g. to a click on a row's
  // Verify) does not reload: redrawing the rows would wipe the verdict that click is about to show.
  let pause: number | undefined;
  for (const input of [kind, actor, exec]) {
    input.addEventListener('change', () => {
      clearTimeout(pause);
      if (JSON.stringify(filters()) === applied) return;
      void latest();
    });
    input.addEventListener('input', () => {
      clearTimeout(pause);
      pause = window.setTimeout(() => void latest(), 400);
    });
  }
  const refresh = h('button', { type: 'button' }, 'Refresh');
  refresh.addEventListener('click', () => void latest());
  void latest();

  const view = h(
    'div',
    { class: 'view' },
    h(
      'form',
      { class: 'card filters', role: 'search', 'aria-label': 'Ledger filters' },
      h('div', { class: 'field' }, h('label', { for: 'f-kind' }, 'Kind'), kind),
      h('div', { class: 'field' }, h('label', { for: 'f-actor' }, 'Actor'), actor),
      h('div', { class: 'field' }, h('label', { for: 'f-exec' }, 'Execution id'), exec),
      refresh,
    ),
    h('section', { class: 'card', 'aria-label': 'Decisions chart' }, chartBox),
    h(
      'section',
      { class: 'card', 'aria-label': 'Records' },
      h('div', { class: 'pager' }, status, h('span', { class: 'spacer' }), older, newer),
      h(
        'table',
        { class: 'ledger' },
        h('caption', {}, 'Ledger records, newest first'),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['seq', 'time', 'kind', 'actor', 'execution', 'summary', 'proof'].map((c) => h('th', { scope: 'col' }, c)),
          ),
        ),
        body,
      ),
    ),
  );
  // Back on the tab: "recent records" are the recent ones now — unless the user paged to older ones.
  whenShownAgain.set(view, () => {
    if (newer.disabled) void latest();
  });
  return view;
}

/** What a kept view does when its tab is shown again (the Ledger view fetches the newest records). */
const whenShownAgain = new WeakMap<HTMLElement, () => void>();

// ── approvals (docs/protocol.md §17): an approver sees what it approves ────────────────────────────

/** The approver's token, in this module's memory only, apart from the auditor's. */
let approverApi: Api | null = null;

function approverSignIn(message = ''): HTMLElement {
  return signInForm({
    id: 'approver-token',
    title: 'Approver sign-in',
    label: 'Approver token',
    message,
    hint: 'Paste your approver token. It stays in this page’s memory only.',
    footer: h('p', { class: 'hint' }, h('a', { href: '#/execution' }, 'Auditor console')),
    accept: async (candidate) => {
      let pending: PendingApproval[];
      try {
        pending = (await candidate.pending()).pending;
      } catch (e) {
        // Only an approver may list what waits for approval: any other token is simply not one.
        if (e instanceof ApiError && e.unauthorized) return false;
        throw e;
      }
      approverApi = candidate;
      void renderApprovals(pending);
      return true;
    },
  });
}

function pendingItem(p: PendingApproval, expiresIn: HTMLInputElement): HTMLElement {
  const rows: HTMLElement[] = [];
  const add = (label: string, value: Node | string | undefined) => {
    if (value !== undefined && value !== '') rows.push(...field(label, value));
  };
  add('subject', uidText(p.subject));
  add('tool', `${p.action.server}/${p.action.tool}`);
  // Exactly what the tool would receive (the admitted arguments), as JSON.
  add('arguments', h('code', { class: 'arguments' }, JSON.stringify(p.action.arguments)));
  add('requester', uidText(p.requester));
  add('purpose', p.purpose);
  add('execute after', p.execute_after === undefined ? undefined : timeEl(p.execute_after));
  add('triggering event', p.authoritative_event);
  add(
    'reasons',
    h(
      'span',
      { class: 'reasons' },
      p.reasons.map((x) => h('code', { class: 'reason' }, x)),
    ),
  );
  add('task', p.task_id);
  add('execution', h('code', {}, p.execution_id));
  add('actor', uidText(p.actor));
  add('approvals so far', String(p.approvals.filter((a) => a.valid).length));
  add('binding', digest(p.binding));
  const result = h('span', { class: 'verdict', role: 'status', 'aria-live': 'polite' });
  const button = h('button', { type: 'button', class: 'approve' }, 'Approve');
  button.addEventListener('click', async () => {
    if (!approverApi) return;
    const hours = Number(expiresIn.value);
    if (!Number.isFinite(hours) || hours <= 0) {
      fill(result, 'Expires in (hours) must be a positive number');
      return;
    }
    button.disabled = true;
    fill(result, 'approving…');
    try {
      await approverApi.approve(p, new Date(Date.now() + hours * 3600_000).toISOString());
      result.className = 'verdict verdict-verified';
      fill(result, 'approved');
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) return approverSignOut('unauthorized');
      result.className = 'verdict verdict-failed';
      fill(result, describeError(e));
      button.disabled = false;
    }
  });
  return h(
    'li',
    { class: 'entry pending', 'data-execution-id': p.execution_id },
    h(
      'div',
      { class: 'entry-body' },
      h('div', { class: 'entry-head' }, h('strong', {}, `${p.action.tool} · ${uidText(p.subject)}`), timeEl(p.decided_at)),
      h('dl', { class: 'details' }, rows),
      h('div', { class: 'verify-box' }, button, result),
    ),
  );
}

function approverSignOut(message = ''): void {
  approverApi = null;
  void renderApprovals(undefined, message);
}

async function renderApprovals(pending?: PendingApproval[], message = ''): Promise<void> {
  if (!approverApi) {
    fill(root, h('main', { 'aria-label': 'Approvals' }, approverSignIn(message)));
    document.getElementById('approver-token')?.focus();
    return;
  }
  const list = h('ul', { class: 'timeline', 'aria-label': 'Pending approvals' });
  const status = h('p', { class: 'hint', role: 'status' });
  const expiresIn = h('input', { id: 'expires-in', type: 'number', min: '1', step: '1', value: '24' });
  const refresh = h('button', { type: 'button', class: 'quiet' }, 'Refresh');
  const out = h('button', { type: 'button', class: 'quiet' }, 'Sign out');
  out.addEventListener('click', () => approverSignOut());
  const show = (items: PendingApproval[]) => {
    fill(
      list,
      items.map((p) => pendingItem(p, expiresIn)),
    );
    fill(status, items.length === 0 ? 'Nothing is waiting for your approval.' : `${items.length} waiting for your approval`);
  };
  const load = async () => {
    fill(status, 'loading…');
    try {
      show((await approverApi!.pending()).pending);
    } catch (e) {
      if (e instanceof ApiError && e.unauthorized) return approverSignOut('unauthorized');
      fill(status, describeError(e));
    }
  };
  refresh.addEventListener('click', () => void load());
  fill(
    root,
    h(
      'nav',
      { class: 'tabs', 'aria-label': 'Views' },
      h('a', { href: '#/approvals', class: 'tab', 'aria-current': 'page' }, 'Approvals'),
      h('span', { class: 'spacer' }),
      refresh,
      out,
    ),
    h(
      'main',
      { 'aria-label': 'Approvals' },
      h(
        'section',
        { class: 'card' },
        h('h2', {}, 'Waiting for your approval'),
        h('label', { for: 'expires-in' }, 'Expires in (hours)'),
        expiresIn,
        status,
        list,
      ),
    ),
  );
  if (pending) show(pending);
  else await load();
}

// ── shell and navigation ──────────────────────────────────────────────────────────────────────────

interface Route {
  view: 'execution' | 'ledger' | 'approvals';
  id?: string;
  actor?: string;
}

function currentRoute(): Route {
  const hash = location.hash.replace(/^#\/?/, '');
  const [path, query] = hash.split('?', 2);
  if (path === 'ledger') return { view: 'ledger' };
  if (path === 'approvals') return { view: 'approvals' };
  const q = new URLSearchParams(query ?? '');
  const route: Route = { view: 'execution' };
  const id = q.get('id');
  const actor = q.get('actor');
  if (id) route.id = id;
  if (actor) route.actor = actor;
  return route;
}

// Views are kept while signed in, so switching tabs keeps what each shows.
let views: { execution?: HTMLElement; ledger?: HTMLElement } = {};

function signOut(message = ''): void {
  api = null;
  views = {};
  fill(root, signInView(message));
  document.getElementById('token')?.focus();
}

function renderShell(focusView = false): void {
  if (!api) {
    signOut();
    return;
  }
  const route = currentRoute();
  if (route.view === 'execution' && route.id && route.actor) views.execution = executionView(route);
  const kept = route.view === 'ledger' ? views.ledger : views.execution;
  const view = route.view === 'ledger' ? (views.ledger ??= ledgerView()) : (views.execution ??= executionView());
  if (kept === view) whenShownAgain.get(view)?.();
  const tab = (name: 'execution' | 'ledger', label: string) =>
    h('a', { href: `#/${name}`, class: 'tab', 'aria-current': route.view === name ? 'page' : null }, label);
  const out = h('button', { type: 'button', class: 'quiet' }, 'Sign out');
  out.addEventListener('click', () => signOut());
  fill(
    root,
    h('nav', { class: 'tabs', 'aria-label': 'Views' }, tab('execution', 'Execution'), tab('ledger', 'Ledger'), h('span', { class: 'spacer' }), out),
    h('main', { 'aria-label': route.view === 'ledger' ? 'Ledger' : 'Execution' }, view),
  );
  // The link that was followed was replaced: keep the keyboard where it was, on the current view's tab.
  if (focusView) root.querySelector<HTMLElement>('a.tab[aria-current="page"]')?.focus();
}

window.addEventListener('hashchange', () => {
  if (currentRoute().view === 'approvals') void renderApprovals();
  else if (api) renderShell(true);
  else signOut();
});
if (currentRoute().view === 'approvals') void renderApprovals();
else signOut();
