// AuthZEN search pruned by Cedar's partial evaluation (src/policy/search-residual.ts,
// PolicyEngine.searchProgram, src/authzen/search.ts): a pruned search answers exactly as one-by-one
// evaluation does — the same results and next_tokens, page by page — over generated policies, entities
// and requests (errors, missing attributes, entity hierarchies, request properties on either member, a
// candidate equal to the known member, extension functions, approval forbids), with pruning shown to be taken.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { PolicyEngine } from '../../src/policy/engine.js';
import { loadPolicyDir } from '../../src/policy/load.js';
import { StaticEntitySource, type EntityJson } from '../../src/policy/entities.js';
import { candidatesOf, parseSearchRequest, searchJudgeOf, searchPageSync, type SearchKind } from '../../src/authzen/search.js';
import { requestInputOf } from '../../src/authzen/request.js';
import { tempPolicyDir } from './helpers.js';

function engineOf(policies: string): { engine: PolicyEngine; cleanup: () => void } {
  const d = tempPolicyDir({ 'p.cedar': policies });
  return { engine: new PolicyEngine(loadPolicyDir(d.dir)), cleanup: d.cleanup };
}

/** Every page of a search, as `{results, next_token}`, and how many candidates the residual answered. */
function walk(engine: PolicyEngine, source: StaticEntitySource, kind: SearchKind, body: object, limit: number, pruned: boolean) {
  const pages: unknown[] = [];
  let answered = 0;
  let token = '';
  do {
    const request = parseSearchRequest(JSON.stringify({ ...body, page: { limit, token } }), kind);
    const judge = pruned ? searchJudgeOf(request, engine, source) : undefined;
    const page = searchPageSync(
      request,
      candidatesOf(request, source.all(), engine.actionNames()),
      (e) => engine.evaluateRequest(requestInputOf(e, source)),
      judge,
    );
    pages.push({ results: page.results, next_token: page.next_token });
    answered += page.pruned;
    token = page.next_token;
  } while (token !== '' && pages.length < 100);
  return { pages, answered };
}

const ref = (type: string, id: string) => ({ __entity: { type, id } });

