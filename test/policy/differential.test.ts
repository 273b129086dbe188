/**
 * A differential, seeded property test of the decision core against a reference written from the
 * contract (docs/protocol.md §2) alone: Cedar's isAuthorized over the WHOLE policy set, the WHOLE
 * context as §2 defines it and the WHOLE entity store, with the approver loop and the
 * `approval_required` rule implemented here from the text, not from engine.ts. Random policy sets
 * (permit/forbid, @id or `<file>#<index>`, @requires_approval, every action-scope kind, string `like`/==,
 * datetime and duration arithmetic, decimals, sets, has-checks, entity-valued attributes, role
 * hierarchies, context.approver, erroring conditions), random acyclic entity stores and an "admin
 * update" of them, and request sequences that repeat each shape while varying only task_id, the clock,
 * execute_after and the binding — so the memo, the residual programs (built on a shape's second sight),
 * the narrowing, the lean-slice shortcut and an evaluator thread are all exercised. Every engine must
 * answer the reference's decision, reasons (as a set), obligations, approval_used and whether there
 * were errors. A failure prints the seed, case and request to replay.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { PolicyEngine, type DecisionInput, type DecisionOutcome, type ValidApproval } from '../../src/policy/engine.js';
import { EvaluatorPool } from '../../src/policy/evaluator-pool.js';
import { loadPolicyDir } from '../../src/policy/load.js';
import { StaticEntitySource, type EntityJson } from '../../src/policy/entities.js';
import type { Uid } from '../../src/util/uid.js';
import { prng } from '../helpers/prng.js';
import { tempPolicyDir } from './helpers.js';

const SEED = 20261201;
const CASES = 18;

const random = prng(SEED);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
const chance = (p: number): boolean => random() < p;
const int = (lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1));
const E = (type: string, id: string) => ({ __entity: { type, id } });

const ROLES = ['hr', 'legal', 'ops', 'managers', 'staff'];
const USERS = ['alice', 'bob', 'carol', 'dave', 'req1', 'req2'];
const TOOLS = ['s/t', 's/u', 's/v', 'idp/disable_sign_in'];
const DTS = [
  '2026-08-24T09:00:00Z',
  '2026-08-24T10:00:00Z',
  '2026-08-24T10:30:00.250Z',
  '2026-08-24T17:00:00+07:00',
  '2026-08-24T12:00:00-02:30',
  '2026-08-25T00:00:00Z',
  '2026-01-01T00:00:00Z',
  '2026-08-24T10:00:00.5+00:00',
  '2026-08-24t11:00:00z',
];
const DLIT = ['2026-08-24', '2026-08-24T10:00:00Z', '2026-08-24T11:00:00+0100', '2026-08-24T09:59:59.999Z', '2026-01-01', '2026-08-25T00:00:00Z'];
const DUR = ['1h', '30m', '2h30m', '1d', '-1h', '90s', '0ms'];

function randomStore(): EntityJson[] {
  const es: EntityJson[] = [];
  ROLES.forEach((r, i) => {
    const parents: Uid[] = [];
    for (let j = i + 1; j < ROLES.length; j++) if (chance(0.3)) parents.push({ type: 'Role', id: ROLES[j]! });
    es.push({ uid: { type: 'Role', id: r }, attrs: chance(0.2) ? { tier: int(1, 3) } : {}, parents });
  });
  for (const u of USERS) {
    const attrs: Record<string, unknown> = {};
    if (chance(0.7)) attrs.level = int(0, 5);
    if (chance(0.6)) attrs.dept = pick(['eng', 'hr', 'legal']);
    if (chance(0.5)) attrs.manager = E('User', pick([...USERS, 'ghost']));
    if (chance(0.3)) attrs.profile = { active: chance(0.5), since: { __extn: { fn: 'datetime', arg: pick(['2020-01-01', '2026-08-24T00:00:00Z']) } } };
    if (chance(0.3)) attrs.groups = [E('Role', pick(ROLES)), E('Role', pick(ROLES))];
    const parents: Uid[] = [];
    for (const r of ROLES) if (chance(0.25)) parents.push({ type: 'Role', id: r });
    es.push({ uid: { type: 'User', id: u }, attrs, parents });
  }
  for (const a of ['a1', 'a2']) {
    const attrs: Record<string, unknown> = {};
    if (chance(0.8)) attrs.trusted = chance(0.6);
    if (chance(0.5)) attrs.owner = E('User', pick(USERS));
    if (chance(0.3)) attrs.limit = { __extn: { fn: 'decimal', arg: pick(['10.5', '100.0', '0.25']) } };
    es.push({ uid: { type: 'Agent', id: a }, attrs, parents: chance(0.4) ? [{ type: 'Role', id: 'ops' }] : [] });
  }
  es.push({ uid: { type: 'Folder', id: 'root' }, attrs: {}, parents: [] });
  for (const f of ['f1', 'f2']) {
    es.push({
      uid: { type: 'Folder', id: f },
      attrs: chance(0.3) ? { owner: E('User', pick(USERS)) } : {},
      parents: chance(0.7) ? [{ type: 'Folder', id: 'root' }] : [],
    });
  }
  for (const d of ['d1', 'd2']) {
    const attrs: Record<string, unknown> = {};
    if (chance(0.7)) attrs.secret = chance(0.5);
    if (chance(0.6)) attrs.owner = E('User', pick([...USERS, 'ghost']));
    if (chance(0.5)) attrs.classification = pick(['public', 'internal', 'restricted']);
    if (chance(0.4)) attrs.labels = [pick(['pii', 'hr', 'x']), pick(['pii', 'legal'])];
    es.push({ uid: { type: 'Doc', id: d }, attrs, parents: chance(0.7) ? [{ type: 'Folder', id: pick(['f1', 'f2']) }] : [] });
  }
  if (chance(0.5)) {
    es.push({ uid: { type: 'Action', id: 'grp' }, attrs: {}, parents: [] });
    for (const t of TOOLS) if (chance(0.5)) es.push({ uid: { type: 'Action', id: t }, attrs: {}, parents: [{ type: 'Action', id: 'grp' }] });
  }
  return es;
}

/** The store after an "admin update" of one or two entities (kept acyclic, as writ's upsert refuses cycles). */
function updatedStore(es: EntityJson[]): EntityJson[] {
  const out = JSON.parse(JSON.stringify(es)) as EntityJson[];
  for (let k = int(1, 2); k > 0; k--) {
    const e = pick(out.filter((x) => x.uid.type !== 'Action' && x.uid.type !== 'Folder'));
    if (chance(0.5)) {
      const later = e.uid.type === 'Role' ? ROLES.slice(ROLES.indexOf(e.uid.id) + 1) : ROLES;
      e.parents = chance(0.5) || later.length === 0 ? [] : [e.uid.type === 'Doc' ? { type: 'Folder', id: 'f2' } : { type: 'Role', id: pick(later) }];
    } else if (e.uid.type === 'User') e.attrs.level = int(0, 5);
    else if (e.uid.type === 'Doc') e.attrs.secret = !e.attrs.secret;
    else if (e.uid.type === 'Agent') e.attrs.trusted = !e.attrs.trusted;
    else e.attrs.tier = int(1, 3);
  }
  return out;
}

