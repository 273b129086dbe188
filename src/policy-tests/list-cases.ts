/**
 * `writ policy test` cases that expect a list rather than a decision (docs/protocol.md §15), so a policy
 * author can pin "agent X never sees tool Y" or "only Bob reads the salaries":
 *   - `{name, tools_visible: {envelope, server, tools}, expect: {visible: [name…]}}` — the tools the
 *     envelope's actor could call, as POST /v1/tools/visible answers;
 *   - `{name, now?, search: {kind: "subject"|"resource"|"action", request}, expect: {results: […]}}` —
 *     every page of an AuthZEN search, as POST /access/v1/search/<kind> answers, in order.
 * Both are judged over the seed entities of the policy dir, exactly as the sidecar judges them.
 */
import { jcs } from '../util/canonical.js';
import { isWritError } from '../errors.js';
import { toPlain, type LosslessValue } from '../binding/index.js';
import { requestInputOf } from '../authzen/request.js';
import { candidatesOf, parseSearchRequest, searchJudgeOf, searchPageSync, type SearchKind } from '../authzen/search.js';
import { validateToolsVisibleRequest } from '../schemas/validate.js';
import type { EntityJson, EntitySource } from '../policy/entities.js';
import type { PolicyEngine } from '../policy/engine.js';

type Obj = { [k: string]: LosslessValue };
const CASE_KEYS = ['name', 'now', 'search', 'tools_visible', 'expect'];

/** A list case as read from the file: its members are checked where they are used. */
interface PlainListCase {
  tools_visible?: unknown;
  search?: { kind?: unknown; request?: Record<string, unknown> };
  expect?: { visible?: unknown; results?: unknown };
}

export function isListCase(testCase: Obj): boolean {
  return testCase.search !== undefined || testCase.tools_visible !== undefined;
}

/** Runs one list case: undefined when it passes, else why not. Throws Error for a malformed case. */
export function runListCase(engine: PolicyEngine, testCase: Obj, entities: EntitySource & { all(): EntityJson[] }): string | undefined {
  for (const key of Object.keys(testCase))
    if (!CASE_KEYS.includes(key)) throw new Error(`case: unknown member ${JSON.stringify(key)} (expected ${CASE_KEYS.join(', ')})`);
  const plain = toPlain(testCase) as PlainListCase;
  if (plain.search !== undefined && plain.tools_visible !== undefined) throw new Error('a case has either search or tools_visible, not both');
  let got: unknown;
  let want: unknown;
  if (plain.tools_visible !== undefined) {
    try {
      validateToolsVisibleRequest(plain.tools_visible);
    } catch (e) {
      throw new Error(`tools_visible${isWritError(e) ? `${e.path ?? ''}: ${e.message}` : ''}`, { cause: e });
    }
    const { envelope, server, tools } = plain.tools_visible;
    got = [...new Set(tools)].filter((tool) =>
      engine.mayBeCalled({ actor: envelope.actor, requester: envelope.requester, subject: envelope.subject, server, tool, entities }),
    );
    want = plain.expect?.visible;
    if (!Array.isArray(want)) throw new Error('expect: expected {visible: [tool…]}');
  } else {
    const kind = plain.search?.kind as SearchKind;
    if (kind !== 'subject' && kind !== 'resource' && kind !== 'action') throw new Error('search.kind: expected subject, resource or action');
    want = plain.expect?.results;
    if (!Array.isArray(want)) throw new Error('expect: expected {results: […]}');
    const results: unknown[] = [];
    let token = '';
    do {
      const body = { ...plain.search?.request, page: { limit: 1000, token } };
      let request;
      try {
        request = parseSearchRequest(JSON.stringify(body), kind);
      } catch (e) {
        throw new Error(`search.request${isWritError(e) ? `${e.path ?? ''}: ${e.code}: ${e.message}` : ''}`, { cause: e });
      }
      const page = searchPageSync(
        request,
        candidatesOf(request, entities.all(), engine.actionNames()),
        (e) => engine.evaluateRequest(requestInputOf(e, entities)),
        searchJudgeOf(request, engine, entities),
      );
      results.push(...page.results);
      token = page.next_token;
    } while (token !== '');
    got = results;
  }
  return jcs(got) === jcs(want) ? undefined : `expected ${JSON.stringify(want)} got ${JSON.stringify(got)}`;
}
