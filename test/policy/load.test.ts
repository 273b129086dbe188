import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { WritError } from '../../src/errors.js';
import { entitiesVersionOf, loadPolicyDir, policyVersionOf, validateEntity } from '../../src/policy/load.js';
import { BUNDLED_DIR, tempPolicyDir } from './helpers.js';

const PERMIT = 'permit(principal, action, resource);';

function policyInvalid(fn: () => unknown, detail: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof WritError);
    assert.equal(e.code, 'POLICY_INVALID');
    assert.ok(Array.isArray(e.details), 'details is a list');
    assert.ok(
      (e.details as string[]).some((d) => detail.test(d)),
      `details ${JSON.stringify(e.details)} match ${detail}`,
    );
    return true;
  });
}

test('policy_version is sha256 over JCS of [[path, text]] sorted by path (hand-computed)', () => {
  const text = 'permit(principal, action, resource);\n';
  const expectedJcs = '[["a.cedar","permit(principal, action, resource);\\n"],["b/c.cedar","x\\u0001"]]';
  const expected = `sha256:${createHash('sha256').update(expectedJcs).digest('hex')}`;
  assert.equal(
    policyVersionOf([
      ['b/c.cedar', 'x\u0001'],
      ['a.cedar', text],
    ]),
    expected,
  );
});

test('entities_version sorts entities and parents by (type, id) (hand-computed)', () => {
  const version = entitiesVersionOf([
    {
      uid: { type: 'User', id: 'b' },
      attrs: { z: 1, a: true },
      parents: [
        { type: 'Role', id: 'y' },
        { type: 'Group', id: 'x' },
      ],
    },
    { uid: { type: 'Role', id: 'y' }, attrs: {}, parents: [] },
  ]);
  const expectedJcs =
    '[{"attrs":{},"parents":[],"uid":{"id":"y","type":"Role"}},' +
    '{"attrs":{"a":true,"z":1},"parents":[{"id":"x","type":"Group"},{"id":"y","type":"Role"}],"uid":{"id":"b","type":"User"}}]';
  assert.equal(version, `sha256:${createHash('sha256').update(expectedJcs).digest('hex')}`);
});

test('the loaded bundle covers .cedar and schema files, not tests/ or entities.json', () => {
  const { dir, cleanup } = tempPolicyDir({
    'z.cedar': PERMIT,
    'nested/a.cedar': `@id("nested") ${PERMIT}`,
    'tests/ignored.cedar': 'this is not cedar',
    'entities.json': '[]',
    'notes.md': 'ignored',
  });
  try {
    const bundle = loadPolicyDir(dir);
    assert.deepEqual(
      bundle.files.map(([p]) => p),
      ['nested/a.cedar', 'z.cedar'],
    );
    assert.equal(
      bundle.policyVersion,
      policyVersionOf([
        ['z.cedar', PERMIT],
        ['nested/a.cedar', `@id("nested") ${PERMIT}`],
      ]),
    );
    assert.deepEqual(bundle.ids, ['nested', 'z.cedar#0']);
    assert.deepEqual(bundle.seedEntities, []);
  } finally {
    cleanup();
  }
});

test('files load in path order; links are followed, hidden names skipped (a ConfigMap mount)', () => {
  const { dir, cleanup } = tempPolicyDir({
    'a.cedar': `forbid(principal, action, resource);`,
    'a-b.cedar': `forbid(principal, action, resource);`,
    'a/b.cedar': `forbid(principal, action, resource);`,
    // Kubernetes: each key is a link to ..data/<key>, ..data a link to a timestamped directory.
    'cm/..2026_08_24_00_00_00.123/x.cedar': PERMIT,
    '.#a.cedar': 'an editor lock file',
  });
  try {
    symlinkSync('..2026_08_24_00_00_00.123', join(dir, 'cm', '..data'));
    symlinkSync(join('..data', 'x.cedar'), join(dir, 'cm', 'x.cedar'));
    symlinkSync(join(dir, 'a'), join(dir, 'loop'));
    symlinkSync(join(dir, 'missing.cedar'), join(dir, 'dangling.cedar'));
    const bundle = loadPolicyDir(dir);
    assert.deepEqual(
      bundle.files.map(([p]) => p),
      ['a-b.cedar', 'a.cedar', 'a/b.cedar', 'cm/x.cedar'],
    );
    assert.deepEqual(bundle.ids, ['a-b.cedar#0', 'a.cedar#0', 'a/b.cedar#0', 'cm/x.cedar#0']);
    assert.equal(bundle.policyVersion, policyVersionOf(bundle.files.map(([p, t]) => [p, t])));
  } finally {
    cleanup();
  }
});