const ATOMS: Array<() => string> = [
  () => `context.task_id like "${pick(['T-*', '*-blocked', '*1', 'T-?', '*', 'X*b*d'])}"`,
  () => `context.task_id == "${pick(['T-1', 'T-2', 'X-blocked'])}"`,
  () => `context.purpose == "${pick(['testing', 'offboarding', 'scheduled_employee_offboarding'])}"`,
  () => `context.purpose like "*${pick(['off', 'test', 'employee'])}*"`,
  () => `context.phase == "${pick(['propose', 'execute'])}"`,
  () => `context.server == "${pick(['s', 'idp'])}"`,
  () => `context.tool like "${pick(['disable_*', 't', '?', '*'])}"`,
  () => `context.binding like "writ-bind/1:sha256:${pick(['0', 'a', ''])}*"`,
  () => `context.task_id == context.purpose`,
  () => `context.task_id != "${pick(['T-1', 'T-2'])}"`,
  () => `context.now ${pick(['<', '<=', '>', '>='])} datetime("${pick(DLIT)}")`,
  () => `context.now ${pick(['<', '>='])} datetime("${pick(DLIT)}").offset(duration("${pick(DUR)}"))`,
  () => `context.now.offset(duration("${pick(DUR)}")) > datetime("${pick(DLIT)}")`,
  () => `context has execute_after && context.execute_after ${pick(['<', '<=', '>'])} context.now`,
  () => `context.execute_after ${pick(['<', '>='])} context.now`, // errors when absent
  () => `context has execute_after && context.now.durationSince(context.execute_after) ${pick(['>', '<'])} duration("${pick(DUR)}")`,
  () => `context.now.toTime() ${pick(['<', '>'])} duration("${pick(['10h', '12h', '0ms'])}")`,
  () => `context.now.toDate() == datetime("${pick(['2026-08-24', '2026-08-25'])}")`,
  () => `context.now == datetime("${pick(['2026-08-24T10:00:00Z', '2026-08-24T10:00:00.000Z'])}")`,
  () => `context has execute_after && context.execute_after == datetime("${pick(['2026-08-24T10:00:00Z', '2026-08-24T17:00:00+0700'])}")`,
  () => `context.arguments has amount && context.arguments.amount.${pick(['greaterThan', 'lessThanOrEqual'])}(decimal("${pick(['10.5', '0.25', '99.9999'])}"))`,
  () => `context.arguments.amount.greaterThan(decimal("1.0"))`, // errors when absent
  () => `context.arguments has n && context.arguments.n ${pick(['>', '==', '<'])} ${int(0, 5)}`,
  () => `context.arguments.n > 2`,
  () => `context.arguments has tags && context.arguments.tags.contains("${pick(['urgent', 'x'])}")`,
  () => `context.arguments has mode && context.arguments.mode like "dry*"`,
  () => `context.arguments has opts && context.arguments.opts has force && context.arguments.opts.force`,
  () => `context.evidence_refs.contains("${pick(['hris:employee:7721@version-44', 'ticket:1'])}")`,
  () => `context.evidence_refs.${pick(['isEmpty()', 'containsAny(["ticket:1", "ticket:2"])'])}`,
  () => `context has authoritative_event && context.authoritative_event like "hris:*"`,
  () => `context has approver && context.approver in Role::"${pick(ROLES)}"`,
  () => `context.approver in Role::"${pick(ROLES)}"`, // errors without approver
  () => `context has approver && context.approver.level > ${int(0, 4)}`,
  () => `context has approver && context.approver != context.requester`,
  () => `context.approvals.isEmpty()`,
  () =>
    `context.approvals.contains({approver: User::"${pick(USERS)}", approved_at: datetime("2026-08-24T08:00:00Z"), expires_at: datetime("2026-08-25T08:00:00Z")})`,
  () => `context has supersedes && context.supersedes.state == "${pick(['unknown', 'rejected'])}"`,
  () => `context has supersedes && context.supersedes has resolution && context.supersedes.resolution == "absent"`,
  () => `context.supersedes.state == "unknown"`,
  () => `principal.trusted`,
  () => `principal has trusted && principal.trusted`,
  () => `principal has owner && principal.owner == context.requester`,
  () => `principal has limit && principal.limit.lessThan(decimal("50.0"))`,
  () => `principal in Role::"${pick(ROLES)}"`,
  () => `context.requester in Role::"${pick(ROLES)}"`,
  () => `context.requester.level > ${int(0, 4)}`,
  () => `context.requester has level && context.requester.level >= ${int(0, 4)}`,
  () => `context.requester has manager && context.requester.manager in Role::"${pick(ROLES)}"`,
  () => `context.requester has groups && context.requester.groups.contains(Role::"${pick(ROLES)}")`,
  () => `context.requester has profile && context.requester.profile.active`,
  () => `context.requester has profile && context.requester.profile.since < context.now`,
  () => `context.requester == User::"${pick(USERS)}"`,
  () => `resource.secret`,
  () => `resource has secret && resource.secret`,
  () => `resource has owner && resource.owner.dept == "${pick(['eng', 'hr'])}"`,
  () => `resource has owner && resource.owner in Role::"${pick(ROLES)}"`,
  () => `resource has labels && resource.labels.contains("${pick(['pii', 'legal'])}")`,
  () => `resource has classification && resource.classification like "${pick(['*ern*', 'public', 'r*'])}"`,
  () => `resource in Folder::"${pick(['f1', 'f2', 'root'])}"`,
  () => `resource is Doc`,
  () => `action in Action::"grp"`,
  () => `action == Action::"${pick(TOOLS)}"`,
  () => `principal.hasTag("k")`,
  () => `if context has execute_after then context.execute_after < context.now else context.phase == "propose"`,
  () => `if context.task_id like "T-*" then context.now < datetime("${pick(DLIT)}") else true`,
  () => `context has ${pick(['execute_after', 'authoritative_event', 'supersedes', 'approver', 'nope'])}`,
  () => `context.${pick(['missing', 'arguments.missing'])} == 1`,
  () => `context.arguments == {n: 1}`,
  () => `context == {}`,
  () => `context["task_id"] like "T*"`,
  () => `context.purpose == "${pick(['testing'])}" && context.task_id like "T-*"`,
  () => `User::"${pick(USERS)}".level > ${int(0, 3)}`,
  () => `User::"${pick(USERS)}" has dept && User::"${pick(USERS)}".dept == "eng"`,
  () => `Doc::"${pick(['d1', 'd2'])}" has owner && Doc::"${pick(['d1', 'd2'])}".owner == context.requester`,
  () => `Folder::"${pick(['f1', 'f2'])}" has owner && Folder::"${pick(['f1', 'f2'])}".owner in Role::"${pick(ROLES)}"`,
  () => `resource has owner && resource.owner has manager && resource.owner.manager has level && resource.owner.manager.level > ${int(0, 3)}`,
  () => `principal has owner && principal.owner has groups && principal.owner.groups.contains(Role::"${pick(ROLES)}")`,
  () => `context.requester has manager && context.requester.manager == User::"${pick(USERS)}"`,
  () => `context.task_id like "${pick(['T-*', 'X\\*', '*\u{1F600}', 'T-\u{e9}'])}"`,
  () => `context.binding == "writ-bind/1:sha256:${'1'.repeat(64)}"`,
  () => `context has authoritative_event && context.authoritative_event == context.task_id`,
  () =>
    `context.approvals.contains({approver: User::"${pick(USERS)}", approved_at: datetime("2026-08-24T0${int(0, 3)}:00:00Z"), expires_at: datetime("2026-08-25T08:00:00Z")})`,
  () => `context.arguments == {${pick(['n: 1', 'n: 2, mode: "live"', ''])}}`,
  () => `context.arguments.tags == ["x", "y"]`,
  () => `context.evidence_refs == ["ticket:1", "ticket:3"]`,
  () => `context.now > context.requester.profile.since`,
  () => `(if context.phase == "execute" then context.task_id else context.purpose) like "*-*"`,
  () => `context.now < (if context has execute_after then context.execute_after else datetime("2026-08-24T12:00:00Z"))`,
];

