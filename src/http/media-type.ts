/**
 * The one test of a JSON body's media type, for the sidecar's app and the HTTP fronts alike:
 * `application/json` or any `application/*+json`, with parameters; a `charset` parameter, when given,
 * must name UTF-8 — JSON exchanged between systems is UTF-8 (RFC 8259 §8.1), and a body declared in
 * another charset would otherwise be read as UTF-8 against its word (415, not a silent misreading).
 */
const JSON_MEDIA_TYPE = /^application\/([a-z0-9.+-]*\+)?json\s*(;.*)?$/i;
const CHARSET = /;\s*charset\s*=\s*("?)([^";\s]*)\1/i;

export function isJsonMediaType(header: string | undefined): boolean {
  if (header === undefined) return false;
  const type = header.trim();
  if (!JSON_MEDIA_TYPE.test(type)) return false;
  const charset = CHARSET.exec(type);
  return charset === null || /^utf-?8$/i.test(charset[2]!);
}
