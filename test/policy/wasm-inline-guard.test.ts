import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { FIRST_CLEAN_MAJOR, wasmInlineGuardNeeded } from '../../src/policy/wasm-inline-guard.js';

test('the V8 guard flag is needed below the first Node major where the check ran clean, and only there', () => {
  assert.equal(wasmInlineGuardNeeded('20.20.2', {}), true);
  assert.equal(wasmInlineGuardNeeded('22.23.5', {}), true);
  assert.equal(wasmInlineGuardNeeded('24.22.3', {}), false);
  assert.equal(wasmInlineGuardNeeded(`${FIRST_CLEAN_MAJOR}.0.0`, {}), false);
  assert.equal(wasmInlineGuardNeeded(`${FIRST_CLEAN_MAJOR - 1}.99.0`, {}), true);
  assert.equal(wasmInlineGuardNeeded('24.22.3', { WRIT_WASM_INLINE_GUARD: 'on' }), true);
  assert.equal(wasmInlineGuardNeeded('20.20.2', { WRIT_WASM_INLINE_GUARD: 'off' }), false);
});

test('a fresh process applies the guard exactly when its Node major needs it', () => {
  const guard = fileURLToPath(new URL('../../src/policy/wasm-inline-guard.js', import.meta.url));
  const r = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', `import { applyWasmInlineGuard } from ${JSON.stringify(guard)}; console.log(applyWasmInlineGuard())`],
    {
      encoding: 'utf8',
      env: { ...process.env, WRIT_WASM_INLINE_GUARD: '' },
    },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), String(Number(process.versions.node.split('.')[0]) < FIRST_CLEAN_MAJOR));
});