function expr(depth: number): string {
  if (depth <= 0 || chance(0.5)) return `${chance(0.15) ? '!' : ''}(${pick(ATOMS)()})`;
  return `(${expr(depth - 1)} ${pick(['&&', '||'])} ${expr(depth - 1)})`;
}
const scopeP = () =>
  pick([
    'principal',
    'principal',
    'principal',
    `principal == Agent::"${pick(['a1', 'a2'])}"`,
    `principal in Role::"${pick(ROLES)}"`,
    'principal is Agent',
    'principal is User',
  ]);
const scopeR = () =>
  pick([
    'resource',
    'resource',
    'resource',
    `resource == Doc::"${pick(['d1', 'd2', 'd3'])}"`,
    `resource in Folder::"${pick(['f1', 'root'])}"`,
    'resource is Doc',
  ]);
function scopeA(): string {
  const r = random();
  if (r < 0.25) return 'action';
  if (r < 0.7) return `action == Action::"${pick(TOOLS)}"`;
  if (r < 0.85) return `action in [Action::"${pick(TOOLS)}", Action::"${pick(TOOLS)}"]`;
  return `action in Action::"${pick(['grp', ...TOOLS])}"`;
}

interface GenPolicy {
  file: string;
  id: string;
  text: string;
  group?: string;
}

