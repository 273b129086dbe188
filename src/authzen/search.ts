/**
 * AuthZEN 1.0 search (§8 of the AuthZEN spec; docs/protocol.md §15): which subjects, resources or actions
 * would make an evaluation `true`. Pure apart from the evaluation it is handed.
 *
 * A search request is an evaluation with one member left open: the subject's or resource's `id`
 * (ignored when sent), or the whole action. It is admitted exactly as an evaluation is (request.ts, with
 * a placeholder in the open member), so its context and properties follow §3 and every refusal is an
 * evaluation's. Candidates, in a stable order: entities of the searched type in the trusted store
 * (sorted by id); for actions, those of the schema in force, else those the policies name
 * (PolicyEngine.actionNames). Candidates are taken one after another until a page holds `limit`
 * results or MAX_EVALUATIONS_PER_PAGE candidates were passed over; `next_token` (opaque) says where the
 * next page starts, `""` when no candidate is left.
 *
 * Pruning (subject and resource search): Cedar reduces the request once per page with the searched
 * member unknown (PolicyEngine.searchProgram, src/policy/search-residual.ts). When nothing can be
 * allowed, no candidate is evaluated (but the known member's own uid); else each candidate's residual is evaluated in JavaScript and only
 * the candidates it leaves undecided (an error, an expression it does not evaluate) are evaluated by the
 * engine. The answers, pages and tokens are exactly those of one-by-one evaluation; a page still passes
 * over its candidates one by one (linear), but most cost a residual evaluation rather than a Cedar call.
 * Action search, a schema in force, or a reduction Cedar cannot give, evaluate every candidate.
 */
import { WritError } from '../errors.js';
import { LosslessNumber, memberOf, parseLossless, toPlain, type Json, type LosslessValue } from '../binding/index.js';
import type { DecisionOutcome, PolicyEngine } from '../policy/engine.js';
import type { EntityJson, EntitySource } from '../policy/entities.js';
import { candidateJudgeOf } from '../policy/search-residual.js';
import { authzenRequestOf, requestEntityOf, requestInputOf, type AuthzenEvaluation } from './request.js';
import { uidKey } from '../util/uid.js';

export type SearchKind = 'subject' | 'resource' | 'action';

export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 1000;
/** Candidates one page evaluates at most: a page may come back short, with a next_token. */
export const MAX_EVALUATIONS_PER_PAGE = 10_000;
/** Candidates judged without the engine (searchJudgeOf) before an asynchronous page yields to other work. */
const JUDGED_BETWEEN_YIELDS = 1000;
/** What stands in the open member while the request is admitted as an evaluation. */
const PLACEHOLDER = '\u0000writ-search';

export interface SearchRequest {
  kind: SearchKind;
  /** The request as an evaluation, its open member a placeholder. */
  template: AuthzenEvaluation;
  /** The searched type (subject and resource search). */
  type?: string;
  limit: number;
  /** Candidates after this one (its id, or its action name); undefined: from the start. */
  after?: string;
  /** The request body as sent (the record's `search.query`). */
  query: Json;
}

function isObject(v: LosslessValue | undefined): v is { [k: string]: LosslessValue } {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof LosslessNumber);
}

/** The opaque next_token for a page that stopped after `last`. */
export function nextTokenOf(kind: SearchKind, last: string): string {
  return Buffer.from(JSON.stringify({ k: kind, a: last }), 'utf8').toString('base64url');
}

function afterOf(kind: SearchKind, token: string): string {
  try {
    const t = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { k?: unknown; a?: unknown };
    if (t.k === kind && typeof t.a === 'string') return t.a;
  } catch {
    /* refused below */
  }
  throw new WritError('INVALID_REQUEST', `page.token is not a next_token of a ${kind} search`, { path: '/page/token' });
}

