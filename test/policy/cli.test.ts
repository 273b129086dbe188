import { test } from 'node:test';
import { spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { BUNDLED_DIR, tempPolicyDir, WRIT_BIN, writPolicy as writ } from './helpers.js';

test('validate: exit 0 on the bundled policies, exit 1 with the problem on a broken dir', () => {
  const ok = writ('validate', '--dir', BUNDLED_DIR);
  assert.equal(ok.status, 0);
  assert.match(ok.stdout, /policy_version sha256:[0-9a-f]{64}/);
  const { dir, cleanup } = tempPolicyDir({ 'broken.cedar': 'permit(principal, action, resource' });
  try {
    const bad = writ('validate', '--dir', dir);
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /broken\.cedar:1:\d+/);
    const json = writ('validate', '--dir', dir, '--json');
    assert.equal(json.status, 1);
    assert.equal(JSON.parse(json.stdout).error.code, 'POLICY_INVALID');
    assert.equal(writ('test', '--dir', dir).status, 1);
    // A directory that does not exist (the default `policies` in a folder without one) is named, with the way out.
    for (const sub of ['validate', 'test']) {
      const missing = writ(sub, '--dir', join(dir, 'nope'));
      assert.equal(missing.status, 1);
      assert.match(missing.stderr, /nope: no such directory; name the policy directory with --dir DIR/);
    }
  } finally {
    cleanup();
  }
});

test('fmt --check exits 1 without touching files; fmt rewrites; the bundled dir is formatted', () => {
  const bundled = writ('fmt', '--check', '--dir', BUNDLED_DIR);
  assert.equal(bundled.status, 0, bundled.stdout + bundled.stderr);
  // A check that passes prints one line (issue 12: silence looked like nothing ran).
  assert.match(bundled.stdout, /^3 file\(s\) already formatted\n$/);
  const messy = 'permit(principal,action,resource) when {1==1};';
  const { dir, cleanup } = tempPolicyDir({ 'm.cedar': messy });
  try {
    const check = writ('fmt', '--check', '--dir', dir);
    assert.equal(check.status, 1, check.stdout + check.stderr);
    assert.match(check.stdout, /would reformat m\.cedar/);
    assert.equal(readFileSync(join(dir, 'm.cedar'), 'utf8'), messy);
    const rewrite = writ('fmt', '--dir', dir);
    assert.equal(rewrite.status, 0, rewrite.stdout + rewrite.stderr);
    assert.notEqual(readFileSync(join(dir, 'm.cedar'), 'utf8'), messy);
    const again = writ('fmt', '--check', '--dir', dir);
    assert.equal(again.status, 0, again.stdout + again.stderr);
    assert.equal(again.stdout, '1 file(s) already formatted\n');
  } finally {
    cleanup();
  }
});

test('fmt names a parse error by file:line:col, as validate does, and a missing dir by the --dir hint', () => {
  const { dir, cleanup } = tempPolicyDir({ 'b.cedar': 'permit(principal,action,resource)\nwhen { 1 + };\n' });
  try {
    const bad = writ('fmt', '--dir', dir);
    assert.equal(bad.status, 1, bad.stdout + bad.stderr);
    assert.match(bad.stderr, /^b\.cedar:2:12: cannot parse input policies: unexpected token/m);
  } finally {
    cleanup();
  }
  const missing = writ('fmt', '--dir', join(tmpdir(), 'writ-no-such-policy-dir'));
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /no such directory; name the policy directory with --dir DIR/);
  assert.doesNotMatch(missing.stderr, /ENOENT/);
});

test('usage errors exit 2; --help exits 0', () => {
  assert.equal(writ('frobnicate').status, 2);
  assert.equal(writ().status, 2);
  assert.equal(writ('test', '--nope').status, 2);
  // An option of another subcommand is refused, not ignored.
  for (const args of [
    ['validate', '--coverage'],
    ['validate', '--check'],
    ['fmt', '--json'],
    ['test', '--check'],
  ]) {
    const r = writ(...args, '--dir', BUNDLED_DIR);
    assert.equal(r.status, 2, args.join(' '));
    assert.match(r.stderr, new RegExp(`writ policy ${args[0]}: ${args[1]} is not an option of ${args[0]}`));
  }
  const help = writ('--help');
  assert.equal(help.status, 0);
  assert.match(help.stdout, /validate/);
});

test('writ with no command is a usage error: usage on stderr, exit 2', () => {
  const r = spawnSync(process.execPath, [WRIT_BIN], { encoding: 'utf8' });
  assert.equal(r.status, 2);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /^usage: writ <command>/);
});