/** Policies with the ids §2 gives them: the @id annotation, else `<relative file>#<index>`. */
function randomPolicies(caseNo: number): GenPolicy[] {
  const n = chance(0.25) ? int(10, 14) : int(1, 8);
  const out: GenPolicy[] = [];
  const counts: Record<string, number> = { 'a.cedar': 0, 'sub/b.cedar': 0 };
  const broad = chance(0.5);
  for (let i = 0; i < n + (broad ? 1 : 0); i++) {
    const file = broad && i === n ? 'a.cedar' : chance(0.7) ? 'a.cedar' : 'sub/b.cedar';
    const index = counts[file]!++;
    if (broad && i === n) {
      out.push({ file, id: `${file}#${index}`, text: `permit(principal, ${scopeA()}, resource)${chance(0.5) ? ` when { ${pick(ATOMS)()} }` : ''};` });
      continue;
    }
    const permit = chance(0.55);
    const hasId = chance(0.6);
    const id = hasId ? `p${caseNo}-${i}` : `${file}#${index}`;
    const group = !permit && chance(0.45) ? `Role::"${pick(ROLES)}"` : undefined;
    let text = chance(0.2) ? '// note; "quoted" @id("fake")\n' : '';
    if (chance(0.2)) text += '@advice("x;y") ';
    if (hasId) text += `@id("${id}") `;
    if (group) text += `@requires_approval("${group.replace(/"/g, '\\"')}") `;
    text += `${permit ? 'permit' : 'forbid'}(${scopeP()}, ${scopeA()}, ${scopeR()})`;
    for (let c = int(0, 2); c > 0; c--) text += ` ${chance(0.7) ? 'when' : 'unless'} { ${expr(2)} }`;
    if (group && chance(0.6)) text += ` unless { context has approver && context.approver in ${group} }`;
    out.push({ file, id, text: `${text};`, ...(group ? { group } : {}) });
  }
  return out;
}