test('pruning: no candidate evaluated when nothing can be allowed; owner and group conditions answered by the residual', () => {
  const { engine, cleanup } = engineOf(`
    @id("own") permit (principal is user, action == Action::"edit", resource is doc) when { resource.owner == principal };
    @id("group") permit (principal is user, action == Action::"read", resource is doc) when { principal in resource.group };
    @id("nobody") forbid (principal, action == Action::"read", resource) when { resource.locked };
  `);
  const entities: EntityJson[] = [
    { uid: { type: 'group', id: 'g' }, attrs: {}, parents: [] },
    { uid: { type: 'doc', id: 'd1' }, attrs: { owner: ref('user', 'u2'), group: ref('group', 'g'), locked: false }, parents: [] },
    { uid: { type: 'doc', id: 'd2' }, attrs: { owner: ref('user', 'u1'), group: ref('group', 'g'), locked: true }, parents: [] },
  ];
  for (let i = 0; i < 6; i++) entities.push({ uid: { type: 'user', id: `u${i}` }, attrs: {}, parents: i % 2 === 0 ? [{ type: 'group', id: 'g' }] : [] });
  const source = new StaticEntitySource(entities);
  try {
    const editors = walk(engine, source, 'subject', { subject: { type: 'user' }, action: { name: 'edit' }, resource: { type: 'doc', id: 'd1' } }, 50, true);
    assert.deepEqual(editors.pages, [{ results: [{ type: 'user', id: 'u2' }], next_token: '' }]);
    assert.equal(editors.answered, 6, 'every candidate answered without the engine');
    const readers = walk(engine, source, 'subject', { subject: { type: 'user' }, action: { name: 'read' }, resource: { type: 'doc', id: 'd1' } }, 2, true);
    assert.deepEqual(
      readers,
      walk(engine, source, 'subject', { subject: { type: 'user' }, action: { name: 'read' }, resource: { type: 'doc', id: 'd1' } }, 2, false) && readers,
    );
    assert.deepEqual(
      readers.pages.flatMap((p: any) => p.results.map((r: any) => r.id)),
      ['u0', 'u2', 'u4'],
    );
    // A locked document: Cedar denies whatever the principal is; no candidate reaches the engine.
    const locked = walk(engine, source, 'subject', { subject: { type: 'user' }, action: { name: 'read' }, resource: { type: 'doc', id: 'd2' } }, 50, true);
    assert.deepEqual(locked.pages, [{ results: [], next_token: '' }]);
    assert.equal(locked.answered, 6);
    const request = parseSearchRequest(JSON.stringify({ subject: { type: 'user' }, action: { name: 'read' }, resource: { type: 'doc', id: 'd2' } }), 'subject');
    assert.equal(engine.searchProgram(requestInputOf(request.template, source), 'principal'), 'none allowed');
    // Every page of a search reuses one reduction while the entities stay as they are.
    const readersOf = parseSearchRequest(
      JSON.stringify({ subject: { type: 'user' }, action: { name: 'read' }, resource: { type: 'doc', id: 'd1' } }),
      'subject',
    );
    const first = engine.searchProgram(requestInputOf(readersOf.template, source), 'principal');
    assert.equal(typeof first, 'object');
    assert.equal(engine.searchProgram(requestInputOf(readersOf.template, source), 'principal'), first);
    const moved = new StaticEntitySource([...entities, { uid: { type: 'user', id: 'u9' }, attrs: {}, parents: [] }]);
    assert.notEqual(engine.searchProgram(requestInputOf(readersOf.template, moved), 'principal'), first);
    // Resource search: the docs u1 may edit.
    const mine = walk(engine, source, 'resource', { subject: { type: 'user', id: 'u1' }, action: { name: 'edit' }, resource: { type: 'doc' } }, 50, true);
    assert.deepEqual(mine.pages, [{ results: [{ type: 'doc', id: 'd2' }], next_token: '' }]);
    // Action search is never pruned.
    const request2 = parseSearchRequest(JSON.stringify({ subject: { type: 'user', id: 'u1' }, resource: { type: 'doc', id: 'd2' } }), 'action');
    assert.equal(searchJudgeOf(request2, engine, source), undefined);
  } finally {
    cleanup();
  }
});

test("pruning: the candidate that is the known member itself (one entity, both members' properties) goes to the engine", () => {
  const { engine, cleanup } = engineOf(
    `@id("same-dept") permit (principal is user, action == Action::"meet", resource is user) when { principal.dept == resource.dept };`,
  );
  const source = new StaticEntitySource([0, 1, 2].map((i) => ({ uid: { type: 'user', id: `u${i}` }, attrs: i === 2 ? { dept: 'a' } : {}, parents: [] })));
  try {
    // u1 as resource says dept "b", as subject "a": Cedar sees one u1 (the subject's properties first).
    const body = {
      subject: { type: 'user', properties: { dept: 'a' } },
      action: { name: 'meet' },
      resource: { type: 'user', id: 'u1', properties: { dept: 'b' } },
    };
    const pruned = walk(engine, source, 'subject', body, 50, true);
    assert.deepEqual(pruned, { ...walk(engine, source, 'subject', body, 50, false), answered: 2 });
    assert.deepEqual(pruned.pages, [{ results: [{ type: 'user', id: 'u1' }], next_token: '' }]);
  } finally {
    cleanup();
  }
  // Even when Cedar denies every other candidate: the known member's properties lock it as a resource,
  // its properties as the subject (first) unlock the one entity Cedar sees.
  const locked = engineOf(`
    @id("all") permit (principal, action == Action::"meet", resource);
    @id("locked") forbid (principal, action == Action::"meet", resource) when { resource.locked };
  `);
  try {
    const body = {
      subject: { type: 'user', properties: { locked: false } },
      action: { name: 'meet' },
      resource: { type: 'user', id: 'u1', properties: { locked: true } },
    };
    const request = parseSearchRequest(JSON.stringify(body), 'subject');
    assert.equal(locked.engine.searchProgram(requestInputOf(request.template, source), 'principal'), 'none allowed');
    const pruned = walk(locked.engine, source, 'subject', body, 50, true);
    assert.deepEqual(pruned, { ...walk(locked.engine, source, 'subject', body, 50, false), answered: 2 });
    assert.deepEqual(pruned.pages, [{ results: [{ type: 'user', id: 'u1' }], next_token: '' }]);
  } finally {
    locked.cleanup();
  }
});

