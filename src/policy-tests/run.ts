/**
 * The functional core of `writ policy test` (docs/protocol.md §8): every `<dir>/tests/**\/*.json` holds
 * `[{name, now, request, approvals?, expect: {decision, reasons?}}]` (or, instead of `request`, an
 * AuthZEN request `authzen: {subject, action, resource, context?}`); each case is decided by the
 * same PolicyEngine the server uses, over the seed entities of `<dir>/entities.json`, with the
 * arguments admitted and bound exactly as the server does (writ-bind/1).
 */
import { noPrior, PRIOR_BUCKETS, type Prior } from '../executions/prior.js';
import { readdirSync, readFileSync, existsSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { admitValue, bindCall, parseLossless, toPlain, type LosslessValue } from '../binding/index.js';
import { isWritError, WritError } from '../errors.js';
import type { Uid } from '../util/uid.js';
import { cedarDatetimeText } from '../policy/datetime.js';
import { type DecisionInput, type DecisionOutcome, PolicyEngine, type ValidApproval } from '../policy/engine.js';
import { type EntitySource, StaticEntitySource, uidFromJson } from '../policy/entities.js';
import type { PolicyBundle } from '../policy/load.js';
import { authzenRequestOf, requestInputOf } from '../authzen/request.js';
import { isListCase, runListCase } from './list-cases.js';
import { validateDecisionRequest } from '../schemas/validate.js';
import { isRfc3339 } from '../util/rfc3339.js';
import { rawElements } from '../util/rawjson.js';

export interface CaseResult {
  file: string;
  name: string;
  passed: boolean;
  expected: { decision: string; reasons?: string[] };
  /** The engine's outcome, absent when the case could not be run (see `problem`). */
  got?: DecisionOutcome;
  problem?: string;
}

export interface TestRun {
  results: CaseResult[];
  passed: number;
  failed: number;
  /** Policies that were a reason of at least one outcome. */
  determining: string[];
  /** Policy ids (load order) that never were. */
  neverDetermining: string[];
}

type Obj = Record<string, LosslessValue>;

function isObj(v: LosslessValue | undefined): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;
}

function caseError(message: string): never {
  throw new WritError('INVALID_REQUEST', message);
}

/** Test files under `<dir>/tests`, recursively, sorted by relative path. */
export function listTestFiles(dir: string): string[] {
  const root = join(dir, 'tests');
  if (!existsSync(root)) return [];
  if (!statSync(root).isDirectory()) caseError('tests: not a folder (test cases are <dir>/tests/**/*.json)');
  // Real paths of the directories being walked: a link back up the tree is not walked again.
  const walking = new Set<string>();
  const walk = (rel: string): string[] => {
    const real = realpathSync(join(root, rel));
    walking.add(real);
    const found = readdirSync(join(root, rel), { withFileTypes: true })
      .sort((a, b) => (a.name < b.name ? -1 : 1))
      .flatMap((e) => {
        const relPath = rel === '' ? e.name : `${rel}/${e.name}`;
        // Symlinks are followed, as the policy loader follows them (a ConfigMap mount is all links):
        // a test skipped without a word would make `policy test` pass having run nothing.
        let kind: { isDirectory(): boolean; isFile(): boolean } = e;
        if (e.isSymbolicLink()) {
          try {
            kind = statSync(join(root, relPath));
          } catch {
            // A test file that cannot be read fails as a file (reading it says why); any other name is
            // not a test, whatever it points at.
            return e.name.endsWith('.json') ? [`tests/${relPath}`] : [];
          }
        }
        if (kind.isDirectory()) {
          if (walking.has(realpathSync(join(root, relPath)))) return [];
          return walk(relPath);
        }
        return kind.isFile() && e.name.endsWith('.json') ? [`tests/${relPath}`] : [];
      });
    walking.delete(real);
    return found;
  };
  return walk('');
}

function uidAt(value: LosslessValue | undefined, where: string): Uid {
  const uid = uidFromJson(value === undefined ? undefined : toPlain(value));
  if (typeof uid === 'string') caseError(`${where}: ${uid}`);
  return uid;
}

/** A timestamp as strict as the sidecar's (schemas/defs.json: upper-case `T`/`Z`, an offset, a real date). */
function timestampAt(value: LosslessValue | undefined, where: string): string {
  if (typeof value !== 'string' || !isRfc3339(value))
    caseError(`${where}: expected a strict RFC 3339 timestamp with an offset, e.g. 2026-08-24T17:00:00+07:00`);
  cedarDatetimeText(value);
  return value;
}

