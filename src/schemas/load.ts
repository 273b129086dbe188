/**
 * The JSON Schema files of `schemas/` (draft 2020-12), read once. Both the request validators
 * (validate.ts) and the OpenAPI document (openapi.ts) are built from these same files, so the
 * documentation cannot drift from what is enforced.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Every schema file, by file name. `defs.json` holds the shared `$defs`. */
export const SCHEMA_FILES = [
  'defs.json',
  'envelope.json',
  'decision-request.json',
  'decision-response.json',
  'approval-request.json',
  'approval-response.json',
  'outcome-request.json',
  'reconcile-request.json',
  'confirm-request.json',
  'events-request.json',
  'entity-upsert.json',
  'entity.json',
  'execution.json',
  'error.json',
  'ledger-record.json',
  'checkpoint.json',
  'keys.json',
  'proof.json',
  'records-page.json',
  'authzen-evaluation-request.json',
  'authzen-evaluations-request.json',
  'authzen-evaluation-response.json',
  'authzen-evaluations-response.json',
  'authzen-configuration.json',
  'tools-visible-request.json',
] as const;

export type SchemaFile = (typeof SCHEMA_FILES)[number];

/** Base of every schema `$id`; `$ref`s between files are relative to it. */
export const SCHEMA_ID_BASE = 'https://writ.example/schemas/v1/';

export type JsonSchema = Record<string, unknown>;

// Compiled code runs from dist/src/schemas/ (repo root three levels up); sources run from
// src/schemas/ (two levels up) under a TS loader.
function schemaDir(): URL {
  for (const rel of ['../../../schemas/', '../../schemas/']) {
    const dir = new URL(rel, import.meta.url);
    if (existsSync(fileURLToPath(new URL('defs.json', dir)))) return dir;
  }
  throw new Error('writ: schemas/ directory not found next to the build');
}

let cache: ReadonlyMap<SchemaFile, JsonSchema> | undefined;

/** All schemas, parsed. The objects are shared: do not mutate them (clone first). */
export function loadSchemas(): ReadonlyMap<SchemaFile, JsonSchema> {
  if (cache) return cache;
  const dir = schemaDir();
  const map = new Map<SchemaFile, JsonSchema>();
  for (const file of SCHEMA_FILES) {
    const schema = JSON.parse(readFileSync(fileURLToPath(new URL(file, dir)), 'utf8')) as JsonSchema;
    if (schema.$id !== SCHEMA_ID_BASE + file) throw new Error(`writ: schemas/${file} has $id ${String(schema.$id)}`);
    map.set(file, schema);
  }
  cache = map;
  return map;
}

/** The record kinds of the ledger (docs/protocol.md §6), as `ledger-record.json` enumerates them. */
export const LEDGER_RECORD_KINDS = [
  'decision',
  'refusal',
  'approval',
  'revocation',
  'outcome',
  'reconciliation',
  'confirmation',
  'event',
  'entity',
  'policy',
  'key',
  'checkpoint',
  'chain_break',
] as const;
export type LedgerRecordKind = (typeof LEDGER_RECORD_KINDS)[number];
