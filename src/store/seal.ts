/**
 * Sealing one ledger record (docs/protocol.md §6), shared by every store implementation so that the same
 * fields give byte-identical record text and hash whichever store appends them.
 */
import { createHash } from 'node:crypto';
import canonicalizeImpl from 'canonicalize';
import { sha256Hex } from '../util/canonical.js';
import { hashToBytes, subtreesCompletedBy, type SubtreeReader } from '../ledger/merkle.js';
import type { LedgerRecord } from '../ledger/record.js';
import type { AppendedRecord } from './types.js';

const RESERVED_FIELDS = ['v', 'seq', 'ts', 'prev', 'hash'] as const;
// LMDB keys are at most 1978 bytes; index terms longer than this are indexed by their digest.
const MAX_INDEX_TERM_BYTES = 480;
export const MAX_TABLE_KEY_BYTES = 1900;

/** The term an index stores for a value (long values by digest; lookups map the same way). */
export function indexTerm(value: string): string {
  return Buffer.byteLength(value, 'utf8') > MAX_INDEX_TERM_BYTES ? `sha256:${sha256Hex(value)}#` : value;
}

/** Refuses fields a caller may not set (the store assigns them) and records without a kind. */
export function checkAppendFields(fields: { kind: string } & Record<string, unknown>): void {
  if (fields === null || typeof fields !== 'object') throw new TypeError('append needs a fields object');
  if (typeof fields.kind !== 'string' || fields.kind === '') throw new TypeError('a record needs a non-empty string kind');
  for (const f of RESERVED_FIELDS) {
    if (f in fields) throw new TypeError(`record field '${f}' is assigned by the store`);
  }
}

const LEAF_PREFIX = Buffer.from([0x00]);

/** One appended record as sealed, before a store files it (see sealNextRecord). */
export interface SealedRecord {
  /** The record without `hash`, as a store indexes it (kind, actor, execution id). */
  body: Record<string, unknown>;
  hash: string;
  /** The stored text, JCS(record with hash). */
  text: string;
  /** The Merkle leaf, the hash's bytes. */
  leaf: Buffer;
  /** The Merkle nodes above the leaf that this record completes. */
  completed: Array<{ level: number; index: number; hash: Buffer }>;
}

/**
 * Seals the record a store appends at `seq` after `head` (docs/protocol.md §6), shared by every store so
 * that the same fields give byte-identical record text, hash and Merkle nodes whichever store appends
 * them: assigns v=1, seq, ts (now), prev; the hash is SHA-256(0x00 ‖ JCS(record without hash)) and the
 * text JCS(record with hash), both from one canonicalisation of each top-level member (issue 8: this
 * was two JCS passes and a JSON.parse, ~8 % of a decision's CPU). JCS writes an object as its members
 * sorted by key (UTF-16 code units, as Array.prototype.sort), each as JSON-string(key) ":" JCS(value),
 * members whose value has no JSON form left out, so the text with and without `hash` share every
 * member's canonical text (equal to recordHash + jcs, checked by the store tests and the ledger vectors).
 */
export function sealNextRecord(fields: { kind: string } & Record<string, unknown>, seq: number, head: string, reader: SubtreeReader): SealedRecord {
  checkAppendFields(fields);
  const body: Record<string, unknown> = { ...fields, v: 1, seq, ts: new Date().toISOString(), prev: head };
  const keys = Object.keys(body).sort();
  const members: string[] = [];
  let hashAt = keys.length; // index in `members` where the hash member goes
  for (const k of keys) {
    if (hashAt === keys.length && k > 'hash') hashAt = members.length;
    const v = canonicalizeMember(body[k]);
    if (v !== undefined) members.push(`${JSON.stringify(k)}:${v}`);
  }
  if (hashAt === keys.length) hashAt = members.length;
  const unsealed = `{${members.join(',')}}`;
  const hash = 'sha256:' + createHash('sha256').update(LEAF_PREFIX).update(unsealed, 'utf8').digest('hex');
  members.splice(hashAt, 0, `"hash":${JSON.stringify(hash)}`);
  const leaf = hashToBytes(hash);
  return { body, hash, text: `{${members.join(',')}}`, leaf, completed: subtreesCompletedBy(seq, leaf, reader) };
}

/** What append returns: the record as stored (undefined fields dropped exactly as JCS drops them), parsed only if asked for. */
export function appendedRecord(seq: number, hash: string, text: string): AppendedRecord {
  let record: LedgerRecord | undefined;
  return {
    seq,
    hash,
    get record(): LedgerRecord {
      return (record ??= JSON.parse(text) as LedgerRecord);
    },
  };
}

/**
 * A member value whose JCS text was already computed (by an HTTP front thread, src/front/), so the
 * single ledger writer only joins and hashes: `text` must be exactly JCS of the value it stands for
 * (the front computes it with the same canonicalize). Only `append` reads it; nothing indexes it.
 */
export class CanonicalJson {
  constructor(readonly text: string) {}
}

/** JCS of one member value; undefined when JCS leaves the member out (undefined, functions, symbols). */
function canonicalizeMember(v: unknown): string | undefined {
  if (v instanceof CanonicalJson) return v.text;
  return (canonicalizeImpl as unknown as (x: unknown) => string | undefined)(v);
}