interface Shape {
  actor: Uid;
  server: string;
  tool: string;
  subject: Uid;
  requester: Uid;
  purpose: string;
  phase: 'propose' | 'execute';
  args: Record<string, unknown>;
  evidence?: string[];
  event?: string;
  hasExecAfter: boolean;
  supersedes?: DecisionInput['supersedes'];
  approvals: ValidApproval[];
}

let approvalCounter = 0;
function randomShape(): Shape {
  const [server, tool] = pick(TOOLS).split('/') as [string, string];
  const args: Record<string, unknown> = {};
  if (chance(0.6)) args.n = int(0, 5);
  if (chance(0.5)) args.amount = { __extn: { fn: 'decimal', arg: pick(['0.5', '10.5', '12.25', '99.9999', '1000.1']) } };
  if (chance(0.3)) args.tags = chance(0.5) ? ['urgent'] : ['x', 'y'];
  if (chance(0.3)) args.mode = pick(['dry-run', 'live']);
  if (chance(0.2)) args.opts = chance(0.5) ? { force: chance(0.5) } : {};
  const shape: Shape = {
    actor: { type: 'Agent', id: pick(['a1', 'a1', 'a2']) },
    server,
    tool,
    subject: { type: 'Doc', id: pick(['d1', 'd1', 'd2', 'd3']) },
    requester: { type: 'User', id: pick(['req1', 'req2', 'alice', 'ghost']) },
    purpose: pick(['testing', 'offboarding', 'scheduled_employee_offboarding']),
    phase: pick(['propose', 'execute'] as const),
    args,
    hasExecAfter: chance(0.5),
    approvals: [],
  };
  if (chance(0.5)) shape.evidence = chance(0.5) ? ['hris:employee:7721@version-44'] : ['ticket:1', 'ticket:3'];
  if (chance(0.4)) shape.event = pick(['hris:termination:99108', 'manual']);
  if (chance(0.2))
    shape.supersedes = {
      execution_id: 'E-1',
      state: pick(['unknown', 'rejected', 'reconciled']),
      ...(chance(0.5) ? { resolution: pick(['committed', 'absent'] as const) } : {}),
    };
  const hours = new Set<number>();
  for (let k = chance(0.35) ? int(1, 3) : 0; k > 0; k--) {
    let h: number;
    do h = int(0, 9);
    while (hours.has(h));
    hours.add(h);
    shape.approvals.push({
      approval_id: `ap-${++approvalCounter}`,
      approver: { type: 'User', id: pick(['alice', 'bob', 'carol', 'dave', 'nobody']) },
      // distinct instants, in several spellings (offsets make text order differ from time order)
      approved_at: pick([`2026-08-24T0${h}:00:00Z`, `2026-08-24T${10 + h}:${h}7:00+10:00`, `2026-08-24T0${h}:00:00.${h}12Z`]),
      expires_at: pick(['2026-08-25T08:00:00Z', '2026-08-24T23:00:00+02:00']),
    });
  }
  if (shape.approvals.length > 1 && chance(0.5)) shape.approvals.reverse();
  return shape;
}

