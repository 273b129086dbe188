// The decision core and its services on the bundled policies and a fresh LMDB store in a temp dir, as
// `writ serve` wires them (src/pdp/services.ts), for the tests that drive the services in-process.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULTS, type WritConfig } from '../../src/config/config.js';
import { LmdbStore } from '../../src/store/lmdb/lmdb-store.js';
import { pdpServices, type PdpServices } from '../../src/pdp/services.js';
import { loadPolicyDir } from '../../src/policy/load.js';
import { REPO } from './server.js';

export async function openPdp(prefix: string): Promise<{ config: WritConfig; store: LmdbStore; pdp: PdpServices; close: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const config: WritConfig = {
    ...DEFAULTS,
    tokens: [],
    policy_dir: join(REPO, 'policies'),
    data_dir: join(dir, 'data'),
    evaluator_threads: 0,
    http_threads: 0,
  };
  const store = await LmdbStore.open({ dataDir: config.data_dir });
  const pdp = pdpServices(config, store, loadPolicyDir(config.policy_dir));
  await pdp.policy.recordStartup();
  return {
    config,
    store,
    pdp,
    async close() {
      await pdp.core.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
