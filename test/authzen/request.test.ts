import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAuthzenRequest, requestEntityOf, requestInputOf, stopsAfter } from '../../src/authzen/request.js';
import { StaticEntitySource } from '../../src/policy/entities.js';
import fc from 'fast-check';
import { STATUS_BY_CODE } from '../../src/errors.js';

const USER = { type: 'user', id: 'alice' };
const TODO = { type: 'todo', id: 't1' };
const one = (body: unknown) => parseAuthzenRequest(JSON.stringify(body), false);
const many = (body: unknown) => parseAuthzenRequest(JSON.stringify(body), true);
const refusal = (fn: () => unknown): { code: string; path?: string } => {
  try {
    fn();
  } catch (e) {
    const { code, path } = e as { code: string; path?: string };
    return path === undefined ? { code } : { code, path };
  }
  assert.fail('expected a refusal');
};

test('a single evaluation maps its members; context defaults to {}', () => {
  const r = one({ subject: USER, action: { name: 'can_read_todos' }, resource: TODO });
  assert.equal(r.single, true);
  assert.equal(r.evaluations.length, 1);
  const e = r.evaluations[0]!;
  assert.deepEqual(e.subject, USER);
  assert.deepEqual(e.action, { name: 'can_read_todos' });
  assert.deepEqual(e.context, {});
  const input = requestInputOf(e, new StaticEntitySource([]));
  assert.deepEqual(input.principal, USER);
  assert.equal(input.action, 'can_read_todos');
  assert.deepEqual(input.resource, TODO);
  assert.deepEqual(input.requestEntities, []);
});

test('batch: top-level members are defaults, an item member replaces the default whole', () => {
  const r = many({
    subject: USER,
    action: { name: 'can_update_todo', properties: { method: 'PUT' } },
    resource: {},
    context: { ip: '10.0.0.1' },
    evaluations: [{ resource: TODO }, { resource: { type: 'todo', id: 't2' }, action: { name: 'can_delete_todo' }, context: { ip: '10.0.0.2' } }],
  });
  assert.equal(r.single, false);
  assert.equal(r.semantic, 'execute_all');
  assert.deepEqual(
    r.evaluations.map((e) => [e.action.name, e.resource.id, e.context]),
    [
      ['can_update_todo', 't1', { ip: '10.0.0.1' }],
      ['can_delete_todo', 't2', { ip: '10.0.0.2' }],
    ],
  );
  // The replaced action has no properties of the default's.
  assert.equal(r.evaluations[1]!.action.properties, undefined);
  assert.deepEqual(requestInputOf(r.evaluations[0]!, new StaticEntitySource([])).context, { ip: '10.0.0.1', action: { method: 'PUT' } });
});

test('batch without evaluations is answered like a single evaluation; semantics parse', () => {
  assert.equal(many({ subject: USER, action: { name: 'a' }, resource: TODO }).single, true);
  // AuthZEN 1.0 §7.1: an empty `evaluations` array too.
  assert.equal(many({ subject: USER, action: { name: 'a' }, resource: TODO, evaluations: [] }).single, true);
  assert.deepEqual(
    refusal(() => many({ evaluations: [] })),
    { code: 'INVALID_REQUEST', path: '/subject' },
  );
  for (const s of ['execute_all', 'deny_on_first_deny', 'permit_on_first_permit'] as const) {
    assert.equal(many({ subject: USER, action: { name: 'a' }, resource: TODO, evaluations: [{}], options: { evaluations_semantic: s } }).semantic, s);
  }
  assert.deepEqual(
    refusal(() => many({ evaluations: [{}], options: { evaluations_semantic: 'first_one' } })),
    {
      code: 'INVALID_REQUEST',
      path: '/options/evaluations_semantic',
    },
  );
  assert.equal(stopsAfter('execute_all', false), false);
  assert.equal(stopsAfter('deny_on_first_deny', false), true);
  assert.equal(stopsAfter('deny_on_first_deny', true), false);
  assert.equal(stopsAfter('permit_on_first_permit', true), true);
});