/** Runs a step of the sidecar's admission; a refusal fails the case, naming it (a case is not decided). */
function asTheSidecarWould<T>(step: () => T): T {
  try {
    return step();
  } catch (e) {
    if (isWritError(e)) caseError(`request${e.path ?? ''}: the sidecar would refuse this request: ${e.code}: ${e.message}`);
    throw e;
  }
}

/** Turns one case into the DecisionInput the server would build, approvals filtered to valid ones. */
function caseInputOf(testCase: Obj, name: string, entities: EntitySource): DecisionInput {
  const nowText = timestampAt(testCase.now, 'now');
  const now = new Date(nowText);
  const request = testCase.request;
  if (!isObj(request)) caseError('request: expected a decision body object');
  // What the sidecar would refuse (400) is not a case of a decision: said, not decided.
  asTheSidecarWould(() => validateDecisionRequest(toPlain(request)));
  const phase = request.phase;
  if (phase !== 'propose' && phase !== 'execute') caseError('request.phase: expected "propose" or "execute"');
  const envelope = request.envelope;
  if (!isObj(envelope)) caseError('request.envelope: expected an object');
  const action = request.action;
  if (!isObj(action)) caseError('request.action: expected an object');
  const { server, tool, arguments: args } = action;
  if (typeof server !== 'string' || typeof tool !== 'string') caseError('request.action: server and tool must be strings');
  if (!isObj(args)) caseError('request.action.arguments: expected an object');
  const bound = asTheSidecarWould(() => bindCall(server, tool, admitValue(args, '/action/arguments')));

  const rawApprovals = testCase.approvals ?? [];
  if (!Array.isArray(rawApprovals)) caseError('approvals: expected an array');
  const approvals: ValidApproval[] = [];
  rawApprovals.forEach((a, i) => {
    if (!isObj(a)) caseError(`approvals[${i}]: expected an object`);
    onlyKeys(a, APPROVAL_KEYS, `approvals[${i}]`);
    const approval: ValidApproval = {
      approval_id: `${name}#approval-${i}`,
      approver: uidAt(a.approver, `approvals[${i}].approver`),
      approved_at: a.approved_at === undefined ? nowText : timestampAt(a.approved_at, `approvals[${i}].approved_at`),
      expires_at: timestampAt(a.expires_at, `approvals[${i}].expires_at`),
    };
    // The server never holds an approval that expires before it was given (it refuses expires_at <= its
    // clock), nor one given after the decision's clock: such a fixture could pass a case production can
    // never produce. An approval stops counting at its expiry instant, as in the server.
    const approvedAt = Date.parse(approval.approved_at);
    const expiresAt = Date.parse(approval.expires_at);
    if (approvedAt >= expiresAt) caseError(`approvals[${i}]: approved_at must be before expires_at`);
    if (approvedAt <= now.getTime() && expiresAt > now.getTime()) approvals.push(approval);
  });

  const input: DecisionInput = {
    actor: uidAt(envelope.actor, 'request.envelope.actor'),
    subject: uidAt(envelope.subject, 'request.envelope.subject'),
    server,
    tool,
    envelope: toPlain(envelope) as Record<string, unknown>,
    phase,
    binding: bound.binding,
    cedarArguments: bound.cedar,
    now,
    approvals,
    entities,
  };
  uidAt(envelope.requester, 'request.envelope.requester');
  const superseded = supersedesOf(testCase.supersedes, envelope.supersedes);
  if (superseded) input.supersedes = superseded;
  if (testCase.prior !== undefined) input.prior = priorOf(testCase.prior);
  return input;
}

/**
 * `context.prior` of a case (docs/protocol.md §17): `{committed?, unknown?, invoking?, proposed_allowed?}`,
 * whole numbers, a member left out being 0; a case without `prior` sees no other execution of its call.
 */
function priorOf(member: LosslessValue): Prior {
  if (!isObj(member)) caseError('prior: expected {committed?, unknown?, invoking?, proposed_allowed?}');
  onlyKeys(member, PRIOR_BUCKETS, 'prior');
  const value = toPlain(member) as Record<string, unknown>;
  const prior = noPrior();
  for (const bucket of PRIOR_BUCKETS) {
    const n = value[bucket];
    if (n === undefined) continue;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) caseError(`prior.${bucket}: expected a whole number from 0`);
    prior[bucket] = n;
  }
  return prior;
}

