/**
 * RFC 8785 (JCS) canonical JSON text, written for the browser on purpose: the console re-derives
 * ledger hashes without sharing a line of code with the sidecar's own canonicalizer, so a bug in
 * one is caught by the other. Records hold only strings, integers, booleans, null, arrays and
 * objects; numbers still follow the recipe (ECMAScript Number → string, which is what JCS asks).
 */

export class CanonicalizationError extends Error {}

const SHORT_ESCAPES: Record<number, string> = { 0x08: '\\b', 0x09: '\\t', 0x0a: '\\n', 0x0c: '\\f', 0x0d: '\\r', 0x22: '\\"', 0x5c: '\\\\' };

/** A JSON string literal as JCS writes it: only `"`, `\` and controls below U+0020 are escaped. */
function canonicalString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const unit = s.charCodeAt(i);
    const short = SHORT_ESCAPES[unit];
    if (short !== undefined) out += short;
    else if (unit < 0x20) out += `\\u${unit.toString(16).padStart(4, '0')}`;
    else if (unit >= 0xd800 && unit <= 0xdbff) {
      const low = s.charCodeAt(i + 1);
      if (!(low >= 0xdc00 && low <= 0xdfff)) throw new CanonicalizationError('a string holds a lone surrogate');
      out += s[i]! + s[i + 1]!;
      i++;
    } else if (unit >= 0xdc00 && unit <= 0xdfff) throw new CanonicalizationError('a string holds a lone surrogate');
    else out += s[i]!;
  }
  return `${out}"`;
}

function canonicalNumber(n: number): string {
  if (!Number.isFinite(n)) throw new CanonicalizationError('NaN and infinities have no JSON form');
  // ECMAScript's Number::toString is JCS's number format (and writes -0 as "0").
  return String(n);
}

/** Property names sort by their UTF-16 code units, which is how JS compares strings. */
function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function canonicalize(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      return canonicalNumber(value);
    case 'string':
      return canonicalString(value);
    case 'object': {
      if (Array.isArray(value)) return `[${value.map(canonicalize).join(',')}]`;
      const entries = Object.keys(value).sort(byCodeUnits);
      const parts: string[] = [];
      for (const key of entries) {
        const member = (value as Record<string, unknown>)[key];
        if (member === undefined) continue;
        parts.push(`${canonicalString(key)}:${canonicalize(member)}`);
      }
      return `{${parts.join(',')}}`;
    }
    default:
      throw new CanonicalizationError(`a ${typeof value} has no JSON form`);
  }
}
