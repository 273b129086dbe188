/**
 * Opens the store a config names (docs/protocol.md §9): PostgreSQL when `database_url` is set (replicas
 * share it), otherwise the LMDB store of `data_dir`, exactly as before.
 */
import { LmdbStore } from './lmdb/lmdb-store.js';
import type { FaultHooks } from './machine/group-commit.js';
import { PgStore } from './postgres/pg-store.js';
import type { LedgerStore } from './types.js';

export interface OpenStoreOptions {
  dataDir: string;
  databaseUrl?: string | null;
  durability?: 'sync' | 'flushed';
  /** How a new LMDB data dir holds its values (config `store_compression`); an existing one keeps its format. */
  compression?: 'none' | 'lz4';
  writeTimeoutMs?: number;
  faults?: FaultHooks;
}

export async function openStore(o: OpenStoreOptions): Promise<LedgerStore> {
  if (o.databaseUrl) {
    return PgStore.open({
      url: o.databaseUrl,
      ...(o.writeTimeoutMs !== undefined ? { writeTimeoutMs: o.writeTimeoutMs } : {}),
      ...(o.faults ? { faults: o.faults } : {}),
    });
  }
  return LmdbStore.open({
    dataDir: o.dataDir,
    ...(o.durability ? { durability: o.durability } : {}),
    ...(o.compression ? { format: o.compression === 'lz4' ? ('2' as const) : ('1' as const) } : {}),
    ...(o.writeTimeoutMs !== undefined ? { writeTimeoutMs: o.writeTimeoutMs } : {}),
    ...(o.faults ? { faults: o.faults } : {}),
  });
}