const EXECUTION_STATES = ['proposed', 'invoking', 'committed', 'rejected', 'unknown', 'reconciled'];

/**
 * `context.supersedes` of a case whose request supersedes an earlier execution: the server looks that
 * execution up, a case states it — `supersedes: {state, resolution?}` (resolution exactly when the state is
 * `reconciled`), the execution id being the envelope's. Given without `envelope.supersedes`, or missing
 * with it, the case is refused: the server would never decide it so.
 */
function supersedesOf(member: LosslessValue | undefined, named: LosslessValue | undefined): DecisionInput['supersedes'] {
  if (named === undefined || named === null) {
    if (member !== undefined) caseError("supersedes: the request's envelope.supersedes names no execution");
    return undefined;
  }
  if (typeof named !== 'string') caseError('request.envelope.supersedes: expected an execution id');
  if (member === undefined) {
    caseError(`supersedes: the request supersedes ${named}; give the state the server would find it in: "supersedes": {"state", "resolution"?}`);
  }
  if (!isObj(member)) caseError('supersedes: expected {state, resolution?}');
  onlyKeys(member, ['state', 'resolution'], 'supersedes');
  const { state, resolution } = member;
  if (typeof state !== 'string' || !EXECUTION_STATES.includes(state)) caseError(`supersedes.state: expected one of ${EXECUTION_STATES.join(', ')}`);
  if (state === 'reconciled') {
    if (resolution !== 'committed' && resolution !== 'absent') caseError('supersedes.resolution: a reconciled execution has resolution committed or absent');
    return { execution_id: named, state, resolution };
  }
  if (resolution !== undefined) caseError('supersedes.resolution: only a reconciled execution has one');
  return { execution_id: named, state };
}

/**
 * A case that is an AuthZEN request (docs/protocol.md §10) instead of a decision body:
 * `{name, now?, authzen: {subject, action, resource, context?}, expect}` — mapped and admitted exactly
 * as POST /access/v1/evaluation does, `properties` layered under the seed entities' attributes.
 */
function evaluateAuthzenCase(engine: PolicyEngine, testCase: Obj, entities: EntitySource): DecisionOutcome {
  if (testCase.request !== undefined) caseError('a case has either request or authzen, not both');
  if (testCase.now !== undefined) timestampAt(testCase.now, 'now');
  let evaluation;
  try {
    evaluation = authzenRequestOf(testCase.authzen!, false).evaluations[0]!;
  } catch (e) {
    if (isWritError(e)) caseError(`authzen${e.path ?? ''}: ${e.code}: ${e.message}`);
    throw e;
  }
  return engine.evaluateRequest(requestInputOf(evaluation, entities));
}

/** The members a case, its `expect` and its approvals may have: a misspelt one (`reason`) would silently check nothing. */
const CASE_KEYS = ['name', 'now', 'request', 'authzen', 'approvals', 'expect', 'supersedes', 'prior'];
const EXPECT_KEYS = ['decision', 'reasons'];
const APPROVAL_KEYS = ['approver', 'approved_at', 'expires_at'];

function onlyKeys(o: Obj, known: readonly string[], where: string): void {
  for (const key of Object.keys(o)) if (!known.includes(key)) caseError(`${where}: unknown member ${JSON.stringify(key)} (expected ${known.join(', ')})`);
}

function expectationOf(testCase: Obj): CaseResult['expected'] {
  onlyKeys(testCase, CASE_KEYS, 'case');
  if (typeof testCase.name !== 'string' || testCase.name === '') caseError('name: expected a non-empty string');
  const expect = testCase.expect;
  if (!isObj(expect)) caseError('expect: expected {decision, reasons?}');
  onlyKeys(expect, EXPECT_KEYS, 'expect');
  const decision = expect.decision;
  if (decision !== 'allow' && decision !== 'deny' && decision !== 'approval_required') {
    caseError('expect.decision: expected allow, deny or approval_required');
  }
  const reasons = expect.reasons;
  if (reasons === undefined) return { decision };
  if (!Array.isArray(reasons) || reasons.some((r) => typeof r !== 'string')) caseError('expect.reasons: expected an array of policy ids');
  return { decision, reasons: reasons as string[] };
}

function sameSet(a: string[], b: string[]): boolean {
  const sa = new Set(a);
  const sb = new Set(b);
  return sa.size === sb.size && [...sa].every((x) => sb.has(x));
}

function messageOf(e: unknown): string {
  return isWritError(e) ? `${e.code}: ${e.message}` : e instanceof Error ? e.message : String(e);
}