/** One request of a shape: only task_id, the clock, execute_after and the binding vary. */
function requestOf(s: Shape): Omit<DecisionInput, 'entities'> {
  const envelope: Record<string, unknown> = {
    task_id: pick(['T-1', 'T-2', 'X-blocked', 'T-99', 'ab', 'X*', 'T-\u00e9', 'T-\u{1F600}', 'hris:termination:99108']),
    purpose: s.purpose,
    requester: s.requester,
  };
  if (s.hasExecAfter) envelope.execute_after = pick(DTS);
  if (s.evidence) envelope.evidence_refs = s.evidence;
  if (s.event !== undefined) envelope.authoritative_event = s.event;
  const now = new Date(
    pick(['2026-08-24T09:00:00Z', '2026-08-24T10:00:00Z', '2026-08-24T10:00:00.500Z', '2026-08-24T16:59:59Z', '2026-08-25T01:00:00Z', '2025-12-31T23:00:00Z']),
  );
  return {
    actor: s.actor,
    server: s.server,
    tool: s.tool,
    subject: s.subject,
    envelope,
    phase: s.phase,
    binding: `writ-bind/1:sha256:${pick(['0', '1', 'a']).repeat(64)}`,
    cedarArguments: s.args as DecisionInput['cedarArguments'],
    now,
    approvals: s.approvals,
    ...(s.supersedes ? { supersedes: s.supersedes } : {}),
  };
}

// ------------------------------------------------------------------ the reference, from §2 alone