test('ids without @id are file#index in source order, also past index 9', () => {
  const policies = Array.from({ length: 12 }, (_, i) => `forbid(principal, action, resource) when { context.n == ${i} };`);
  policies[3] = `@id("three") ${policies[3]}`;
  const { dir, cleanup } = tempPolicyDir({ 'many.cedar': policies.join('\n') });
  try {
    const bundle = loadPolicyDir(dir);
    const expected = Array.from({ length: 12 }, (_, i) => (i === 3 ? 'three' : `many.cedar#${i}`));
    assert.deepEqual(bundle.ids, expected);
    assert.match(bundle.policies['many.cedar#10']!, /context\.n == 10/);
  } finally {
    cleanup();
  }
});

test('a duplicate @id is refused, across files too', () => {
  const { dir, cleanup } = tempPolicyDir({ 'a.cedar': `@id("same") ${PERMIT}`, 'b.cedar': `@id("same") ${PERMIT}` });
  try {
    policyInvalid(() => loadPolicyDir(dir), /duplicate policy id "same"/);
  } finally {
    cleanup();
  }
});

test('parse errors name file, line and column', () => {
  const { dir, cleanup } = tempPolicyDir({ 'ok.cedar': PERMIT, 'bad.cedar': `${PERMIT}\npermit(principal, action, resource) when { ;` });
  try {
    policyInvalid(() => loadPolicyDir(dir), /^bad\.cedar:2:\d+: /);
  } finally {
    cleanup();
  }
});

test('@requires_approval must be a forbid carrying an entity uid', () => {
  const cases: Array<[string, RegExp]> = [
    ['@requires_approval forbid(principal, action, resource);', /needs an entity uid/],
    ['@requires_approval("hr") forbid(principal, action, resource);', /needs an entity uid/],
    ['@requires_approval("Role::\\"hr\\"") permit(principal, action, resource);', /only meaningful on a forbid/],
  ];
  for (const [text, detail] of cases) {
    const { dir, cleanup } = tempPolicyDir({ 'p.cedar': text });
    try {
      policyInvalid(() => loadPolicyDir(dir), detail);
    } finally {
      cleanup();
    }
  }
});

test("a near miss of @requires_approval is refused (it would silently be a plain forbid); other annotations are Cedar's", () => {
  for (const name of ['requires_aproval', 'requiresApproval', 'Requires_Approval', 'require_approvals']) {
    const { dir, cleanup } = tempPolicyDir({ 'p.cedar': `@id("needs-hr") @${name}("Role::\\"hr\\"") forbid(principal, action, resource);` });
    try {
      policyInvalid(() => loadPolicyDir(dir), new RegExp(`^p\\.cedar:1:17: needs-hr: unknown annotation @${name}: did you mean @requires_approval\\?$`));
    } finally {
      cleanup();
    }
  }
  const { dir, cleanup } = tempPolicyDir({ 'p.cedar': `@id("p") @advice("ask HR") @reason("x") @approval_note("y") ${PERMIT}` });
  try {
    assert.deepEqual(loadPolicyDir(dir).ids, ['p']);
  } finally {
    cleanup();
  }
});

test("writ's annotation problems name file, line and column, as Cedar's own errors do", () => {
  // The policies sit at lines Cedar lists out of source order (policy10 sorts before policy2), one of
  // them twice, so the location comes from the source and not from Cedar's order.
  const filler = Array.from({ length: 11 }, (_, i) => `@id("p${i}")\n${PERMIT}\n`).join('');
  const bad = `@id("needs-hr @requires_aproval")\n// a comment that says @requires_aproval\n  @requires_aproval("Role::\\"hr\\"")\nforbid(principal, action, resource);\n`;
  const { dir, cleanup } = tempPolicyDir({
    'ok.cedar': PERMIT,
    'sub/offboarding.cedar': `${filler}${bad}@id("allow-hr")\n@requires_approval("Role::\\"hr\\"")\npermit(principal, action, resource);\n`,
  });
  try {
    const line = 11 * 2 + 3;
    policyInvalid(
      () => loadPolicyDir(dir),
      new RegExp(`^sub/offboarding\\.cedar:${line}:3: needs-hr @requires_aproval: unknown annotation @requires_aproval: did you mean @requires_approval\\?$`),
    );
    policyInvalid(() => loadPolicyDir(dir), new RegExp(`^sub/offboarding\\.cedar:${line + 3}:1: allow-hr: @requires_approval is only meaningful on a forbid$`));
  } finally {
    cleanup();
  }
});

test('templates are refused', () => {
  const { dir, cleanup } = tempPolicyDir({ 'p.cedar': 'permit(principal == ?principal, action, resource);' });
  try {
    policyInvalid(() => loadPolicyDir(dir), /templates/);
  } finally {
    cleanup();
  }
});

