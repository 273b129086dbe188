import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildOpenApi } from '../../src/schemas/openapi.js';
import { loadSchemas } from '../../src/schemas/load.js';
import { STATUS_BY_CODE } from '../../src/errors.js';

type Obj = Record<string, any>;
const doc: Obj = buildOpenApi();

const ROUTES: [method: string, path: string, roles: string[] | null][] = [
  ['post', '/v1/decisions', ['pep']],
  ['get', '/v1/executions/{id}', ['pep', 'auditor', 'approver']],
  ['post', '/v1/executions/{id}/outcome', ['pep']],
  ['post', '/v1/executions/{id}/reconcile', ['reconciler']],
  // §17
  ['get', '/v1/executions', ['reconciler', 'auditor']],
  ['post', '/v1/executions/{id}/confirm', ['reconciler']],
  ['post', '/v1/executions/{id}/events', ['pep']],
  ['get', '/v1/approvals/pending', ['approver']],
  ['post', '/v1/approvals', ['approver']],
  ['post', '/v1/approvals/{id}/revoke', ['approver']],
  ['put', '/v1/entities/{type}/{id}', ['admin']],
  ['get', '/v1/entities/{type}/{id}', ['admin', 'auditor']],
  ['get', '/v1/ledger/records', ['auditor']],
  ['get', '/v1/ledger/records/{seq}', ['auditor']],
  ['get', '/v1/ledger/checkpoint', ['auditor']],
  ['get', '/v1/ledger/keys', ['auditor']],
  ['get', '/v1/ledger/proofs/inclusion', ['auditor']],
  ['get', '/v1/ledger/proofs/consistency', ['auditor']],
  ['get', '/v1/ledger/export', ['auditor']],
  ['get', '/ledger/checkpoint', null],
  ['get', '/ledger/tile/{tile}', ['auditor']],
  ['get', '/healthz', null],
  ['get', '/readyz', null],
  ['get', '/metrics', null],
  ['get', '/openapi.json', null],
  ['post', '/v1/tools/visible', ['pep']],
  ['post', '/access/v1/evaluation', ['evaluator', 'pep']],
  ['post', '/access/v1/evaluations', ['evaluator', 'pep']],
  ['post', '/access/v1/search/subject', ['evaluator', 'pep']],
  ['post', '/access/v1/search/resource', ['evaluator', 'pep']],
  ['post', '/access/v1/search/action', ['evaluator', 'pep']],
  ['get', '/.well-known/authzen-configuration', null],
];

test('openapi: a 3.1 document with bearer auth', () => {
  assert.equal(doc.openapi, '3.1.0');
  assert.equal(typeof doc.info.title, 'string');
  assert.equal(typeof doc.info.version, 'string');
  assert.deepEqual(doc.components.securitySchemes.bearerAuth, { ...doc.components.securitySchemes.bearerAuth, type: 'http', scheme: 'bearer' });
});

test('openapi: every route of the contract, with its roles, and nothing else', () => {
  const listed = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths as Obj)) {
    for (const method of ['get', 'put', 'post', 'delete', 'patch']) if (item[method]) listed.add(`${method} ${path}`);
  }
  assert.deepEqual([...listed].sort(), ROUTES.map(([m, p]) => `${m} ${p}`).sort());
  for (const [method, path, roles] of ROUTES) {
    const op = doc.paths[path][method];
    if (roles === null) {
      assert.deepEqual(op.security, [], `${method} ${path}`);
      assert.equal(op['x-writ-roles'], undefined);
    } else {
      assert.deepEqual(op.security, [{ bearerAuth: [] }], `${method} ${path}`);
      assert.deepEqual(op['x-writ-roles'], roles, `${method} ${path}`);
      assert.ok(op.responses['401'], `${method} ${path} 401`);
      assert.ok(op.responses['403'], `${method} ${path} 403`);
      for (const role of roles) assert.match(op.description, new RegExp(`\\b${role}\\b`));
    }
    assert.equal(typeof op.operationId, 'string');
    const ok = Object.keys(op.responses).filter((s) => s.startsWith('2'));
    assert.equal(ok.length, 1, `${method} ${path} has one success response`);
  }
});

test('openapi: operation ids are unique', () => {
  const ids: string[] = [];
  for (const item of Object.values(doc.paths as Obj)) for (const op of Object.values(item as Obj)) if (op.operationId) ids.push(op.operationId);
  assert.equal(new Set(ids).size, ids.length);
});

test('openapi: request and response bodies come from the schema files', () => {
  const body = (m: string, p: string) => doc.paths[p][m].requestBody.content['application/json'].schema.$ref;
  assert.equal(body('post', '/v1/decisions'), '#/components/schemas/DecisionRequest');
  assert.equal(body('post', '/v1/approvals'), '#/components/schemas/ApprovalRequest');
  assert.equal(body('post', '/v1/executions/{id}/outcome'), '#/components/schemas/OutcomeRequest');
  assert.equal(body('post', '/v1/executions/{id}/reconcile'), '#/components/schemas/ReconcileRequest');
  assert.equal(body('put', '/v1/entities/{type}/{id}'), '#/components/schemas/EntityUpsert');
  const ok = (m: string, p: string, s: string) => doc.paths[p][m].responses[s].content['application/json'].schema.$ref;
  assert.equal(ok('post', '/v1/decisions', '200'), '#/components/schemas/DecisionResponse');
  assert.equal(ok('post', '/v1/approvals', '201'), '#/components/schemas/ApprovalResponse');
  assert.equal(ok('get', '/v1/executions/{id}', '200'), '#/components/schemas/Execution');
  assert.equal(ok('get', '/v1/ledger/records', '200'), '#/components/schemas/RecordsPage');
  assert.equal(ok('get', '/v1/ledger/records/{seq}', '200'), '#/components/schemas/LedgerRecord');
  assert.equal(ok('get', '/v1/ledger/checkpoint', '200'), '#/components/schemas/Checkpoint');
  assert.equal(ok('get', '/v1/ledger/keys', '200'), '#/components/schemas/Keys');
  assert.equal(ok('get', '/v1/ledger/proofs/inclusion', '200'), '#/components/schemas/Proof');
  // Every schema file is a component, with the same content apart from $id/$schema and rewritten $refs.
  for (const schema of loadSchemas().values()) {
    const component = doc.components.schemas[schema.title as string];
    assert.ok(component, String(schema.title));
    assert.equal(component.description, schema.description);
    assert.equal(component.$id, undefined);
  }
  const envelope = doc.components.schemas.Envelope;
  assert.deepEqual(envelope.required, ['task_id', 'purpose', 'requester', 'actor', 'subject']);
  assert.equal(envelope.additionalProperties, false);
});

