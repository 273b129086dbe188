/**
 * Ledger record canonical form (docs/protocol.md §6). Pure.
 * hash = "sha256:" + hex SHA-256(0x00 ‖ JCS(record without `hash`)) — the RFC 9162 leaf hash, so a
 * record's hash is directly its Merkle leaf.
 */
import { bytesToHash, leafHash } from './merkle/hasher.js';
import { jcs } from '../util/canonical.js';

export const ZERO_HASH = `sha256:${'0'.repeat(64)}`;
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

/** The leaf hash of a record (any `hash` field present is ignored). */
export function recordHash(record: Record<string, unknown>): string {
  const { hash: _ignored, ...body } = record;
  return bytesToHash(leafHash(jcs(body)));
}

/** Adds `hash` to a complete record body. */
export function sealRecord(body: UnsealedRecord): LedgerRecord {
  return { ...body, hash: recordHash(body) };
}

/** The exact export line of a record: its JCS text (byte-stable). */
export function recordLine(record: LedgerRecord): string {
  return jcs(record);
}

const HASH_MEMBER = /"hash":"(sha256:[0-9a-f]{64})"/g;

/**
 * A record's C2SP log entry (docs/protocol.md §16): its JCS text without the `hash` member, so that the
 * entry's RFC 6962 leaf hash, SHA-256(0x00 ‖ entry), is the record's `hash`. Cut from the stored line
 * rather than re-serialised (a re-parse could round a number); undefined when no cut gives back the
 * hash it removed, i.e. the line does not hash to its own `hash`.
 */
export function recordEntry(line: string): Buffer | undefined {
  for (const m of line.matchAll(HASH_MEMBER)) {
    const at = m.index;
    const end = at + m[0].length;
    // The member and one comma beside it (the one before, unless it is the first member).
    const entry =
      line[at - 1] === ','
        ? line.slice(0, at - 1) + line.slice(end)
        : line[end] === ','
          ? line.slice(0, at) + line.slice(end + 1)
          : line.slice(0, at) + line.slice(end);
    const bytes = Buffer.from(entry, 'utf8');
    if (bytesToHash(leafHash(bytes)) === m[1]) return bytes;
  }
  return undefined;
}
