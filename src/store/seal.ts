/**
 * Sealing one ledger record (docs/protocol.md §6), shared by every store implementation so that the same
 * fields give byte-identical record text and hash whichever store appends them.
 */
import { jcsOrUndefined, sha256Hex } from '../util/canonical.js';
import { hashToBytes } from '../ledger/merkle/hasher.js';
import { subtreesCompletedBy, type SubtreeReader } from '../ledger/merkle/tree.js';
import type { LedgerRecord } from '../ledger/record.js';
import type { AppendedRecord } from './types.js';

const RESERVED_FIELDS = ['v', 'seq', 'ts', 'prev', 'hash'] as const;
// LMDB keys are at most 1978 bytes; index terms longer than this are indexed by their digest.
const MAX_INDEX_TERM_BYTES = 480;
export const MAX_TABLE_KEY_BYTES = 1900;

/**
 * Whether a string can be a table key. A read with any other string finds nothing (no such key can have
 * been written), so a long id in a path or a query is a 404, not a store failure (LMDB throws on keys
 * past its limit).
 */
export function isTableKey(key: unknown): key is string {
  return typeof key === 'string' && key !== '' && Buffer.byteLength(key, 'utf8') <= MAX_TABLE_KEY_BYTES;
}

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

/** The members a store assigns, in JCS order: where they fall among a record's own members. */
const ASSIGNED = ['hash', 'prev', 'seq', 'ts', 'v'] as const;

/**
 * A record's own members (everything but the store-assigned v, seq, ts, prev, hash) as canonical text,
 * grouped by where the assigned members fall among them in JCS order: `parts[i]` holds, comma-joined,
 * the members that sort after ASSIGNED[i-1] and before ASSIGNED[i]. The expensive part of sealing —
 * canonicalising the values — is done here, off the write path when an HTTP front thread does it
 * (src/front/), so the one ledger writer only joins the parts and hashes.
 */
export interface PresealedMembers {
  readonly parts: readonly string[];
}

/**
 * Canonicalises a record's own members (docs/protocol.md §6). JCS writes an object as its members
 * sorted by key (UTF-16 code units, as Array.prototype.sort), each as JSON-string(key) ":" JCS(value),
 * members whose value has no JSON form left out; so the text with and without `hash` share every
 * member's canonical text, and one canonicalisation serves both (two JCS passes and a JSON.parse would
 * cost ~8 % of a decision's CPU).
 */
export function presealMembers(fields: { kind: string } & Record<string, unknown>): PresealedMembers {
  checkAppendFields(fields);
  const keys = Object.keys(fields).sort();
  const parts: string[][] = [[], [], [], [], [], []];
  let slot = 0;
  for (const k of keys) {
    while (slot < ASSIGNED.length && k > ASSIGNED[slot]!) slot++;
    const v = canonicalizeMember(fields[k]);
    if (v !== undefined) parts[slot]!.push(`${JSON.stringify(k)}:${v}`);
  }
  return { parts: parts.map((p) => p.join(',')) };
}

/**
 * Seals the record a store appends at `seq` after `head` (docs/protocol.md §6), shared by every store so
 * that the same fields give byte-identical record text, hash and Merkle nodes whichever store appends
 * them: assigns v=1, seq, ts (now), prev; the hash is SHA-256(0x00 ‖ JCS(record without hash)) and the
 * text JCS(record with hash). `presealed`, when given, is presealMembers(fields) computed earlier
 * (elsewhere); `fields` then serve only the store's indexes (kind, actor, execution id).
 */
export function sealNextRecord(
  fields: { kind: string } & Record<string, unknown>,
  seq: number,
  head: string,
  reader: SubtreeReader,
  presealed?: PresealedMembers,
): SealedRecord {
  const p = (presealed ?? presealMembers(fields)).parts;
  if (p.length !== ASSIGNED.length + 1) throw new TypeError('presealed members need one part per gap between assigned members');
  const ts = new Date().toISOString();
  const body: Record<string, unknown> = { ...fields, v: 1, seq, ts, prev: head };
  const after = [`"prev":${JSON.stringify(head)}`, `"seq":${seq}`, `"ts":${JSON.stringify(ts)}`, '"v":1'];
  const tail = [p[1]!, after[0]!, p[2]!, after[1]!, p[3]!, after[2]!, p[4]!, after[3]!, p[5]!];
  const unsealed = `{${joinMembers([p[0]!, ...tail])}}`;
  const hash = `sha256:${sha256Hex(`\u0000${unsealed}`)}`;
  const leaf = hashToBytes(hash);
  const text = `{${joinMembers([p[0]!, `"hash":${JSON.stringify(hash)}`, ...tail])}}`;
  return { body, hash, text, leaf, completed: subtreesCompletedBy(seq, leaf, reader) };
}

/** Comma-joins the non-empty member groups. */
function joinMembers(groups: string[]): string {
  let out = '';
  for (const g of groups) if (g !== '') out = out === '' ? g : `${out},${g}`;
  return out;
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
 * A member value whose JCS text is already known (a decision's envelope and arguments were
 * canonicalised for their digests at admission): sealing uses the text instead of canonicalising the
 * value again. `text` must be JCS of the value; only sealing reads it.
 */
export class KnownJcs {
  constructor(readonly text: string) {}
}

/** JCS of one member value; undefined when JCS leaves the member out (undefined, functions, symbols). */
function canonicalizeMember(v: unknown): string | undefined {
  if (v instanceof KnownJcs) return v.text;
  return jcsOrUndefined(v);
}
