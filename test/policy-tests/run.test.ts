// `writ policy test` (src/policy-tests/): cases run by the engine the server uses, over the policy dir's
// seed entities, judged as the sidecar would judge each request.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { BUNDLED_DIR, tempPolicyDir, writPolicy as writ } from '../policy/helpers.js';

const STORY_ENTITIES = JSON.stringify([
  { uid: { type: 'Agent', id: 'a' }, attrs: {}, parents: [] },
  { uid: { type: 'Doc', id: 'd' }, attrs: {}, parents: [] },
  { uid: { type: 'User', id: 'u' }, attrs: {}, parents: [] },
]);

function request(tool: string): unknown {
  return {
    execution_id: 'X-1',
    phase: 'propose',
    envelope: {
      task_id: 'T',
      purpose: 'p',
      requester: { type: 'User', id: 'u' },
      actor: { type: 'Agent', id: 'a' },
      subject: { type: 'Doc', id: 'd' },
    },
    action: { server: 's', tool, arguments: { amount: 1.5 } },
  };
}

test('writ policy test passes on the bundled policies, one line per case, final summary line', () => {
  const r = writ('test', '--dir', BUNDLED_DIR);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const summary = r.lines.at(-1)!;
  assert.match(summary, /^(\d+) passed, 0 failed$/);
  const passed = Number(summary.split(' ')[0]);
  assert.ok(passed >= 10);
  assert.equal(r.lines.length, passed + 1);
  assert.ok(r.lines.slice(0, -1).every((l) => l.startsWith('PASS ')));
});

test('a failing case prints FAIL with expected and got, and exits 1', () => {
  const { dir, cleanup } = tempPolicyDir({
    'p.cedar': '@id("read") permit(principal, action == Action::"s/read", resource) when { context.arguments.amount.greaterThan(decimal("1.0")) };',
    'entities.json': STORY_ENTITIES,
    'tests/cases.json': JSON.stringify([
      { name: 'reads are allowed', now: '2026-01-01T00:00:00Z', request: request('read'), expect: { decision: 'allow', reasons: ['read'] } },
      { name: 'writes are allowed (wrong)', now: '2026-01-01T00:00:00Z', request: request('write'), expect: { decision: 'allow' } },
      { name: 'malformed case', now: 'yesterday', request: request('read'), expect: { decision: 'allow' } },
    ]),
  });
  try {
    const r = writ('test', '--dir', dir, '--coverage');
    assert.equal(r.status, 1);
    assert.equal(r.lines[0], 'PASS reads are allowed');
    assert.equal(r.lines[1], 'FAIL writes are allowed (wrong): expected allow got deny []');
    assert.match(r.lines[2]!, /^FAIL malformed case: INVALID_REQUEST: now: /);
    assert.equal(r.lines.at(-1), '1 passed, 2 failed');
  } finally {
    cleanup();
  }
});

test('a case the sidecar would refuse, or with a misspelt member, fails instead of checking nothing', () => {
  const body = request('read') as { envelope: Record<string, unknown> };
  const { dir, cleanup } = tempPolicyDir({
    'p.cedar': '@id("read") permit(principal, action, resource);',
    'entities.json': STORY_ENTITIES,
    'tests/cases.json': JSON.stringify([
      {
        name: 'unknown envelope field',
        now: '2026-01-01T00:00:00Z',
        request: { ...body, envelope: { ...body.envelope, bogus: 1 } },
        expect: { decision: 'allow' },
      },
      {
        name: 'lossy number',
        now: '2026-01-01T00:00:00Z',
        request: { ...body, action: { server: 's', tool: 'read', arguments: {} } },
        expect: { decision: 'allow' },
      },
      { name: 'misspelt reasons', now: '2026-01-01T00:00:00Z', request: body, expect: { decision: 'allow', reason: ['nope'] } },
      { name: 'misspelt expect', now: '2026-01-01T00:00:00Z', request: body, expext: { decision: 'allow' } },
      { name: 'fine', now: '2026-01-01T00:00:00Z', request: body, expect: { decision: 'allow', reasons: ['read'] } },
    ]).replace('"arguments":{}', '"arguments":{"n":1.0}'),
  });
  try {
    const r = writ('test', '--dir', dir);
    assert.equal(r.status, 1);
    assert.match(r.lines[0]!, /^FAIL unknown envelope field: .*request\/envelope\/bogus: the sidecar would refuse this request: ENVELOPE_INVALID/);
    assert.match(r.lines[1]!, /^FAIL lossy number: .*BINDING_LOSSY_NUMBER/);
    assert.match(r.lines[2]!, /^FAIL misspelt reasons: .*expect: unknown member "reason"/);
    assert.match(r.lines[3]!, /^FAIL misspelt expect: .*unknown member "expext"/);
    assert.equal(r.lines[4], 'PASS fine');
    assert.equal(r.lines.at(-1), '1 passed, 4 failed');
  } finally {
    cleanup();
  }
});

