// Every vector in vectors/binding/ and the independent golden file, through the library and through
// the real `bin/writ bind` process.
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { admitArgumentsText, envelopeDigest, parseLossless, toPlain } from '../../src/binding/index.js';
import { isWritError } from '../../src/errors.js';
import { GOLDEN_URL, loadVectors, mapLimit, runWrit, type Vector } from './helpers.js';

const vectors = loadVectors();

function libraryAnswer(v: Vector): { binding: string; canonical: string } | { error: string } {
  try {
    const bound = admitArgumentsText(v.input, v.server, v.tool);
    return { binding: bound.binding, canonical: bound.canonical };
  } catch (err) {
    if (!isWritError(err)) throw err;
    return { error: err.code };
  }
}

function expectedShape(v: Vector): { binding: string; canonical: string } | { error: string } {
  return 'error' in v.expect ? { error: v.expect.error } : { binding: v.expect.binding, canonical: v.expect.canonical };
}

test('the vector set is large and covers every refusal code at least 3 times', () => {
  assert.ok(vectors.length >= 80, `only ${vectors.length} vectors`);
  const counts = new Map<string, number>();
  for (const v of vectors) if ('error' in v.expect) counts.set(v.expect.error, (counts.get(v.expect.error) ?? 0) + 1);
  for (const code of [
    'BINDING_DUPLICATE_KEY',
    'BINDING_LONE_SURROGATE',
    'BINDING_UNSAFE_INTEGER',
    'BINDING_LOSSY_NUMBER',
    'BINDING_UNREPRESENTABLE',
    'BINDING_TOO_DEEP',
  ]) {
    assert.ok((counts.get(code) ?? 0) >= 3, `${code}: ${counts.get(code) ?? 0}`);
  }
  const names = new Set(vectors.map((v) => `${v.file}:${v.name}`));
  assert.equal(names.size, vectors.length, 'vector names are unique per file');
});

test('every vector through the library', () => {
  for (const v of vectors) assert.deepEqual(libraryAnswer(v), expectedShape(v), `${v.file}: ${v.name}`);
});

test('the golden file (independent implementation) reproduces exactly', () => {
  const golden = JSON.parse(readFileSync(GOLDEN_URL, 'utf8')) as { vectors: Vector[]; envelope_digest: { envelope: unknown; expect: string } };
  assert.equal(golden.vectors.length, 9);
  for (const v of golden.vectors) assert.deepEqual(libraryAnswer(v), expectedShape(v), v.name);
  // The envelope goes through the same lossless path as a request body would.
  const envelope = toPlain(parseLossless(JSON.stringify(golden.envelope_digest.envelope)));
  assert.equal(envelopeDigest(envelope), golden.envelope_digest.expect);
  const copied = vectors.filter((v) => v.file === 'golden.json');
  assert.deepEqual(
    copied.map(({ file: _f, ...rest }) => rest),
    golden.vectors,
    'vectors/binding/golden.json is a verbatim copy',
  );
});

test('every vector through bin/writ bind (stdin)', async () => {
  const results = await mapLimit(vectors, 4, (v) => runWrit(['bind', '--server', v.server, '--tool', v.tool], v.input));
  vectors.forEach((v, i) => {
    const r = results[i]!;
    assert.equal(r.stderr, '', `${v.name}: stderr`);
    const lines = r.stdout.split('\n');
    assert.equal(lines.length, 2, `${v.name}: exactly one line`);
    assert.equal(lines[1], '');
    const printed = JSON.parse(lines[0]!) as Record<string, unknown>;
    if ('error' in v.expect) {
      assert.equal(r.code, 2, v.name);
      const error = printed.error as Record<string, unknown>;
      assert.deepEqual(Object.keys(printed), ['error']);
      assert.equal(error.code, v.expect.error, v.name);
      assert.equal(typeof error.message, 'string');
      assert.equal(typeof error.path, 'string');
    } else {
      assert.equal(r.code, 0, v.name);
      assert.deepEqual(Object.keys(printed), ['binding', 'canonical', 'cedar']);
      assert.equal(printed.binding, v.expect.binding, v.name);
      assert.equal(printed.canonical, v.expect.canonical, v.name);
    }
  });
});

test('bin/writ bind reads a FILE argument and `-` the same as stdin', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'writ-bind-'));
  try {
    const sample = vectors.filter((v) => v.file === 'golden.json');
    for (const v of sample) {
      const file = join(dir, 'args.json');
      writeFileSync(file, v.input);
      const fromFile = await runWrit(['bind', '--server', v.server, '--tool', v.tool, file]);
      const fromDash = await runWrit(['bind', '--server', v.server, '--tool', v.tool, '-'], v.input);
      assert.equal(fromFile.stdout, fromDash.stdout, `${v.name}: file ${JSON.stringify(fromFile)} dash ${JSON.stringify(fromDash)}`);
      assert.equal(fromFile.code, fromDash.code, v.name);
      assert.equal(fromFile.code, 'error' in v.expect ? 2 : 0);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
