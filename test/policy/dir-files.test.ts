// Policy-dir files (src/policy/dir-files.ts): only regular files within the size limit are read; a FIFO
// (which a plain read would block on), a link to a device, an oversized file are refused at once with
// POLICY_INVALID; the signature moves with a file's size or mtime and with nothing else.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { execFileSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PolicyFileAbsent, readPolicyFile, signatureOf } from '../../src/policy/dir-files.js';
import { loadPolicyDir } from '../../src/policy/load.js';
import { BUNDLED_DIR } from './helpers.js';

function withDir(run: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'writ-dir-files-'));
  try {
    run(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a regular file within the limit is read; an absent one is PolicyFileAbsent', () =>
  withDir((dir) => {
    writeFileSync(join(dir, 'a.json'), '[]');
    assert.equal(readPolicyFile(join(dir, 'a.json'), 'a.json', 2), '[]');
    assert.throws(() => readPolicyFile(join(dir, 'none.json'), 'none.json'), PolicyFileAbsent);
  }));

test('a FIFO is refused at once, without waiting for a writer', () =>
  withDir((dir) => {
    const fifo = join(dir, 'entities.json');
    execFileSync('mkfifo', [fifo]);
    assert.throws(() => readPolicyFile(fifo, 'entities.json'), { code: 'POLICY_INVALID', message: /not a regular file \(a FIFO\)/ });
  }));

test('a symbolic link to a device is refused, not read', () =>
  withDir((dir) => {
    symlinkSync('/dev/zero', join(dir, 'entities.json'));
    assert.throws(() => readPolicyFile(join(dir, 'entities.json'), 'entities.json'), { code: 'POLICY_INVALID', message: /character device/ });
  }));

test('a file over the limit is refused without being read', () =>
  withDir((dir) => {
    writeFileSync(join(dir, 'big.json'), 'x'.repeat(101));
    assert.throws(() => readPolicyFile(join(dir, 'big.json'), 'big.json', 100), { code: 'POLICY_INVALID', message: /101 bytes, over the 100-byte limit/ });
  }));

test('the signature moves when a file grows or is touched, and not otherwise', () =>
  withDir((dir) => {
    const file = join(dir, 'entities.json');
    writeFileSync(file, '[]');
    const first = signatureOf([file]);
    assert.equal(signatureOf([file]), first);
    appendFileSync(file, ' ');
    const grown = signatureOf([file]);
    assert.notEqual(grown, first);
    utimesSync(file, new Date(2020, 0, 1), new Date(2020, 0, 1));
    assert.notEqual(signatureOf([file]), grown);
    rmSync(file);
    assert.notEqual(signatureOf([file]), grown);
  }));

test('loadPolicyDir refuses a set whose entities.json or policy file is a FIFO or over the limit', () => {
  const dir = mkdtempSync(join(tmpdir(), 'writ-dir-files-set-'));
  cpSync(BUNDLED_DIR, dir, { recursive: true });
  try {
    assert.ok(loadPolicyDir(dir).ids.length > 0);
    assert.throws(() => loadPolicyDir(dir, { maxFileBytes: 10 }), { code: 'POLICY_INVALID', message: /over the 10-byte limit/ });
    rmSync(join(dir, 'entities.json'));
    execFileSync('mkfifo', [join(dir, 'entities.json')]);
    assert.throws(() => loadPolicyDir(dir), { code: 'POLICY_INVALID', message: /entities\.json is not a regular file/ });
    rmSync(join(dir, 'entities.json'));
    execFileSync('mkfifo', [join(dir, 'extra.cedar')]);
    assert.throws(() => loadPolicyDir(dir), { code: 'POLICY_INVALID', message: /extra\.cedar is not a regular file/ });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