test('malformed requests: INVALID_JSON, INVALID_REQUEST with a pointer into the body or the item', () => {
  assert.equal(refusal(() => parseAuthzenRequest('{"subject":', false)).code, 'INVALID_JSON');
  assert.equal(refusal(() => parseAuthzenRequest('', false)).code, 'INVALID_JSON');
  assert.deepEqual(
    refusal(() => parseAuthzenRequest('[]', false)),
    { code: 'INVALID_REQUEST', path: '' },
  );
  assert.deepEqual(
    refusal(() => one({ action: { name: 'a' }, resource: TODO })),
    { code: 'INVALID_REQUEST', path: '/subject' },
  );
  assert.deepEqual(
    refusal(() => one({ subject: { type: 'no spaces', id: 'x' }, action: { name: 'a' }, resource: TODO })),
    {
      code: 'INVALID_REQUEST',
      path: '/subject/type',
    },
  );
  assert.deepEqual(
    refusal(() => one({ subject: USER, action: { name: '' }, resource: TODO })),
    { code: 'INVALID_REQUEST', path: '/action/name' },
  );
  // Any action name maps to Action::"<name>", an MCP tool's "<server>/<tool>" included (§10) — but the
  // context cannot carry what writ derives from real approvals (§2: never taken from a request).
  assert.equal(one({ subject: USER, action: { name: 'idp/disable_sign_in' }, resource: TODO }).evaluations[0]!.action.name, 'idp/disable_sign_in');
  assert.deepEqual(
    refusal(() => one({ subject: USER, action: { name: 'idp/disable_sign_in' }, resource: TODO, context: { approver: { type: 'User', id: 'hr-5519' } } })),
    {
      code: 'INVALID_REQUEST',
      path: '/context/approver',
    },
  );
  assert.deepEqual(
    refusal(() => one({ subject: USER, action: { name: 'a' }, resource: TODO, context: { approvals: [] } })),
    { code: 'INVALID_REQUEST', path: '/context/approvals' },
  );
  assert.deepEqual(
    refusal(() => many({ subject: USER, action: { name: 'a' }, resource: TODO, evaluations: [{}, { context: { approver: 'x' } }] })),
    {
      code: 'INVALID_REQUEST',
      path: '/evaluations/1/context/approver',
    },
  );
  assert.deepEqual(
    refusal(() => one({ subject: USER, action: { name: 'a' }, resource: TODO, context: [] })),
    { code: 'INVALID_REQUEST', path: '/context' },
  );
  // In a batch: the item's own member, a missing member, or the default the item took.
  const base = { subject: USER, action: { name: 'a' }, resource: {} };
  assert.deepEqual(
    refusal(() => many({ ...base, evaluations: [{ resource: TODO }, { resource: { type: 'todo' } }] })),
    {
      code: 'INVALID_REQUEST',
      path: '/evaluations/1/resource/id',
    },
  );
  assert.deepEqual(
    refusal(() => many({ ...base, evaluations: [{ resource: TODO }, {}] })),
    { code: 'INVALID_REQUEST', path: '/resource/type' },
  );
  assert.deepEqual(
    refusal(() => many({ action: { name: 'a' }, evaluations: [{ subject: USER, resource: TODO }, { resource: TODO }] })),
    {
      code: 'INVALID_REQUEST',
      path: '/evaluations/1/subject',
    },
  );
  assert.deepEqual(
    refusal(() => many({ ...base, evaluations: [{ resource: TODO, subject: 'alice' }] })),
    { code: 'INVALID_REQUEST', path: '/evaluations/0/subject' },
  );
});

test('members writ does not know are ignored, anywhere (AuthZEN 1.0 forward compatibility); known ones keep their types', () => {
  const plain = one({ subject: USER, action: { name: 'a' }, resource: TODO });
  const extra = one({
    subject: { ...USER, nickname: 'al' },
    action: { name: 'a', verb: 'GET' },
    resource: { ...TODO, etag: 'x' },
    foo: 'bar',
    futureField: { nested: true },
    evaluations: [{}],
    options: { evaluations_semantic: 'nonsense' },
  });
  assert.deepEqual(extra, plain, 'nothing of the unknown members is evaluated or recorded');
  const batch = many({ subject: USER, action: { name: 'a' }, resource: {}, evaluations: [{ resource: TODO, extra: true }], options: { page: 2 }, foo: 1 });
  assert.deepEqual(
    batch.evaluations.map((e) => e.resource),
    [TODO],
  );
  assert.deepEqual(
    refusal(() => one({ subject: 'alice', action: { name: 'a' }, resource: TODO, foo: 1 })),
    { code: 'INVALID_REQUEST', path: '/subject' },
  );
  assert.deepEqual(
    refusal(() => one({ subject: USER, action: { name: 123 }, resource: TODO })),
    { code: 'INVALID_REQUEST', path: '/action/name' },
  );
});

