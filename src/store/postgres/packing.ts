/**
 * How a schema-2 database holds record texts and state rows (schema.ts): raw DEFLATE (RFC 1951, Node's
 * zlib) against the store dictionary (../dictionary.ts), in the `packed` bytea column beside a NULL
 * text column. PostgreSQL itself compresses only tuples over about 2 KB (TOAST_TUPLE_THRESHOLD; a lower
 * `toast_tuple_target` does not start it), so a 1.5 KB decision would otherwise be stored as it is.
 * A schema-1 database keeps the plain `text` / `value` column; readers take whichever the row has.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { RECORD_DICTIONARY } from '../dictionary.js';

/** The packed form of a record's text or a row's JSON. */
export function pack(text: string): Buffer {
  return deflateRawSync(Buffer.from(text, 'utf8'), { dictionary: RECORD_DICTIONARY });
}

/** The text of a row: its plain column (schema 1) or its packed column unpacked (schema 2), byte for byte. */
export function unpacked(plain: string | null, packed: Buffer | null): string {
  if (plain !== null) return plain;
  if (packed === null) throw new TypeError('a row holds neither text nor packed text');
  return inflateRawSync(packed, { dictionary: RECORD_DICTIONARY }).toString('utf8');
}
