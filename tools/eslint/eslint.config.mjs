// ESLint with typescript-eslint: the second half of `npm run lint`, after Biome (docs/architecture.md, "Lint").
// Biome formats and carries the syntactic rules; this pass adds typescript-eslint's type-aware rules, chiefly
// no-floating-promises and no-misused-promises: a dropped promise in fail-closed code is a lost refusal.
// It runs on TypeScript 5.9 from this folder's own package.json, since typescript-eslint loads the compiler's
// JavaScript API, which the native TypeScript 7 the project compiles with does not ship.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const root = new URL('../..', import.meta.url).pathname;
// node:test's test() and describe() return promises the runner itself awaits.
const nodeTest = { from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] };

export default defineConfig(
  { basePath: root, ignores: ['dist/**', 'node_modules/**', 'tools/**'] },
  {
    basePath: root,
    files: ['**/*.ts'],
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked],
    // tsconfig.json plus noUncheckedIndexedAccess (see ./tsconfig.json), so that the `!` after a checked index
    // is a needed assertion here and no-unnecessary-type-assertion reports only the ones that are not.
    languageOptions: { parserOptions: { project: [new URL('tsconfig.json', import.meta.url).pathname], tsconfigRootDir: root } },
    rules: {
      '@typescript-eslint/no-floating-promises': ['error', { allowForKnownSafeCalls: [nodeTest] }],
      // Biome's noExplicitAny reports `any`, and its biome-ignore comments say where and why one stays.
      '@typescript-eslint/no-explicit-any': 'off',
      // Biome's noUnusedVariables reports these too; `_name` and a rest sibling drop a member on purpose.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // The validators of JSON, notes and headers match control characters on purpose (Biome's noControlCharactersInRegex is off too).
      'no-control-regex': 'off',
      // The JSON scanners compare charCodeAt() with enums of character codes (Ch.Quote), as the specs write them.
      '@typescript-eslint/no-unsafe-enum-comparison': 'off',
      // An async function with no await is how a callback meets a promise-returning interface, its throws becoming rejections.
      '@typescript-eslint/require-await': 'off',
      // Control-flow sentinels that never leave their file: the pg store's NeedRow (a row to fetch before retrying).
      '@typescript-eslint/only-throw-error': ['error', { allow: [{ from: 'file', name: 'NeedRow' }] }],
      // Biome's useConst; this one also asks for const where a closure reads the variable before its one assignment.
      'prefer-const': 'off',
      // Store reads are sync on LMDB and async on PostgreSQL (the shared interface's MaybePromise), and callers await
      // them alike; where a caller holds the LMDB type this rule calls the await needless, which it is not.
      '@typescript-eslint/await-thenable': 'off',
      // JSON.parse returns `any`, assigned here to the shape it is checked against next (`let v: {seq?: unknown}`);
      // `any` in declarations is Biome's noExplicitAny's. The member access, call and return rules stay on.
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
    },
  },
  {
    // The decision body before its validator narrows it: the `any` Biome lets through with a biome-ignore saying so.
    basePath: root,
    files: ['src/pdp/admission.ts'],
    rules: { '@typescript-eslint/no-unsafe-member-access': 'off' },
  },
  {
    basePath: root,
    files: ['src/console/web/**/*.ts'],
    rules: {
      // The browser drops what a DOM listener returns; the console's async listeners catch their own errors and
      // show them on the page.
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      // String(field ?? '') shows a ledger field the schema makes a string; an object there shows as such.
      '@typescript-eslint/no-base-to-string': 'off',
    },
  },
  {
    // Cedar's partial evaluator leaves its fast path by throwing the NOT_HERE symbol, caught in the same file.
    basePath: root,
    files: ['src/policy/residual.ts'],
    rules: { '@typescript-eslint/only-throw-error': 'off' },
  },
  {
    basePath: root,
    files: ['test/**/*.ts'],
    rules: {
      // Tests read untyped JSON answers and send wrongly typed input on purpose (Biome's noExplicitAny is off there too).
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // Arrays with holes are the inputs under test of the canonical-JSON and memo-key tests.
      'no-sparse-arrays': 'off',
      // Assertion messages show whatever a call returned, an Error included.
      '@typescript-eslint/no-base-to-string': 'off',
    },
  },
  {
    basePath: root,
    files: ['**/*.mjs'],
    extends: [js.configs.recommended],
    languageOptions: { globals: { ...globals.node } },
    rules: { 'no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true }] },
  },
);