/** A case of a test file that could not even be parsed: failed with this problem. */
class Refused {
  constructor(readonly problem: string) {}
}

/**
 * The cases of a test file. The file is parsed as the sidecar parses a body (lossless, every repeated key
 * refused); when that refuses something inside the array (a repeated key in one case's arguments), each
 * element is parsed alone, so that only the case holding it fails, naming the refusal as the sidecar would.
 */
function readCases(text: string): Array<LosslessValue | Refused> {
  let whole: LosslessValue;
  try {
    whole = parseLossless(text);
  } catch (e) {
    if (!isWritError(e) || e.code === 'INVALID_JSON') throw e;
    let elements: string[];
    try {
      elements = rawElements(text);
    } catch {
      throw e;
    }
    return elements.map((element) => {
      try {
        return parseLossless(element);
      } catch (inner) {
        if (!isWritError(inner)) throw inner;
        const path = inner.path ?? '';
        return new Refused(
          path.startsWith('/request')
            ? `request${path.slice('/request'.length)}: the sidecar would refuse this request: ${inner.code}: ${inner.message}`
            : `case${path}: ${inner.code}: ${inner.message}`,
        );
      }
    });
  }
  if (!Array.isArray(whole)) caseError('expected an array of test cases');
  return whole;
}

/** Runs every case of every test file of the bundle's directory. Never throws for a bad case. */
export function runPolicyTests(bundle: PolicyBundle, engine: PolicyEngine = new PolicyEngine(bundle)): TestRun {
  const entities = new StaticEntitySource(bundle.seedEntities);
  const results: CaseResult[] = [];
  for (const file of listTestFiles(bundle.dir)) {
    let cases: Array<LosslessValue | Refused>;
    try {
      cases = readCases(readFileSync(join(bundle.dir, file), 'utf8'));
    } catch (e) {
      results.push({ file, name: file, passed: false, expected: { decision: '?' }, problem: `unreadable test file: ${messageOf(e)}` });
      continue;
    }
    cases.forEach((testCase, i) => {
      if (testCase instanceof Refused) {
        results.push({ file, name: `${file}[${i}]`, passed: false, expected: { decision: '?' }, problem: testCase.problem });
        return;
      }
      const name = isObj(testCase) && typeof testCase.name === 'string' && testCase.name !== '' ? testCase.name : `${file}[${i}]`;
      let expected: CaseResult['expected'] = { decision: '?' };
      try {
        if (!isObj(testCase)) caseError('expected a test case object');
        if (isListCase(testCase)) {
          // A tool-list or search case (list-cases.ts): it expects a list, not a decision.
          expected = { decision: 'list' };
          const problem = runListCase(engine, testCase, entities);
          results.push(problem === undefined ? { file, name, passed: true, expected } : { file, name, passed: false, expected, problem });
          return;
        }
        expected = expectationOf(testCase);
        const got = testCase.authzen !== undefined ? evaluateAuthzenCase(engine, testCase, entities) : engine.evaluate(caseInputOf(testCase, name, entities));
        const passed = got.decision === expected.decision && (expected.reasons === undefined || sameSet(expected.reasons, got.reasons));
        results.push({ file, name, passed, expected, got });
      } catch (e) {
        results.push({ file, name, passed: false, expected, problem: messageOf(e) });
      }
    });
  }
  const determining = new Set(results.flatMap((r) => r.got?.reasons ?? []));
  const passed = results.filter((r) => r.passed).length;
  return {
    results,
    passed,
    failed: results.length - passed,
    determining: bundle.ids.filter((id) => determining.has(id)),
    neverDetermining: bundle.ids.filter((id) => !determining.has(id)),
  };
}

function describeOutcome(decision: string, reasons?: string[]): string {
  return reasons === undefined ? decision : `${decision} [${reasons.join(', ')}]`;
}

/** `PASS name` or `FAIL name: expected … got …`. */
export function caseLine(result: CaseResult): string {
  if (result.passed) return `PASS ${result.name}`;
  if (result.problem !== undefined) return `FAIL ${result.name}: ${result.problem}`;
  const got = result.got!;
  const errors = got.errors.length > 0 ? ` errors: ${got.errors.map((e) => (e.policy ? `${e.policy}: ` : '') + e.message).join('; ')}` : '';
  return (
    `FAIL ${result.name}: expected ${describeOutcome(result.expected.decision, result.expected.reasons)} got ` +
    `${describeOutcome(got.decision, got.reasons)}${errors}`
  );
}