test('--coverage lists the policies that never determined a case', () => {
  const { dir, cleanup } = tempPolicyDir({
    'p.cedar': '@id("read") permit(principal, action == Action::"s/read", resource);\n@id("never") forbid(principal, action, resource) when { false };',
    'entities.json': STORY_ENTITIES,
    'tests/a/b.json': JSON.stringify([{ name: 'read', now: '2026-01-01T00:00:00Z', request: request('read'), expect: { decision: 'allow' } }]),
  });
  try {
    const r = writ('test', '--dir', dir, '--coverage');
    assert.equal(r.status, 0);
    assert.ok(r.lines.includes('never determining: never'), r.stdout);
    assert.ok(!r.lines.includes('never determining: read'));
    assert.equal(r.lines.at(-1), '1 passed, 0 failed');
    const json = writ('test', '--dir', dir, '--coverage', '--json');
    const parsed = JSON.parse(json.stdout);
    assert.equal(parsed.passed, 1);
    assert.deepEqual(parsed.never_determining, ['never']);
    assert.equal(parsed.cases[0].got.decision, 'allow');
  } finally {
    cleanup();
  }
});

test('approvals in a test case count unless expired; approved_at defaults to now', () => {
  const { dir, cleanup } = tempPolicyDir({
    'p.cedar': [
      '@id("ok") permit(principal, action, resource);',
      '@id("needs-u") @requires_approval("User::\\"u\\"") forbid(principal, action, resource) unless { context has approver && context.approver == User::"u" };',
    ].join('\n'),
    'entities.json': STORY_ENTITIES,
    'tests/t.json': JSON.stringify([
      { name: 'none', now: '2026-01-01T00:00:00Z', request: request('x'), expect: { decision: 'approval_required', reasons: ['needs-u'] } },
      {
        name: 'valid',
        now: '2026-01-01T00:00:00Z',
        request: request('x'),
        approvals: [{ approver: { type: 'User', id: 'u' }, expires_at: '2026-01-01T00:00:01Z' }],
        expect: { decision: 'allow', reasons: ['ok'] },
      },
      {
        name: 'expired',
        now: '2026-01-01T00:00:00Z',
        request: request('x'),
        approvals: [{ approver: { type: 'User', id: 'u' }, approved_at: '2025-12-31T00:00:00Z', expires_at: '2026-01-01T00:00:00Z' }],
        expect: { decision: 'approval_required' },
      },
      {
        // Given after the case's clock: it does not exist yet at `now`.
        name: 'not yet given',
        now: '2026-01-01T00:00:00Z',
        request: request('x'),
        approvals: [{ approver: { type: 'User', id: 'u' }, approved_at: '2026-01-01T12:00:00Z', expires_at: '2026-01-01T13:00:00Z' }],
        expect: { decision: 'approval_required' },
      },
    ]),
    // An approval that expires before it was given is no approval the server could hold: the case is malformed.
    'tests/bad.json': JSON.stringify([
      {
        name: 'expires before given',
        now: '2026-01-01T00:00:00Z',
        request: request('x'),
        approvals: [{ approver: { type: 'User', id: 'u' }, approved_at: '2025-12-31T12:00:00Z', expires_at: '2025-12-31T11:00:00Z' }],
        expect: { decision: 'approval_required' },
      },
    ]),
  });
  try {
    const r = writ('test', '--dir', dir);
    assert.equal(r.status, 1, r.stdout);
    assert.equal(r.lines.at(-1), '4 passed, 1 failed');
    assert.ok(
      r.lines.some((l) => /expires before given/.test(l) && /approved_at must be before expires_at/.test(l)),
      r.stdout,
    );
  } finally {
    cleanup();
  }
});

