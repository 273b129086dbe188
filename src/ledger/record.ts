/**
 * Ledger record canonical form (docs/protocol.md §6). Pure.
 * hash = "sha256:" + hex SHA-256(0x00 ‖ JCS(record without `hash`)) — the RFC 9162 leaf hash, so a
 * record's hash is directly its Merkle leaf.
 */
import { createHash } from 'node:crypto';
import { jcs } from '../util/canonical.js';

export const ZERO_HASH = 'sha256:' + '0'.repeat(64);
export const RECORD_VERSION = 1;

/** Fields every record has; kind-specific fields sit beside them. */
export interface RecordHeader {
  v: 1;
  seq: number;
  ts: string;
  kind: string;
  prev: string;
}
export type LedgerRecord = RecordHeader & { hash: string } & Record<string, unknown>;
export type UnsealedRecord = RecordHeader & Record<string, unknown>;

const LEAF_PREFIX = Buffer.from([0x00]);

/** The leaf hash of a record (any `hash` field present is ignored). */
export function recordHash(record: Record<string, unknown>): string {
  const { hash: _ignored, ...body } = record;
  const h = createHash('sha256');
  h.update(LEAF_PREFIX);
  h.update(jcs(body), 'utf8');
  return 'sha256:' + h.digest('hex');
}

/** Adds `hash` to a complete record body. */
export function sealRecord(body: UnsealedRecord): LedgerRecord {
  return { ...body, hash: recordHash(body) } as LedgerRecord;
}

/** The exact export line of a record: its JCS text (byte-stable). */
export function recordLine(record: LedgerRecord): string {
  return jcs(record);
}