/** Parses and admits a search request body. Throws WritError (INVALID_JSON, INVALID_REQUEST, BINDING_*) with a JSON pointer. */
export function parseSearchRequest(text: string, kind: SearchKind): SearchRequest {
  if (text.trim() === '') throw new WritError('INVALID_JSON', 'the request body is empty');
  const raw = parseLossless(text);
  if (!isObject(raw)) throw new WritError('INVALID_REQUEST', 'the body must be a JSON object', { path: '' });
  const query = toPlain(raw);
  const members: { [k: string]: LosslessValue } = {};
  for (const [k, v] of Object.entries(raw)) if (k !== 'page') members[k] = v;
  let type: string | undefined;
  if (kind === 'action') {
    if (memberOf(raw, 'action') !== undefined)
      throw new WritError('INVALID_REQUEST', 'an action search names no action: it searches them', { path: '/action' });
    members.action = { name: PLACEHOLDER };
  } else {
    const open = memberOf(raw, kind);
    if (!isObject(open) || typeof open.type !== 'string')
      throw new WritError('INVALID_REQUEST', `a ${kind} search names the ${kind} type it searches`, { path: `/${kind}/type` });
    type = open.type;
    // An id sent for the searched member is ignored (its properties are not: they apply to every candidate).
    members[kind] = { ...open, id: PLACEHOLDER };
  }
  const template = authzenRequestOf(members, false).evaluations[0]!;
  let limit = DEFAULT_PAGE_LIMIT;
  let after: string | undefined;
  const page = memberOf(raw, 'page');
  if (page !== undefined) {
    if (!isObject(page)) throw new WritError('INVALID_REQUEST', 'page is an object', { path: '/page' });
    for (const k of Object.keys(page))
      if (k !== 'limit' && k !== 'token') throw new WritError('INVALID_REQUEST', `page.${k} is not a member of page`, { path: `/page/${k}` });
    const l = page.limit === undefined ? undefined : toPlain(page.limit);
    if (l !== undefined) {
      if (typeof l !== 'number' || !Number.isInteger(l) || l < 1 || l > MAX_PAGE_LIMIT)
        throw new WritError('INVALID_REQUEST', `page.limit is a whole number from 1 to ${MAX_PAGE_LIMIT}`, { path: '/page/limit' });
      limit = l;
    }
    if (page.token !== undefined) {
      if (typeof page.token !== 'string') throw new WritError('INVALID_REQUEST', 'page.token is a string', { path: '/page/token' });
      if (page.token !== '') after = afterOf(kind, page.token);
    }
  }
  return { kind, template, ...(type !== undefined ? { type } : {}), limit, ...(after !== undefined ? { after } : {}), query };
}

/** The candidates of a search, in their stable order. */
export function candidatesOf(request: SearchRequest, entities: readonly EntityJson[], actions: readonly string[]): string[] {
  const names = request.kind === 'action' ? [...actions] : entities.filter((e) => e.uid.type === request.type).map((e) => e.uid.id);
  names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return request.after === undefined ? names : names.filter((n) => n > request.after!);
}

/** The evaluation of one candidate: the template with the open member filled in. */
export function candidateEvaluation(request: SearchRequest, candidate: string): AuthzenEvaluation {
  const t = request.template;
  if (request.kind === 'action') return { ...t, action: { ...t.action, name: candidate } };
  return { ...t, [request.kind]: { ...t[request.kind], id: candidate } };
}

export interface SearchPage {
  results: Array<{ type: string; id: string } | { name: string }>;
  next_token: string;
  /** Candidates the page passed over. */
  evaluated: number;
  /** Of those, the ones answered by the search's residual rather than evaluated by the engine. */
  pruned: number;
}

/** A candidate's answer without the engine (true, false), or undefined: evaluate it. */
export type SearchJudge = (e: AuthzenEvaluation) => boolean | undefined;

/**
 * The judge of a subject or resource search's candidates from Cedar's partial evaluation of the request
 * (see the module comment); undefined for an action search, or when the reduction is unusable.
 */