/** RFC 3339 → Cedar's datetime text (`±hhmm`, three fraction digits when there is a fraction). */
function cedarTime(text: string) {
  const m = /^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/.exec(text)!;
  const fraction = m[3] === undefined ? '' : `.${(`${m[3]}000`).slice(0, 3)}`;
  return { __extn: { fn: 'datetime', arg: `${m[1]}T${m[2]}${fraction}${m[4] ? 'Z' : m[5]! + m[6]! + m[7]!}` } };
}
const entityValue = (u: Uid) => ({ __entity: { type: u.type, id: u.id } });

function referenceContext(req: Omit<DecisionInput, 'entities'>, approver?: Uid): Record<string, unknown> {
  const env = req.envelope;
  const context: Record<string, unknown> = {
    requester: entityValue(env.requester as Uid),
    task_id: env.task_id,
    purpose: env.purpose,
    phase: req.phase,
    server: req.server,
    tool: req.tool,
    binding: req.binding,
    arguments: req.cedarArguments,
    evidence_refs: env.evidence_refs ?? [],
    now: { __extn: { fn: 'datetime', arg: req.now.toISOString() } },
    approvals: req.approvals.map((a) => ({ approver: entityValue(a.approver), approved_at: cedarTime(a.approved_at), expires_at: cedarTime(a.expires_at) })),
  };
  if (env.execute_after !== undefined) context.execute_after = cedarTime(env.execute_after as string);
  if (env.authoritative_event !== undefined) context.authoritative_event = env.authoritative_event;
  if (approver) context.approver = entityValue(approver);
  if (req.supersedes) context.supersedes = req.supersedes;
  return context;
}

interface CedarAnswer {
  decision: 'allow' | 'deny';
  reasons: string[];
  errored: boolean;
}

function evaluateWhole(policies: GenPolicy[], store: EntityJson[], req: Omit<DecisionInput, 'entities'>, context: Record<string, unknown>): CedarAnswer {
  const answer = cedar.isAuthorized({
    principal: req.actor,
    action: { type: 'Action', id: `${req.server}/${req.tool}` },
    resource: req.subject,
    context: context as cedar.Context,
    entities: store as cedar.Entities,
    policies: { staticPolicies: Object.fromEntries(policies.map((p) => [p.id, p.text])) },
  });
  if (answer.type !== 'success') return { decision: 'deny', reasons: [], errored: true };
  const { decision, diagnostics } = answer.response;
  return { decision, reasons: diagnostics.reason, errored: diagnostics.errors.length > 0 };
}

interface Comparable {
  decision: string;
  reasons: string[];
  errors: boolean;
  obligations: string[];
  approval_used: string | null;
}

function referenceDecision(policies: GenPolicy[], store: EntityJson[], req: Omit<DecisionInput, 'entities'>): Comparable {
  const earliestFirst = [...req.approvals].sort((a, b) => Date.parse(a.approved_at) - Date.parse(b.approved_at));
  for (const approval of earliestFirst) {
    const r = evaluateWhole(policies, store, req, referenceContext(req, approval.approver));
    if (r.decision === 'allow' && !r.errored)
      return { decision: 'allow', reasons: r.reasons.sort(), errors: false, obligations: [], approval_used: approval.approval_id };
  }
  const context = referenceContext(req);
  const base = evaluateWhole(policies, store, req, context);
  const deny = (errors: boolean, reasons: string[]): Comparable => ({
    decision: 'deny',
    reasons: reasons.sort(),
    errors,
    obligations: [],
    approval_used: null,
  });
  if (base.errored) return deny(true, base.decision === 'deny' ? base.reasons : []);
  if (base.decision === 'allow') return { decision: 'allow', reasons: base.reasons.sort(), errors: false, obligations: [], approval_used: null };
  const groupOf = new Map(policies.map((p) => [p.id, p.group]));
  const determining = base.reasons;
  if (determining.length > 0 && determining.every((id) => groupOf.get(id) !== undefined)) {
    const relaxed = evaluateWhole(
      policies.filter((p) => !determining.includes(p.id)),
      store,
      req,
      context,
    );
    if (relaxed.decision === 'allow' && !relaxed.errored) {
      return {
        decision: 'approval_required',
        reasons: [...determining].sort(),
        errors: false,
        obligations: determining.map((id) => `${id}|${groupOf.get(id)}`).sort(),
        approval_used: null,
      };
    }
  }
  return deny(false, determining);
}

