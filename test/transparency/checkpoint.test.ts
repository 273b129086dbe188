import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatCheckpoint, parseCheckpoint } from '../../src/transparency/checkpoint.js';
import type { NoteError } from '../../src/transparency/note.js';

// c2sp.org/tlog-checkpoint's example body.
const SOFA = 'example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n';

test('tlog-checkpoint: the spec example parses and formats back byte for byte', () => {
  const c = parseCheckpoint(SOFA);
  assert.equal(c.origin, 'example.com/behind-the-sofa');
  assert.equal(c.size, 20852163);
  assert.equal(c.root.toString('base64'), 'CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=');
  assert.equal(formatCheckpoint(c), SOFA);
  assert.equal(formatCheckpoint({ ...c, extensions: ['ext one'] }), `${SOFA}ext one\n`);
});

test('tlog-checkpoint: malformed bodies are refused', () => {
  for (const bad of [
    'example.com/x\n020\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n',
    'example.com/x\n20\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I\n',
    'example.com/x\n20\n',
    '\n20\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n',
    'example.com/x\n20\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=',
    'example.com/x\n-1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n',
  ]) {
    assert.throws(
      () => parseCheckpoint(bad),
      (e: NoteError) => e.code === 'MALFORMED',
      JSON.stringify(bad),
    );
  }
});