test('context and properties go through writ-bind/1 admission, with pointers into the body', () => {
  const text = (ctx: string, batch = false) =>
    batch
      ? `{"subject":{"type":"user","id":"a"},"action":{"name":"x"},"resource":{"type":"todo","id":"t"},"evaluations":[{},{"context":${ctx}}]}`
      : `{"subject":{"type":"user","id":"a"},"action":{"name":"x"},"resource":{"type":"todo","id":"t"},"context":${ctx}}`;
  assert.deepEqual(
    refusal(() => parseAuthzenRequest(text('{"n":1.0}'), false)),
    { code: 'BINDING_LOSSY_NUMBER', path: '/context/n' },
  );
  assert.deepEqual(
    refusal(() => parseAuthzenRequest(text('{"n":[1,2,9007199254740993]}', true), true)),
    {
      code: 'BINDING_UNSAFE_INTEGER',
      path: '/evaluations/1/context/n/2',
    },
  );
  assert.deepEqual(
    refusal(() => parseAuthzenRequest(text('{"n":0.30000000000000004}'), false)),
    { code: 'BINDING_UNREPRESENTABLE', path: '/context/n' },
  );
  assert.deepEqual(
    refusal(() => parseAuthzenRequest(text('{"a":1,"a":1}'), false)),
    { code: 'BINDING_DUPLICATE_KEY', path: '/context/a' },
  );
  assert.equal(refusal(() => parseAuthzenRequest(text('{"s":"\\ud800"}'), false)).code, 'BINDING_LONE_SURROGATE');
  assert.deepEqual(
    refusal(() => parseAuthzenRequest(text('{"owner":{"__entity":{"type":"user","id":"root"}}}'), false)),
    {
      code: 'BINDING_UNREPRESENTABLE',
      path: '/context/owner/__entity',
    },
  );
  assert.equal(refusal(() => parseAuthzenRequest(text(`{"d":${'['.repeat(70)}${']'.repeat(70)}}`), false)).code, 'BINDING_TOO_DEEP');
  // Past the parser's stop (512 levels) the code follows the place: a context is judged by §3, a uid is not.
  assert.equal(refusal(() => parseAuthzenRequest(text(`{"d":${'['.repeat(600)}${']'.repeat(600)}}`), false)).code, 'BINDING_TOO_DEEP');
  const deepId = `{"subject":{"type":"user","id":${'['.repeat(600)}${']'.repeat(600)}},"action":{"name":"x"},"resource":{"type":"todo","id":"t"}}`;
  assert.equal(refusal(() => parseAuthzenRequest(deepId, false)).code, 'INVALID_REQUEST');
  const deepItem = `{"evaluations":[{},{"resource":{"type":"todo","id":"t","properties":{"p":${'['.repeat(600)}${']'.repeat(600)}}}}]}`;
  assert.equal(refusal(() => parseAuthzenRequest(deepItem, true)).code, 'BINDING_TOO_DEEP');
  const props = '{"subject":{"type":"user","id":"a","properties":{"age":2.50e1}},"action":{"name":"x"},"resource":{"type":"todo","id":"t"}}';
  assert.deepEqual(
    refusal(() => parseAuthzenRequest(props, false)),
    { code: 'BINDING_LOSSY_NUMBER', path: '/subject/properties/age' },
  );
  // Admitted: integers stay Long, other numbers become decimals, nulls are dropped from the Cedar view.
  const r = parseAuthzenRequest(text('{"n":2,"price":1.5,"gone":null}'), false);
  assert.deepEqual(r.evaluations[0]!.context, { n: 2, price: 1.5, gone: null });
  assert.deepEqual(requestInputOf(r.evaluations[0]!, new StaticEntitySource([])).context, { n: 2, price: { __extn: { fn: 'decimal', arg: '1.5' } } });
});

test('action.properties and context.action together are refused', () => {
  assert.deepEqual(
    refusal(() => one({ subject: USER, action: { name: 'a', properties: { m: 1 } }, resource: TODO, context: { action: 'x' } })),
    {
      code: 'INVALID_REQUEST',
      path: '/context/action',
    },
  );
});