export function searchJudgeOf(request: SearchRequest, engine: PolicyEngine, store: EntitySource): SearchJudge | undefined {
  const kind = request.kind;
  if (kind === 'action') return undefined;
  const open = kind === 'subject' ? 'principal' : 'resource';
  const template = requestInputOf(request.template, store);
  const known = open === 'principal' ? template.resource : template.principal;
  // A known member that is the placeholder itself would merge with it: evaluated one by one.
  if (known.type === request.type && known.id === PLACEHOLDER) return undefined;
  const judge = candidateJudgeOf(engine.searchProgram(template, open), open, known);
  if (judge === undefined) return undefined;
  // The entities requestInputOf would give each candidate (the candidate's own uid is left to the
  // engine, so the known member's entity and the candidate's never merge): built here without the
  // context, which the residual no longer reads.
  const knownKey = uidKey(known);
  const knownEntities = template.requestEntities.filter((e) => uidKey(e.uid) === knownKey);
  const member = request.template[kind];
  return (e) => {
    const id = e[kind].id;
    const own = member.properties === undefined ? undefined : requestEntityOf({ ...member, id }, store);
    return judge({ type: member.type, id }, own === undefined ? knownEntities : [own, ...knownEntities], store);
  };
}

/**
 * One page being filled: which candidate comes next (undefined once `limit` results are in, the page's
 * budget is spent, or no candidate is left) and what the page says then. Shared by the server's
 * asynchronous page (evaluator threads) and `writ policy test`'s synchronous one.
 */
class PageBuilder {
  readonly results: SearchPage['results'] = [];
  evaluated = 0;
  pruned = 0;
  constructor(
    private readonly request: SearchRequest,
    private readonly candidates: readonly string[],
    private readonly judge: SearchJudge | undefined,
  ) {}

  next(): string | undefined {
    if (this.evaluated >= this.candidates.length || this.results.length >= this.request.limit || this.evaluated >= MAX_EVALUATIONS_PER_PAGE) return undefined;
    return this.candidates[this.evaluated++];
  }

  /** The candidate's answer without the engine, if the judge has one. */
  judged(candidate: string): boolean | undefined {
    const verdict = this.judge?.(candidateEvaluation(this.request, candidate));
    if (verdict !== undefined) {
      this.pruned++;
      this.accept(candidate, verdict);
    }
    return verdict;
  }

  accept(candidate: string, allowed: boolean): void {
    if (!allowed) return;
    this.results.push(this.request.kind === 'action' ? { name: candidate } : { type: this.request.type!, id: candidate });
  }

  page(): SearchPage {
    const done = this.evaluated >= this.candidates.length;
    return {
      results: this.results,
      next_token: done ? '' : nextTokenOf(this.request.kind, this.candidates[this.evaluated - 1]!),
      evaluated: this.evaluated,
      pruned: this.pruned,
    };
  }
}

/**
 * One page: candidates taken in order until `limit` are true or the page's budget is spent; each is
 * answered by `judge` when it can (searchJudgeOf), else by `evaluate`.
 */
export async function searchPage(
  request: SearchRequest,
  candidates: readonly string[],
  evaluate: (e: AuthzenEvaluation) => DecisionOutcome | Promise<DecisionOutcome>,
  judge?: SearchJudge,
): Promise<SearchPage> {
  const b = new PageBuilder(request, candidates, judge);
  let inARow = 0;
  for (let c = b.next(); c !== undefined; c = b.next()) {
    if (b.judged(c) === undefined) {
      inARow = 0;
      b.accept(c, (await evaluate(candidateEvaluation(request, c))).decision === 'allow');
    } else if (++inARow % JUDGED_BETWEEN_YIELDS === 0) {
      // Judging runs on the server's own thread: a page of 10,000 candidates lets other requests in.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  return b.page();
}

/** searchPage with an evaluation that answers at once (`writ policy test`). */
export function searchPageSync(
  request: SearchRequest,
  candidates: readonly string[],
  evaluate: (e: AuthzenEvaluation) => DecisionOutcome,
  judge?: SearchJudge,
): SearchPage {
  const b = new PageBuilder(request, candidates, judge);
  for (let c = b.next(); c !== undefined; c = b.next()) {
    if (b.judged(c) === undefined) b.accept(c, evaluate(candidateEvaluation(request, c)).decision === 'allow');
  }
  return b.page();
}