test('test files and folders behind symlinks are run (as the policy loader follows links), a link back up is not looped', () => {
  const { dir, cleanup } = tempPolicyDir({
    'p.cedar': '@id("read") permit(principal, action == Action::"s/read", resource);',
    'entities.json': STORY_ENTITIES,
    'real/cases.json': JSON.stringify([
      { name: 'linked file', now: '2026-01-01T00:00:00Z', request: request('read'), expect: { decision: 'allow', reasons: ['read'] } },
    ]),
    'real/more/cases.json': JSON.stringify([{ name: 'linked folder', now: '2026-01-01T00:00:00Z', request: request('write'), expect: { decision: 'deny' } }]),
  });
  try {
    mkdirSync(join(dir, 'tests'));
    symlinkSync(join(dir, 'real', 'cases.json'), join(dir, 'tests', 'a.json'));
    symlinkSync(join(dir, 'real', 'more'), join(dir, 'tests', 'more'));
    symlinkSync(join(dir, 'tests'), join(dir, 'tests', 'loop'));
    const r = writ('test', '--dir', dir);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.deepEqual(r.lines, ['PASS linked file', 'PASS linked folder', '2 passed, 0 failed']);
  } finally {
    cleanup();
  }
});

test('writ policy test: one bad case fails alone — a repeated key, a missing name, a lax timestamp, supersedes as the server sees it', () => {
  const superseding = request('read') as { envelope: Record<string, unknown> };
  superseding.envelope.supersedes = 'X-0';
  const ok = (name: string, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ name, now: '2026-01-01T00:00:00Z', request: request('read'), expect: { decision: 'allow' }, ...extra });
  const cases = [
    ok('first'),
    // A repeated key in one case's arguments: the sidecar would refuse that request; the other cases still run.
    ok('repeated key').replace('"amount":1.5', '"amount":1.5,"amount":1.5'),
    ok('last'),
    JSON.stringify({ now: '2026-01-01T00:00:00Z', request: request('read'), expect: { decision: 'allow' } }),
    ok('lower-case t and z', { now: '2026-01-01t00:00:00z' }),
    ok('supersedes without envelope.supersedes', { supersedes: { state: 'unknown' } }),
    ok('envelope.supersedes without the state', { request: superseding }),
    ok('a state that is none', { request: superseding, supersedes: { state: 'nonsense' } }),
    ok('a resolution before reconciliation', { request: superseding, supersedes: { state: 'unknown', resolution: 'absent' } }),
    ok('the superseded execution is unknown', {
      request: superseding,
      supersedes: { state: 'unknown' },
      expect: { decision: 'deny', reasons: ['no-retry-of-unknown'] },
    }),
    ok('the superseded execution was reconciled absent', { request: superseding, supersedes: { state: 'reconciled', resolution: 'absent' } }),
  ];
  const { dir, cleanup } = tempPolicyDir({
    'p.cedar': [
      '@id("read") permit(principal, action == Action::"s/read", resource);',
      '@id("no-retry-of-unknown") forbid(principal, action, resource) when { context has supersedes && context.supersedes.state == "unknown" };',
    ].join('\n'),
    'entities.json': STORY_ENTITIES,
    'tests/cases.json': `[${cases.join(',')}]`,
  });
  try {
    // A dangling link that is not a test file is not a test; one that is fails as a file.
    symlinkSync(join(dir, 'nowhere'), join(dir, 'tests', 'notes.txt'));
    const r = writ('test', '--dir', dir);
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.deepEqual(r.lines, [
      'PASS first',
      'FAIL tests/cases.json[1]: request/action/arguments/amount: the sidecar would refuse this request: BINDING_DUPLICATE_KEY: duplicate key "amount"',
      'PASS last',
      'FAIL tests/cases.json[3]: INVALID_REQUEST: name: expected a non-empty string',
      'FAIL lower-case t and z: INVALID_REQUEST: now: expected a strict RFC 3339 timestamp with an offset, e.g. 2026-08-24T17:00:00+07:00',
      "FAIL supersedes without envelope.supersedes: INVALID_REQUEST: supersedes: the request's envelope.supersedes names no execution",
      'FAIL envelope.supersedes without the state: INVALID_REQUEST: supersedes: the request supersedes X-0; give the state the server would find it in: "supersedes": {"state", "resolution"?}',
      'FAIL a state that is none: INVALID_REQUEST: supersedes.state: expected one of proposed, invoking, committed, rejected, unknown, reconciled',
      'FAIL a resolution before reconciliation: INVALID_REQUEST: supersedes.resolution: only a reconciled execution has one',
      'PASS the superseded execution is unknown',
      'PASS the superseded execution was reconciled absent',
      '4 passed, 7 failed',
    ]);
    symlinkSync(join(dir, 'nowhere'), join(dir, 'tests', 'link.json'));
    const linked = writ('test', '--dir', dir);
    assert.equal(linked.status, 1);
    assert.match(linked.stdout, /^FAIL tests\/link\.json: unreadable test file: ENOENT/m);
    assert.match(linked.lines.at(-1)!, /^4 passed, 8 failed$/);
  } finally {
    cleanup();
  }
});