test('properties sit under the stored attributes: the stored attribute wins; unknown entities get properties alone', () => {
  const store = new StaticEntitySource([{ uid: USER, attrs: { roles: ['viewer'], email: 'alice@example.com' }, parents: [{ type: 'group', id: 'staff' }] }]);
  const [e] = one({
    subject: { ...USER, properties: { roles: ['admin'], team: 'red' } },
    action: { name: 'a' },
    resource: { ...TODO, properties: { ownerID: 'bob' } },
  }).evaluations;
  assert.deepEqual(requestEntityOf(e!.subject, store), {
    uid: USER,
    attrs: { roles: ['viewer'], team: 'red', email: 'alice@example.com' },
    parents: [{ type: 'group', id: 'staff' }],
  });
  assert.deepEqual(requestEntityOf(e!.resource, store), { uid: TODO, attrs: { ownerID: 'bob' }, parents: [] });
  assert.equal(requestEntityOf({ ...USER }, store), undefined);
  // The same entity as subject and resource: one entity, stored attributes still win.
  const [same] = one({
    subject: { ...USER, properties: { roles: ['admin'], a: 1 } },
    action: { name: 'a' },
    resource: { ...USER, properties: { a: 1, b: 3 } },
  }).evaluations;
  const input = requestInputOf(same!, store);
  assert.equal(input.requestEntities.length, 1);
  assert.deepEqual(input.requestEntities[0]!.attrs, { roles: ['viewer'], email: 'alice@example.com', a: 1, b: 3 });
});

test('any body: an admitted request or a 400 WritError with a JSON pointer, never anything else (fast-check, seeded)', () => {
  const entity = fc.record({ type: fc.constantFrom('user', 'todo', 'bad type', ''), id: fc.string() }, { requiredKeys: [] });
  const member = fc.oneof(entity, fc.jsonValue());
  const body = fc.record(
    {
      subject: member,
      action: fc.oneof(fc.record({ name: fc.string() }), fc.jsonValue()),
      resource: member,
      context: fc.jsonValue(),
      evaluations: fc.array(fc.dictionary(fc.constantFrom('subject', 'action', 'resource', 'context', 'x'), member), { maxLength: 3 }),
      options: fc.jsonValue(),
    },
    { requiredKeys: [] },
  );
  fc.assert(
    fc.property(body, fc.boolean(), (b, batch) => {
      try {
        const r = parseAuthzenRequest(JSON.stringify(b), batch);
        for (const e of r.evaluations) {
          assert.equal(typeof e.subject.id, 'string');
          assert.equal(typeof e.action.name, 'string');
          assert.ok(!Object.hasOwn(e.context, 'approver') && !Object.hasOwn(e.context, 'approvals'));
        }
      } catch (e) {
        const err = e as { name?: string; code?: keyof typeof STATUS_BY_CODE; path?: string };
        assert.equal(err.name, 'WritError', String(e));
        assert.equal(STATUS_BY_CODE[err.code!], 400, err.code);
        assert.equal(typeof err.path, 'string', `${err.code} without a path`);
        assert.ok(err.path === '' || err.path!.startsWith('/'), err.path);
      }
    }),
    { seed: 15, numRuns: 500 },
  );
});

test('the same entity as subject and resource: properties may agree or add members, never give one member two values', () => {
  const same = { type: 'user', id: 'alice' };
  const merged = one({ subject: { ...same, properties: { a: 1, b: 'x' } }, action: { name: 'x' }, resource: { ...same, properties: { b: 'x', c: true } } });
  const input = requestInputOf(merged.evaluations[0]!, new StaticEntitySource([]));
  assert.deepEqual(input.requestEntities, [{ uid: same, attrs: { a: 1, b: 'x', c: true }, parents: [] }]);
  assert.deepEqual(
    refusal(() => one({ subject: { ...same, properties: { a: 1 } }, action: { name: 'x' }, resource: { ...same, properties: { a: 2 } } })),
    { code: 'INVALID_REQUEST', path: '/resource/properties/a' },
  );
  // In a batch, the pointer is where the resource came from (the item's own, or the default).
  assert.deepEqual(
    refusal(() =>
      many({
        subject: { ...same, properties: { 'a/b': 1 } },
        action: { name: 'x' },
        evaluations: [{ resource: TODO }, { resource: { ...same, properties: { 'a/b': [1] } } }],
      }),
    ),
    { code: 'INVALID_REQUEST', path: '/evaluations/1/resource/properties/a~1b' },
  );
});