function comparable(o: DecisionOutcome): Comparable {
  return {
    decision: o.decision,
    reasons: [...o.reasons].sort(),
    errors: o.errors.length > 0,
    obligations: o.obligations.map((x) => `${x.policy}|${x.approver_group}`).sort(),
    approval_used: o.approval_used ?? null,
  };
}

test(`differential: every engine configuration and an evaluator thread answer as the whole-input reference (seed ${SEED})`, async () => {
  const pool = new EvaluatorPool(1);
  const seen = new Map<string, number>();
  let residualAnswers = 0;
  try {
    for (let c = 0; c < CASES; c++) {
      const policies = randomPolicies(c);
      const storeA = randomStore();
      const storeB = updatedStore(storeA);
      const files: Record<string, string> = {};
      for (const p of policies) files[p.file] = files[p.file] === undefined ? p.text : `${files[p.file]}\n${p.text}`;
      const { dir, cleanup } = tempPolicyDir(files);
      try {
        const bundle = loadPolicyDir(dir);
        assert.deepEqual([...bundle.ids].sort(), policies.map((p) => p.id).sort(), `case ${c}: policy ids`);
        const engines: Record<string, PolicyEngine> = {
          default: new PolicyEngine(bundle),
          wide: new PolicyEngine(bundle, { narrowRequests: false }),
          memo: new PolicyEngine(bundle, { memoSize: 64, partialEvaluationShare: 1 }),
          tinyMemo: new PolicyEngine(bundle, { memoSize: 2, partialEvaluationShare: 1 }),
        };
        const threaded = new PolicyEngine(bundle, { memoSize: 1, partialEvaluationShare: 1 });
        pool.register(threaded, bundle);
        const sources = { A: new StaticEntitySource(storeA), B: new StaticEntitySource(storeB) };
        const shapes = Array.from({ length: int(2, 4) }, randomShape);
        let which: 'A' | 'B' = 'A';
        for (let r = int(14, 24); r > 0; r--) {
          if (chance(0.06)) which = which === 'A' ? 'B' : 'A';
          const req = requestOf(pick(shapes));
          const expected = referenceDecision(policies, which === 'A' ? storeA : storeB, req);
          seen.set(expected.decision + (expected.errors ? '+errors' : ''), (seen.get(expected.decision + (expected.errors ? '+errors' : '')) ?? 0) + 1);
          const input: DecisionInput = { ...req, entities: sources[which] };
          const replay: string = `seed ${SEED}, case ${c}, store ${which}, request ${JSON.stringify(req)}\npolicies:\n${policies.map((p) => p.text).join('\n')}`;
          for (const [name, engine] of Object.entries(engines)) assert.deepEqual(comparable(engine.evaluate(input)), expected, `${name}: ${replay}`);
          assert.deepEqual(comparable(await pool.evaluate(threaded, input)), expected, `thread: ${replay}`);
        }
        residualAnswers += engines.memo!.residualAnswers + engines.tinyMemo!.residualAnswers;
      } finally {
        cleanup();
      }
    }
  } finally {
    await pool.close();
  }
  // The sample reached every kind of answer and the residual programs answered some: each path was compared.
  for (const kind of ['allow', 'deny', 'approval_required', 'deny+errors'])
    assert.ok((seen.get(kind) ?? 0) > 0, `no ${kind} in the sample: ${JSON.stringify([...seen])}`);
  assert.ok(residualAnswers > 0, 'no decision was answered by a residual program');
});
