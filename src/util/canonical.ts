/**
 * The one canonicalization (RFC 8785 JCS, via canonicalize@5.1.0) and the one digest helper.
 * Every hash in writ — bindings, envelope digests, versions, ledger records — goes through here.
 */
import { hash } from 'node:crypto';
import canonicalizeImpl from 'canonicalize';

const canonicalizeFn = canonicalizeImpl;

/** RFC 8785 canonical JSON text of a JSON value. Throws on values JSON cannot carry. */
export function jcs(value: unknown): string {
  const text = jcsOrUndefined(value);
  if (typeof text !== 'string') throw new TypeError('value has no JSON form');
  return text;
}

/** String.prototype.isWellFormed (ES2024, native in Node 20) — typed here because the build's lib is ES2022. */
export const isWellFormed = (s: string): boolean => (s as unknown as { isWellFormed(): boolean }).isWellFormed();

/**
 * JCS of a value, or undefined where JCS (like JSON.stringify) leaves a member out: undefined, a
 * function, a symbol. The leaves a ledger record is mostly made of are written here directly, without
 * the library's per-call set-up: RFC 8785 §3.2.2.2 serializes a well-formed string exactly as
 * ECMAScript's JSON.stringify does (the library refuses a lone surrogate, and so does this), a boolean
 * as its literal, and an array or a flat record of such strings member by member. Everything else — numbers, null,
 * objects, anything with a toJSON — is the library's (test/binding/canonical-fast-path.test.ts holds the two equal).
 */
export function jcsOrUndefined(value: unknown): string | undefined {
  if (typeof value === 'string') return canonicalString(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Array.isArray(value) && Object.getPrototypeOf(value) === Array.prototype && (value as { toJSON?: unknown }).toJSON === undefined) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      const element: unknown = value[i];
      if (typeof element !== 'string' || !Object.hasOwn(value, i)) return canonicalizeFn(value);
      out += (i === 0 ? '' : ',') + canonicalString(element);
    }
    return `${out}]`;
  }
  if (
    value !== null &&
    typeof value === 'object' &&
    Object.getPrototypeOf(value) === Object.prototype &&
    (value as { toJSON?: unknown }).toJSON === undefined
  ) {
    // A flat record of strings (an entity uid, a small map): members sorted by UTF-16 code units, as JCS
    // orders them. Anything else inside is checked for before sorting, so the library does not sort twice.
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record);
    for (const key of keys) if (typeof record[key] !== 'string') return canonicalizeFn(value);
    keys.sort();
    let out = '{';
    for (let i = 0; i < keys.length; i++) out += `${i === 0 ? '' : ','}${canonicalString(keys[i]!)}:${canonicalString(record[keys[i]!] as string)}`;
    return `${out}}`;
  }
  return canonicalizeFn(value);
}

function canonicalString(value: string): string {
  if (!isWellFormed(value)) throw new Error('Lone surrogate is not allowed');
  return JSON.stringify(value);
}

/** Lower-case hex SHA-256 of a UTF-8 string or raw bytes. */
export function sha256Hex(data: string | Uint8Array): string {
  // One-shot (Node ≥ 20.12): no Hash object per digest, on every request's several digests.
  return hash('sha256', data, 'hex');
}

/** `sha256:` + hex SHA-256 — the tagged form used for every digest in the contract. */
export function sha256Tagged(data: string | Uint8Array): string {
  return `sha256:${sha256Hex(data)}`;
}

/** `sha256:` + hex SHA-256 of `domain + JCS(value)` (domain may be ''). */
export function digestOf(domain: string, value: unknown): string {
  return sha256Tagged(domain + jcs(value));
}
