import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateDevTokens, loadConfig, ROLES } from '../../src/config/config.js';
import { TokenTable } from '../../src/http/auth.js';

function withConfig(tokens: unknown, fn: (path: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'writ-authzen-config-'));
  try {
    const path = join(dir, 'config.json');
    writeFileSync(path, JSON.stringify({ policy_dir: dir, data_dir: join(dir, 'data'), tokens }));
    fn(path);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('role evaluator: a token without an actor; an evaluator token that names an actor is refused', () => {
  assert.ok(ROLES.includes('evaluator'));
  withConfig([{ token: 'ev', role: 'evaluator' }], (path) => {
    const { config } = loadConfig({ configPath: path });
    assert.deepEqual(config.tokens, [{ token: 'ev', role: 'evaluator' }]);
    assert.equal(new TokenTable(config.tokens).authenticate('Bearer ev').role, 'evaluator');
  });
  withConfig([{ token: 'ev', role: 'evaluator', actor: { type: 'user', id: 'x' } }], (path) => {
    assert.throws(() => loadConfig({ configPath: path }), /evaluator token names no actor/);
  });
});

test('writ serve without a config also writes a dev evaluator token', () => {
  const dir = mkdtempSync(join(tmpdir(), 'writ-authzen-dev-'));
  try {
    const { specs, byRole } = generateDevTokens(dir);
    assert.match(byRole.evaluator!, /^dev-evaluator-/);
    assert.deepEqual(
      specs.find((s) => s.role === 'evaluator'),
      { token: byRole.evaluator, role: 'evaluator' },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