// Generated worlds: users in nested groups with attributes some lack, docs naming owners, groups and
// reader sets, policies over them (some erroring, some with extension functions or approval forbids).
const conditionArb = fc.constantFrom(
  '',
  'when { resource.owner == principal }',
  'when { principal.dept == resource.dept }',
  'when { principal.role == "m" }',
  'when { resource.public }',
  'when { resource.readers.contains(principal) }',
  'when { principal in resource.group }',
  'when { principal has role && principal.role == "e" }',
  'unless { principal.level < 3 }',
  'when { principal.tags.containsAny(["x", "y"]) }',
  'when { principal.tags.containsAll(["x"]) }',
  'when { principal.dept like "a*" }',
  'when { resource.owner.dept == principal.dept }',
  'when { principal == resource }',
  'when { if principal.level > 2 then resource.public else true }',
  'when { principal.nickname == "z" }',
  'when { principal.level + 1 > 2 }',
  'when { ip("127.0.0.1").isLoopback() && principal.role == "m" }',
  'when { context.flag }',
  'when { principal.profile.team == "t1" }',
  'when { principal is user in group::"g0" }',
  'when { resource in doc::"d0" || resource.dept == "b" }',
  'when { principal in [group::"g1", user::"u3"] }',
  'when { resource.readers == [user::"u1"] }',
  'when { principal.level >= 2 && principal.level != 4 }',
);
const scopeArb = fc.constantFrom('principal', 'principal is user', 'principal in group::"g0"', 'principal == user::"u1"', 'principal is user in group::"g1"');
const policyArb = fc.record({
  effect: fc.constantFrom('permit', 'permit', 'forbid'),
  action: fc.constantFrom('read', 'edit', '*'),
  scope: scopeArb,
  approval: fc.boolean(),
  conditions: fc.array(conditionArb, { minLength: 1, maxLength: 2 }),
});
const userArb = fc.record({
  dept: fc.option(fc.constantFrom('a', 'ab', 'b'), { nil: undefined }),
  role: fc.option(fc.constantFrom('m', 'e'), { nil: undefined }),
  level: fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined }),
  tags: fc.subarray(['x', 'y', 'z']),
  team: fc.option(fc.constantFrom('t1', 't2'), { nil: undefined }),
  group: fc.constantFrom(undefined, 'g0', 'g1', 'g2'),
});
const docArb = fc.record({
  owner: fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined }),
  dept: fc.constantFrom('a', 'b'),
  public: fc.option(fc.boolean(), { nil: undefined }),
  readers: fc.subarray([0, 1, 2, 3, 4, 5]),
  group: fc.constantFrom('g0', 'g1', 'g2'),
  parentDoc: fc.boolean(),
});
const searchArb = fc.record({
  kind: fc.constantFrom<SearchKind>('subject', 'resource'),
  action: fc.constantFrom('read', 'edit'),
  known: fc.integer({ min: 0, max: 5 }),
  knownIsUser: fc.boolean(),
  properties: fc.constantFrom(undefined, { dept: 'a' }, { role: 'm', level: 4 }),
  knownProperties: fc.constantFrom(undefined, { dept: 'b' }, { public: true, role: 'e' }),
  flag: fc.boolean(),
  limit: fc.integer({ min: 1, max: 4 }),
});

