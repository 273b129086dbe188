/**
 * The one canonicalization (RFC 8785 JCS, via canonicalize@5.1.0) and the one digest helper.
 * Every hash in writ — bindings, envelope digests, versions, ledger records — goes through here.
 */
import { hash } from 'node:crypto';
import canonicalizeImpl from 'canonicalize';

const canonicalizeFn = canonicalizeImpl as unknown as (v: unknown) => string | undefined;

/** RFC 8785 canonical JSON text of a JSON value. Throws on values JSON cannot carry. */
export function jcs(value: unknown): string {
  const text = canonicalizeFn(value);
  if (typeof text !== 'string') throw new TypeError('value has no JSON form');
  return text;
}

/** Lower-case hex SHA-256 of a UTF-8 string or raw bytes. */
export function sha256Hex(data: string | Uint8Array): string {
  // One-shot (Node ≥ 20.12): no Hash object per digest, on every request's several digests.
  return hash('sha256', data, 'hex');
}

/** `sha256:` + hex SHA-256 — the tagged form used for every digest in the contract. */
export function sha256Tagged(data: string | Uint8Array): string {
  return 'sha256:' + sha256Hex(data);
}

/** `sha256:` + hex SHA-256 of `domain + JCS(value)` (domain may be ''). */
export function digestOf(domain: string, value: unknown): string {
  return sha256Tagged(domain + jcs(value));
}
