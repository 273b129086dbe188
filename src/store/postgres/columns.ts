/**
 * The indexed columns of a `records` row (src/store/postgres/schema.ts) from a record's index terms
 * (layout.ts indexTermsOf, the one definition of what a record is listed by), shared by the store's
 * writes and by `writ store copy`.
 */
import { indexTermsOf } from '../layout.js';
import { indexTerm } from '../seal.js';
import { uidKey } from '../../util/uid.js';
import { pack, unpacked } from './packing.js';

export interface RecordColumns {
  kind: string;
  actor: string | null;
  execution_id: string | null;
  task_id: string | null;
  trace_id: string | null;
}

/** The `records` columns of a record body; long terms are stored by digest (seal.ts indexTerm). */
export function recordColumns(body: Record<string, unknown>): RecordColumns {
  const c: RecordColumns = { kind: String(body.kind), actor: null, execution_id: null, task_id: null, trace_id: null };
  for (const [name, value] of indexTermsOf(body, uidKey)) {
    if (name === 'idx_kind') c.kind = value;
    else if (name === 'idx_actor') c.actor = indexTerm(value);
    else if (name === 'idx_exec') c.execution_id = indexTerm(value);
    else if (value.startsWith('task_id\n')) c.task_id = indexTerm(value.slice('task_id\n'.length));
    else c.trace_id = indexTerm(value.slice('trace_id\n'.length));
  }
  return c;
}

/** The INSERT of many records at once: `$1..$8` the arrays of seq, text, packed text and the columns. */
export const INSERT_RECORDS =
  'INSERT INTO records (seq, text, packed, kind, actor, execution_id, task_id, trace_id) SELECT * FROM unnest($1::bigint[], $2::text[], $3::bytea[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])';

/** INSERT_RECORDS's parameters for `rows`: each text plain (schema 1) or packed (schema 2, packing.ts). */
export function insertRecordsParams(rows: Array<{ seq: number; text: string } & RecordColumns>, packed: boolean): unknown[] {
  return [
    rows.map((r) => r.seq),
    rows.map((r) => (packed ? null : r.text)),
    rows.map((r) => (packed ? pack(r.text) : null)),
    rows.map((r) => r.kind),
    rows.map((r) => r.actor),
    rows.map((r) => r.execution_id),
    rows.map((r) => r.task_id),
    rows.map((r) => r.trace_id),
  ];
}

/** A record's text from its row (`text` and `packed`, as RECORD_TEXT selects them). */
export const RECORD_TEXT = 'text, packed';
export const recordText = (row: { text: string | null; packed: Buffer | null }): string => unpacked(row.text, row.packed);

/** A state row's JSON from its row (`value` and `packed`, as STATE_VALUE selects them). */
export const STATE_VALUE = 'value, packed';
export const stateValue = (row: { value: string | null; packed: Buffer | null }): string => unpacked(row.value, row.packed);

/** The `value` and `packed` parameter arrays of state rows: plain (schema 1) or packed (schema 2). */
export function stateValueParams(values: string[], packed: boolean): [Array<string | null>, Array<Buffer | null>] {
  return [values.map((v) => (packed ? null : v)), values.map((v) => (packed ? pack(v) : null))];
}