test('property: a pruned search gives exactly the pages of one-by-one evaluation (results and next_tokens)', () => {
  let answered = 0;
  let toEngine = 0;
  let nonEmpty = 0;
  fc.assert(
    fc.property(
      fc.array(policyArb, { minLength: 1, maxLength: 5 }),
      fc.array(userArb, { minLength: 6, maxLength: 6 }),
      fc.array(docArb, { minLength: 4, maxLength: 4 }),
      fc.array(searchArb, { minLength: 2, maxLength: 4 }),
      (policies, users, docs, searches) => {
        const text = policies
          .map((p, i) => {
            const action = p.action === '*' ? 'action' : `action == Action::"${p.action}"`;
            const ann = p.effect === 'forbid' && p.approval ? '@requires_approval("group::\\"g0\\"") ' : '';
            return `@id("g${i}") ${ann}${p.effect} (${p.scope}, ${action}, resource) ${p.conditions.join(' ')};`;
          })
          .join('\n');
        const entities: EntityJson[] = [
          { uid: { type: 'group', id: 'g0' }, attrs: {}, parents: [] },
          { uid: { type: 'group', id: 'g1' }, attrs: {}, parents: [{ type: 'group', id: 'g0' }] },
        ];
        users.forEach((u, i) => {
          const attrs: Record<string, unknown> = { tags: u.tags };
          if (u.dept !== undefined) attrs.dept = u.dept;
          if (u.role !== undefined) attrs.role = u.role;
          if (u.level !== undefined) attrs.level = u.level;
          if (u.team !== undefined) attrs.profile = { team: u.team };
          entities.push({ uid: { type: 'user', id: `u${i}` }, attrs, parents: u.group === undefined ? [] : [{ type: 'group', id: u.group }] });
        });
        docs.forEach((d, i) => {
          const attrs: Record<string, unknown> = { dept: d.dept, readers: d.readers.map((r) => ref('user', `u${r}`)), group: ref('group', d.group) };
          if (d.owner !== undefined) attrs.owner = ref('user', `u${d.owner}`);
          if (d.public !== undefined) attrs.public = d.public;
          entities.push({ uid: { type: 'doc', id: `d${i}` }, attrs, parents: d.parentDoc && i > 0 ? [{ type: 'doc', id: 'd0' }] : [] });
        });
        const source = new StaticEntitySource(entities);
        const { engine, cleanup } = engineOf(text);
        try {
          for (const s of searches) {
            const knownProps = s.knownProperties === undefined ? {} : { properties: s.knownProperties };
            const known = s.knownIsUser ? { type: 'user', id: `u${s.known}`, ...knownProps } : { type: 'doc', id: `d${s.known % 4}`, ...knownProps };
            const withProps = s.properties === undefined ? {} : { properties: s.properties };
            const body =
              s.kind === 'subject'
                ? { subject: { type: 'user', ...withProps }, action: { name: s.action }, resource: known, context: { flag: s.flag } }
                : {
                    subject: { type: 'user', id: `u${s.known}`, ...knownProps },
                    action: { name: s.action },
                    resource: { type: s.knownIsUser ? 'user' : 'doc', ...withProps },
                    context: { flag: s.flag },
                  };
            const naive = walk(engine, source, s.kind, body, s.limit, false);
            const pruned = walk(engine, source, s.kind, body, s.limit, true);
            assert.deepEqual(pruned.pages, naive.pages, `${JSON.stringify(body)} limit ${s.limit} under\n${text}`);
            const candidates = s.kind === 'subject' || s.knownIsUser ? 6 : 4;
            answered += pruned.answered;
            toEngine += candidates - pruned.answered;
            if ((naive.pages as any[]).some((p) => p.results.length > 0)) nonEmpty++;
          }
        } finally {
          cleanup();
        }
      },
    ),
    { seed: 5353, numRuns: 150 },
  );
  // Not vacuous: candidates answered by the residual, others by the engine, and searches with results.
  assert.ok(answered > 500 && toEngine > 100 && nonEmpty > 50, `answered ${answered}, to the engine ${toEngine}, searches with results ${nonEmpty}`);
});
