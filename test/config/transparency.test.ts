import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/config.js';

const dir = mkdtempSync(join(tmpdir(), 'writ-config-c2sp-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** loadConfig of a config file holding `content` (and no tokens: these keys are checked all the same). */
function withConfigFile(content: Record<string, unknown>, fn: (path: string) => void): void {
  const path = join(dir, `config-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, JSON.stringify(content));
  fn(path);
}

test('config: log_origin, public_tiles and witnesses (docs/protocol.md §16)', async () => {
  const { generateKeyPairSync } = await import('node:crypto');
  const { encodeVkey, SIG_COSIGNATURE_V1, SIG_ED25519 } = await import('../../src/transparency/note.js');
  const { rawPublicKey } = await import('../../src/ledger/signing.js');
  const pub = rawPublicKey(generateKeyPairSync('ed25519').privateKey);
  const witness = encodeVkey('w1.example/w', SIG_COSIGNATURE_V1, pub);
  withConfigFile({}, (path) => {
    const { config } = loadConfig({ configPath: path });
    assert.deepEqual([config.log_origin, config.public_tiles, config.witnesses], [null, false, []]);
  });
  withConfigFile({ log_origin: 'pdp.example.com/ledger', public_tiles: true, witnesses: [{ url: 'http://w1.example:8710/', vkey: witness }] }, (path) => {
    const { config } = loadConfig({ configPath: path });
    assert.equal(config.log_origin, 'pdp.example.com/ledger');
    assert.deepEqual(config.witnesses, [{ url: 'http://w1.example:8710', vkey: witness }]);
  });
  for (const [bad, why] of [
    [{ log_origin: 'has space' }, /log_origin/],
    [{ log_origin: 'a+b' }, /log_origin/],
    [{ public_tiles: 'yes' }, /public_tiles/],
    [{ witnesses: {} }, /witnesses/],
    [{ witnesses: [{ url: 'ftp://w', vkey: witness }] }, /witnesses\[0\]\.url/],
    [{ witnesses: [{ url: 'http://w', vkey: encodeVkey('w', SIG_ED25519, pub) }] }, /type 0x04/],
    [{ witnesses: [{ url: 'http://w', vkey: 'nonsense' }] }, /witnesses\[0\]\.vkey/],
    [
      {
        witnesses: [
          { url: 'http://w', vkey: witness },
          { url: 'http://v', vkey: witness },
        ],
      },
      /twice/,
    ],
    [{ witnesses: [{ url: 'http://w', vkey: witness, extra: 1 }] }, /unknown key/],
  ] as const) {
    withConfigFile(bad, (path) => assert.throws(() => loadConfig({ configPath: path }), why, JSON.stringify(bad)));
  }
});
