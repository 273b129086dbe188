/**
 * The flags of the commands that open a deployment's store and key offline (`writ keys rotate`,
 * `writ ledger tiles`): --config, --data-dir, --database-url, --signing-key-file, and the config they give.
 */
import { loadConfig, type WritConfig } from '../config/config.js';

export const STORE_FLAG_OPTIONS = {
  config: { type: 'string' },
  'data-dir': { type: 'string' },
  'database-url': { type: 'string' },
  'signing-key-file': { type: 'string' },
  out: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export interface StoreFlags {
  config?: string;
  'data-dir'?: string;
  'database-url'?: string;
  'signing-key-file'?: string;
  out?: string;
  help?: boolean;
}

/** The config the flags name, flags overriding the file (throws WritError INVALID_REQUEST). */
export function configOfStoreFlags(values: StoreFlags): WritConfig {
  return loadConfig({
    ...(values.config !== undefined ? { configPath: values.config } : {}),
    ...(values['data-dir'] !== undefined ? { dataDir: values['data-dir'] } : {}),
    ...(values['database-url'] !== undefined ? { databaseUrl: values['database-url'] } : {}),
    ...(values['signing-key-file'] !== undefined ? { signingKeyFile: values['signing-key-file'] } : {}),
  }).config;
}
