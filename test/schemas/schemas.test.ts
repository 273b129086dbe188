import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { schemaIssue } from '../../src/schemas/validate.js';
import { LEDGER_RECORD_KINDS, SCHEMA_FILES, SCHEMA_ID_BASE, loadSchemas } from '../../src/schemas/load.js';
import { CEDAR_TYPE_NAME } from '../../src/util/uid.js';

const schemaDir = new URL('../../../schemas/', import.meta.url);
const golden = JSON.parse(readFileSync(new URL('../../../vectors/golden/ledger.json', import.meta.url), 'utf8'));
const goldenRecords: Record<string, unknown>[] = golden.export_jsonl
  .trim()
  .split('\n')
  .map((l: string) => JSON.parse(l));

test('every file in schemas/ is loaded, draft 2020-12, with its $id and a title', () => {
  const onDisk = readdirSync(fileURLToPath(schemaDir))
    .filter((f) => f.endsWith('.json'))
    .sort();
  assert.deepEqual([...SCHEMA_FILES].sort(), onDisk);
  for (const [file, schema] of loadSchemas()) {
    assert.equal(schema.$schema, 'https://json-schema.org/draft/2020-12/schema', file);
    assert.equal(schema.$id, SCHEMA_ID_BASE + file);
    assert.equal(typeof schema.title, 'string', file);
    assert.equal(typeof schema.description, 'string', file);
  }
});

test('the Cedar type name pattern in defs.json is the one of src/util/uid.ts', () => {
  const defs = loadSchemas().get('defs.json')! as { $defs: { cedarTypeName: { pattern: string } } };
  assert.equal(defs.$defs.cedarTypeName.pattern, CEDAR_TYPE_NAME.source);
});

test('the ledger record kinds of the schema are LEDGER_RECORD_KINDS', () => {
  const rec = loadSchemas().get('ledger-record.json')! as { properties: { kind: { enum: string[] } } };
  assert.deepEqual(rec.properties.kind.enum, [...LEDGER_RECORD_KINDS]);
});

test('golden ledger records conform to ledger-record.json', () => {
  assert.equal(goldenRecords.length, 5);
  for (const r of goldenRecords) assert.equal(schemaIssue('ledger-record.json', r), null, JSON.stringify(r));
});

test('golden checkpoint conforms to checkpoint.json; a records page of the golden export conforms', () => {
  const cp = goldenRecords.find((r) => r.kind === 'checkpoint')!;
  assert.equal(schemaIssue('checkpoint.json', cp), null);
  assert.equal(schemaIssue('records-page.json', { records: goldenRecords, next: null }), null);
  assert.equal(schemaIssue('records-page.json', { records: goldenRecords.slice(0, 2), next: 2 }), null);
  assert.equal(schemaIssue('keys.json', { keys: [{ key_id: golden.key_id, public_key: golden.public_key }] }), null);
  const proof = { path: golden.merkle.inclusion_seq_2_size_5 };
  assert.equal(schemaIssue('proof.json', proof), null);
  assert.equal(schemaIssue('proof.json', { path: golden.merkle.consistency_3_to_5 }), null);
});

test('ledger-record.json refuses broken headers and kind-specific fields', () => {
  const [key, , decision, , checkpoint] = goldenRecords;
  const cases: [Record<string, unknown>, string][] = [
    [{ ...decision, v: 2 }, '/v'],
    [{ ...decision, seq: -1 }, '/seq'],
    [{ ...decision, seq: 1.5 }, '/seq'],
    [{ ...decision, kind: 'banana' }, '/kind'],
    [{ ...decision, ts: '2026-08-24T15:30:02+07:00' }, '/ts'],
    [{ ...decision, ts: '2026-02-30T08:30:02Z' }, '/ts'],
    [{ ...decision, prev: 'sha256:abc' }, '/prev'],
    [{ ...decision, hash: undefined }, '/hash'],
    [{ ...checkpoint, signature: 'not base64' }, '/signature'],
    [{ ...checkpoint, size: undefined }, '/size'],
    [{ ...checkpoint, key_id: 'ed25519:XYZ' }, '/key_id'],
    [{ ...key, public_key: 'short' }, '/public_key'],
  ];
  for (const [rec, path] of cases) {
    const clean = JSON.parse(JSON.stringify(rec));
    const issue = schemaIssue('ledger-record.json', clean);
    assert.ok(issue, `expected an issue at ${path}`);
    assert.equal(issue.path, path, issue.message);
  }
});

test('decision-response.json fits the contract shape', () => {
  const response = {
    decision: 'approval_required',
    decision_id: 'dec-1',
    execution_id: 'OFF-2048:disable-sign-in',
    state: 'proposed',
    binding: `writ-bind/1:sha256:${'1'.repeat(64)}`,
    envelope_digest: `sha256:${'2'.repeat(64)}`,
    arguments: { employee_id: '7721' },
    policy_version: `sha256:${'3'.repeat(64)}`,
    entities_version: `sha256:${'4'.repeat(64)}`,
    reasons: ['offboarding-needs-hr'],
    errors: [],
    obligations: [{ policy: 'offboarding-needs-hr', approver_group: 'Role::"hr"' }],
    record: { seq: 7, hash: `sha256:${'5'.repeat(64)}` },
  };
  assert.equal(schemaIssue('decision-response.json', response), null);
  assert.equal(schemaIssue('decision-response.json', { ...response, approval_used: 'apr-1' }), null);
  assert.equal(schemaIssue('decision-response.json', { ...response, decision: 'maybe' })?.path, '/decision');
  assert.equal(schemaIssue('decision-response.json', { ...response, state: 'expired' })?.path, '/state');
  const { record: _r, ...noRecord } = response;
  assert.equal(schemaIssue('decision-response.json', noRecord)?.path, '/record');
});

test('execution.json and error.json fit the contract shape', () => {
  const execution = {
    execution_id: 'OFF-2048:disable-sign-in',
    actor: { type: 'Agent', id: 'offboarding-agent-prod' },
    state: 'reconciled',
    resolution: 'absent',
    binding: `writ-bind/1:sha256:${'a'.repeat(64)}`,
    envelope_digest: `sha256:${'b'.repeat(64)}`,
    supersedes: null,
    superseded_by: 'OFF-2048:disable-sign-in.2',
    approvals: [
      {
        approval_id: 'apr-1',
        approver: { type: 'User', id: 'hr-5519' },
        approved_at: '2026-08-24T09:00:00Z',
        expires_at: '2026-08-25T09:00:00Z',
        valid: false,
        invalid_reason: 'revoked',
      },
    ],
    records: [3, 4, 9],
  };
  assert.equal(schemaIssue('execution.json', execution), null);
  assert.equal(schemaIssue('execution.json', { ...execution, resolution: 'maybe' })?.path, '/resolution');
  assert.equal(schemaIssue('execution.json', { ...execution, records: [-1] })?.path, '/records/0');
  assert.equal(schemaIssue('error.json', { error: { code: 'ENVELOPE_INVALID', message: 'x', path: '/envelope/actor' } }), null);
  assert.equal(schemaIssue('error.json', { error: { code: 'x', message: 'x' } })?.path, '/error/code');
  assert.equal(schemaIssue('error.json', { error: { code: 'NOT_FOUND' } })?.path, '/error/message');
  assert.equal(schemaIssue('approval-response.json', { approval_id: 'apr-1' }), null);
  assert.equal(schemaIssue('entity.json', { uid: { type: 'Employee', id: '7721' }, attrs: { legal_hold: true }, parents: [] }), null);
});