test('openapi: every $ref resolves inside the document', () => {
  const resolve = (pointer: string): unknown => {
    assert.ok(pointer.startsWith('#/'), pointer);
    let node: any = doc;
    for (const raw of pointer.slice(2).split('/')) {
      const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
      assert.ok(node && typeof node === 'object' && token in node, `unresolved ${pointer}`);
      node = node[token];
    }
    return node;
  };
  let refs = 0;
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach(walk);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref') {
        refs++;
        resolve(v as string);
      } else walk(v);
    }
  };
  walk(doc);
  assert.ok(refs > 50, `only ${refs} refs`);
});

test('openapi: error responses use the Error schema and name the contract codes', () => {
  const decide = doc.paths['/v1/decisions'].post.responses;
  for (const status of ['400', '401', '403', '404', '409', '413', '415', '503']) {
    assert.equal(decide[status].content['application/json'].schema.$ref, '#/components/schemas/Error', status);
  }
  for (const code of ['ENVELOPE_INVALID', 'INVALID_REQUEST', 'INVALID_JSON', 'BINDING_DUPLICATE_KEY', 'BINDING_TOO_DEEP'])
    assert.match(decide['400'].description, new RegExp(code));
  assert.match(decide['403'].description, /ACTOR_MISMATCH/);
  for (const code of ['EXECUTION_CONFLICT', 'EXECUTION_IN_FLIGHT', 'EXECUTION_TERMINAL', 'EXECUTION_SUPERSEDED'])
    assert.match(decide['409'].description, new RegExp(code));
  assert.match(decide['413'].description, /PAYLOAD_TOO_LARGE/);
  assert.match(doc.paths['/v1/approvals'].post.responses['409'].description, /APPROVAL_STALE/);
  assert.match(doc.paths['/v1/executions/{id}/outcome'].post.responses['409'].description, /EXECUTION_NOT_INVOKING/);
  // Every listed status matches the code's status in errors.ts.
  for (const item of Object.values(doc.paths as Obj)) {
    for (const op of Object.values(item as Obj)) {
      if (!op.responses) continue;
      for (const [status, r] of Object.entries(op.responses as Obj)) {
        for (const code of (r.description as string).match(/\b[A-Z][A-Z_]{3,}\b/g) ?? []) {
          if (code in STATUS_BY_CODE) assert.equal(String(STATUS_BY_CODE[code as keyof typeof STATUS_BY_CODE]), status, code);
        }
      }
    }
  }
});

test('openapi: every POST and PUT reads a body: its request body, 413 and 415 (docs/protocol.md §8)', () => {
  for (const [path, item] of Object.entries(doc.paths as Obj)) {
    for (const method of ['post', 'put']) {
      const op = item[method];
      if (!op) continue;
      assert.ok(op.requestBody, `${method} ${path} request body`);
      assert.match(op.responses['413']?.description ?? '', /PAYLOAD_TOO_LARGE/, `${method} ${path} 413`);
      assert.match(op.responses['415']?.description ?? '', /UNSUPPORTED_MEDIA_TYPE/, `${method} ${path} 415`);
    }
  }
  assert.equal(doc.paths['/v1/approvals/{id}/revoke'].post.requestBody.required, false);
});

test('openapi: auditor and reconciler parameters', () => {
  const params = (m: string, p: string) => (doc.paths[p][m].parameters as Obj[]).map((x) => `${x.in}:${x.name}:${x.required}`);
  assert.ok(params('post', '/v1/executions/{id}/reconcile').includes('query:actor:true'));
  assert.ok(params('get', '/v1/executions/{id}').includes('query:actor:false'));
  assert.ok(params('get', '/v1/ledger/proofs/inclusion').includes('query:seq:true'));
  assert.ok(params('get', '/v1/ledger/proofs/inclusion').includes('query:size:true'));
  assert.ok(params('get', '/v1/ledger/proofs/consistency').includes('query:from:true'));
  assert.ok(params('get', '/v1/ledger/proofs/consistency').includes('query:to:true'));
  const list = params('get', '/v1/ledger/records');
  for (const q of ['from', 'limit', 'kind', 'actor', 'execution_id']) assert.ok(list.includes(`query:${q}:false`), q);
  const limit = (doc.paths['/v1/ledger/records'].get.parameters as Obj[]).find((x) => x.name === 'limit')!;
  assert.equal(limit.schema.maximum, 1000);
});

test('openapi: each call returns a fresh, JSON-serialisable document', () => {
  const a: Obj = buildOpenApi();
  a.paths['/v1/decisions'].post.summary = 'mutated';
  const b: Obj = buildOpenApi();
  assert.notEqual(b.paths['/v1/decisions'].post.summary, 'mutated');
  assert.deepEqual(JSON.parse(JSON.stringify(b)), b);
});