test('bad entities.json is refused: malformed, duplicate, null attribute, malformed escapes', () => {
  const cases: Array<[string, RegExp]> = [
    ['{', /not JSON/],
    ['[{"uid":{"type":"User","id":"a"}},{"uid":{"type":"User","id":"a"}}]', /duplicate entity User::"a"/],
    ['[{"uid":{"type":"User","id":"a"},"attrs":{"x":null}}]', /null/],
    ['[{"uid":{"type":"not a type","id":"a"}}]', /Cedar type name/],
    ['[{"uid":{"type":"User","id":"a"},"tags":{}}]', /unknown field "tags"/],
    // Escapes Cedar would read as plain records (every comparison with an entity quietly false).
    ['[{"uid":{"type":"User","id":"a"},"attrs":{"manager":{"__entity":{"type":"User"}}}}]', /\[0\]\.attrs\.manager\.__entity: a "__entity" reference/],
    [
      '[{"uid":{"type":"User","id":"a"},"attrs":{"team":[{"__entity":{"type":"User","id":"b"},"x":1}]}}]',
      /\.attrs\.team\[0\]: an object holding "__entity" must hold nothing else/,
    ],
    ['[{"uid":{"type":"User","id":"a"},"attrs":{"limit":{"__extn":"decimal"}}}]', /\.attrs\.limit\.__extn: a "__extn" value/],
  ];
  for (const [text, detail] of cases) {
    const { dir, cleanup } = tempPolicyDir({ 'p.cedar': PERMIT, 'entities.json': text });
    try {
      policyInvalid(() => loadPolicyDir(dir), detail);
    } finally {
      cleanup();
    }
  }
});

const SCHEMA = `
entity Agent { trusted: Bool };
entity Doc { secret: Bool };
entity User;
action "s/t" appliesTo { principal: Agent, resource: Doc, context: { n: Long } };
`;

test('with a schema, policies are validated strictly', () => {
  const { dir, cleanup } = tempPolicyDir({
    'schema.cedarschema': SCHEMA,
    'p.cedar': '@id("typo") permit(principal, action == Action::"s/t", resource) when { resource.secrett == false };',
  });
  try {
    policyInvalid(() => loadPolicyDir(dir), /^typo: /);
  } finally {
    cleanup();
  }
});

test('with a schema, entities.json and admin entity updates are checked against it', () => {
  const { dir, cleanup } = tempPolicyDir({
    'schema.cedarschema': SCHEMA,
    'p.cedar': PERMIT,
    'entities.json': '[{"uid":{"type":"Doc","id":"d"},"attrs":{"secret":"no"}}]',
  });
  try {
    policyInvalid(() => loadPolicyDir(dir), /entities\.json: .*secret/);
  } finally {
    cleanup();
  }
  const ok = tempPolicyDir({ 'schema.cedarschema': SCHEMA, 'p.cedar': PERMIT });
  try {
    const bundle = loadPolicyDir(ok.dir);
    assert.equal(bundle.schemaText, SCHEMA);
    validateEntity(bundle, { uid: { type: 'Doc', id: 'd' }, attrs: { secret: true }, parents: [] });
    assert.throws(
      () => validateEntity(bundle, { uid: { type: 'Doc', id: 'd' }, attrs: { secret: 1 }, parents: [] }),
      (e: unknown) => e instanceof WritError && e.code === 'INVALID_REQUEST' && /Doc::"d"/.test(e.message),
    );
    assert.throws(() => validateEntity(bundle, { uid: { type: 'Nope', id: 'x' }, attrs: {}, parents: [] }), WritError);
  } finally {
    ok.cleanup();
  }
});

test('without a schema, validateEntity still refuses what Cedar cannot hold', () => {
  const bundle = loadPolicyDir(BUNDLED_DIR);
  validateEntity(bundle, { uid: { type: 'Employee', id: '1' }, attrs: { legal_hold: true }, parents: [] });
  assert.throws(
    () => validateEntity(bundle, { uid: { type: 'Employee', id: '1' }, attrs: { x: null }, parents: [] }),
    (e: unknown) => e instanceof WritError && e.code === 'INVALID_REQUEST',
  );
});

test('two schema files are refused', () => {
  const { dir, cleanup } = tempPolicyDir({ 'a.cedarschema': SCHEMA, 'b.cedarschema.json': '{}', 'p.cedar': PERMIT });
  try {
    policyInvalid(() => loadPolicyDir(dir), /more than one schema/);
  } finally {
    cleanup();
  }
});

test('the bundled policies load', () => {
  const bundle = loadPolicyDir(BUNDLED_DIR);
  assert.deepEqual(bundle.ids, [
    'duplicate-consequence',
    'read-employee-for-manager-or-hr',
    'disable-sign-in-by-manager',
    'hr-approval-required',
    'not-before-execute-after',
    'envelope-matches-hr-record',
    'legal-hold',
  ]);
  assert.equal(bundle.info.get('hr-approval-required')?.requiresApproval, 'Role::"hr"');
  assert.ok(bundle.seedEntities.length >= 5);
});
