/**
 * PolicyEngine.evaluateRequest (the AuthZEN entry): the same answers on evaluator threads as
 * in-process, the same with and without narrowing, approval_required as for MCP decisions, and
 * request entities that never leak into the store.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PolicyEngine, type RequestInput } from '../../src/policy/engine.js';
import { EvaluatorPool } from '../../src/policy/evaluator-pool.js';
import { StaticEntitySource } from '../../src/policy/entities.js';
import { loadPolicyDir } from '../../src/policy/load.js';
import { authzenRequestOf, requestInputOf } from '../../src/authzen/request.js';
import { parseLossless } from '../../src/binding/index.js';
import { REPO } from '../helpers/server.js';
import { tempPolicyDir } from '../policy/helpers.js';

const EXAMPLE = join(REPO, 'examples', 'authzen-todo');

function exampleInputs(entities: StaticEntitySource): RequestInput[] {
  const text = readFileSync(join(EXAMPLE, 'tests', 'todo.json'), 'utf8');
  const cases = parseLossless(text) as Array<Record<string, any>>;
  return cases.map((c) => requestInputOf(authzenRequestOf(c.authzen, false).evaluations[0]!, entities));
}

test('evaluator threads answer evaluateRequest exactly as the in-process engine does', async () => {
  const bundle = loadPolicyDir(EXAMPLE);
  const entities = new StaticEntitySource(bundle.seedEntities);
  const engine = new PolicyEngine(bundle);
  const pool = new EvaluatorPool(1);
  pool.register(engine, bundle);
  try {
    const inputs = exampleInputs(entities);
    const answers = await Promise.all(inputs.map((i) => pool.evaluateRequest(engine, i)));
    const kinds = new Set<string>();
    inputs.forEach((input, i) => {
      assert.deepEqual(answers[i], engine.evaluateRequest(input));
      kinds.add(answers[i].decision);
    });
    assert.deepEqual([...kinds].sort(), ['allow', 'deny']);
  } finally {
    await pool.close();
  }
});

test('a thread that dies mid-flight loses no AuthZEN evaluation: redone in-process, same answers', async () => {
  const bundle = loadPolicyDir(EXAMPLE);
  const entities = new StaticEntitySource(bundle.seedEntities);
  const engine = new PolicyEngine(bundle);
  const pool = new EvaluatorPool(1);
  pool.register(engine, bundle);
  try {
    const inputs = exampleInputs(entities);
    const inFlight = inputs.map((i) => pool.evaluateRequest(engine, i));
    await (pool as unknown as { threads: Array<{ worker: { terminate(): Promise<number> } }> }).threads[0]!.worker.terminate();
    const answers = await Promise.all(inFlight);
    inputs.forEach((input, i) => {
      assert.deepEqual(answers[i], engine.evaluateRequest(input));
    });
    assert.equal(pool.size, 1, 'a replacement thread was started');
  } finally {
    await pool.close();
  }
});

test('narrowing changes nothing, and approval_required is derived as for MCP decisions', () => {
  const { dir, cleanup } = tempPolicyDir({
    'p.cedar': `
      @id("read") permit (principal, action == Action::"read", resource) when { principal.level >= resource.level };
      @id("big-read") @requires_approval("group::\\"owners\\"") forbid (principal, action == Action::"read", resource) when { context.rows > 100 };
      @id("audit-only") forbid (principal, action == Action::"read", resource) when { context has blocked && context.blocked };
      @id("other") permit (principal, action == Action::"write", resource) when { context.x == 1 };
    `,
    'entities.json': JSON.stringify([
      { uid: { type: 'user', id: 'u' }, attrs: { level: 3, name: 'U' }, parents: [] },
      { uid: { type: 'doc', id: 'd' }, attrs: { level: 2, title: 'D' }, parents: [] },
    ]),
  });
  try {
    const bundle = loadPolicyDir(dir);
    const entities = new StaticEntitySource(bundle.seedEntities);
    const narrow = new PolicyEngine(bundle);
    const whole = new PolicyEngine(bundle, { narrowRequests: false });
    const ask = (context: Record<string, unknown>, action = 'read', resource = { type: 'doc', id: 'd' }): RequestInput => ({
      principal: { type: 'user', id: 'u' },
      action,
      resource,
      context,
      requestEntities: [],
      entities,
    });
    const cases: Array<[RequestInput, string, string[]]> = [
      [ask({ rows: 5 }), 'allow', ['read']],
      [ask({ rows: 500 }), 'approval_required', ['big-read']],
      [ask({ rows: 500, blocked: true }), 'deny', ['big-read', 'audit-only']],
      [ask({}), 'deny', []], // context.rows missing: the forbid errors, writ denies
      [ask({ x: 1 }, 'write'), 'allow', ['other']],
      [ask({ rows: 1 }, 'read', { type: 'doc', id: 'missing' }), 'deny', []],
    ];
    for (const [input, decision, reasons] of cases) {
      const got = narrow.evaluateRequest(input);
      assert.equal(got.decision, decision, JSON.stringify(input.context));
      assert.deepEqual(got.reasons, reasons);
      assert.deepEqual(got, whole.evaluateRequest(input));
    }
    // Request entities (properties) are narrowed like stored ones: same answers either way.
    const withOwn = {
      ...ask({ rows: 5 }),
      requestEntities: [{ uid: { type: 'user', id: 'u' }, attrs: { level: 1, name: 'X', extra: { deep: 1 } }, parents: [] }],
    };
    assert.equal(narrow.evaluateRequest(withOwn).decision, 'deny');
    assert.deepEqual(narrow.evaluateRequest(withOwn), whole.evaluateRequest(withOwn));
    assert.deepEqual(narrow.evaluateRequest(ask({ rows: 500 })).obligations, [{ policy: 'big-read', approver_group: 'group::"owners"' }]);
    assert.ok(narrow.evaluateRequest(ask({})).errors.length > 0);
  } finally {
    cleanup();
  }
});

test('request entities are used for one evaluation only and never change the store', () => {
  const { dir, cleanup } = tempPolicyDir({
    'p.cedar': '@id("r") permit (principal, action == Action::"read", resource) when { principal.level >= 5 };',
    'entities.json': JSON.stringify([{ uid: { type: 'user', id: 'u' }, attrs: { level: 1 }, parents: [] }]),
  });
  try {
    const bundle = loadPolicyDir(dir);
    const entities = new StaticEntitySource(bundle.seedEntities);
    const engine = new PolicyEngine(bundle);
    const base: RequestInput = {
      principal: { type: 'user', id: 'v' },
      action: 'read',
      resource: { type: 'doc', id: 'd' },
      context: {},
      requestEntities: [],
      entities,
    };
    const withV = { ...base, requestEntities: [{ uid: { type: 'user', id: 'v' }, attrs: { level: 7 }, parents: [] }] };
    assert.equal(engine.evaluateRequest(withV).decision, 'allow');
    assert.equal(engine.evaluateRequest(base).decision, 'deny');
    assert.equal(entities.get('user::"v"'), undefined);
  } finally {
    cleanup();
  }
});
