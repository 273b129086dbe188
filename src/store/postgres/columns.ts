/**
 * The indexed columns of a `records` row (src/store/postgres/schema.ts) from a record's index terms
 * (layout.ts indexTermsOf, the one definition of what a record is listed by), shared by the store's
 * writes and by `writ store copy`.
 */
import { indexTermsOf } from '../layout.js';
import { indexTerm } from '../seal.js';
import { uidKey } from '../../util/uid.js';

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

/** The INSERT of many records at once: `$1..$7` the arrays of seq, text and the columns. */
export const INSERT_RECORDS =
  'INSERT INTO records (seq, text, kind, actor, execution_id, task_id, trace_id) SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])';

/** INSERT_RECORDS's parameters for `rows`. */
export function insertRecordsParams(rows: Array<{ seq: number; text: string } & RecordColumns>): unknown[] {
  return [
    rows.map((r) => r.seq),
    rows.map((r) => r.text),
    rows.map((r) => r.kind),
    rows.map((r) => r.actor),
    rows.map((r) => r.execution_id),
    rows.map((r) => r.task_id),
    rows.map((r) => r.trace_id),
  ];
}
