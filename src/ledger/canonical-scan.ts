/**
 * The verifier's canonical-line scanner (docs/protocol.md §6): one allocation-free pass over a ledger
 * line's text that decides whether it is exactly the JCS text of a JSON object, and notes where each
 * top-level member sits.
 */
import { MAX_ARGUMENT_DEPTH } from '../binding/index.js';
import { jcs } from '../util/canonical.js';

// ---------------------------------------------------------------------------------------------
// The hot path. A canonical line is checked by one allocation-free scan of its text instead of
// JSON.parse + re-serialisation: the scan validates the JSON grammar and every RFC 8785 rule (no
// whitespace, keys strictly increasing by UTF-16 code units, numbers spelled as ECMAScript
// Number::toString, strings escaped exactly as JSON.stringify does), and notes where each top-level
// member sits. Only the few values a check needs are then decoded. A line the scan rejects is
// re-judged by the obvious reference (JSON.parse, then jcs() === line) before it is called MALFORMED,
// so the scan can only ever be too strict, never decide a failure on its own.
// ---------------------------------------------------------------------------------------------

/**
 * One scan of one line: its scratch state while the scan runs, and afterwards (when the line is
 * canonical) the line's top-level members, read by name. Each scan has its own, so scans share
 * nothing (the verifier's worker threads, a caller holding two lines).
 */
export class CanonicalLine {
  /** Per top-level member, four positions: key text (inside the quotes) start and end, value token start and end. */
  readonly spans: number[] = [];
  /** Span of the top-level `arguments` value while and after it is scanned (-1 when the line has none). */
  argumentsStart = -1;
  argumentsEnd = -1;
  /**
   * Set when the stored arguments hold something §3 admission must judge: a number token other than a
   * short plain integer (≤ 15 digits, so safe), or a container deeper than MAX_ARGUMENT_DEPTH (anywhere
   * in the line: rare, and then admission simply runs). Without it, canonical arguments are admitted as
   * they stand, and verify pays nothing per decision for re-admission.
   */
  argumentsNeedAdmission = false;
  /** Set by scanString when the string it just scanned contains an escape. */
  lastStringEscaped = false;
  /** The line has no SPECIAL_STRING_UNIT: every string ends at the next quote. */
  readonly plainStrings: boolean;

  constructor(readonly text: string) {
    this.plainStrings = !SPECIAL_STRING_UNIT.test(text);
  }

  /** Index (into spans, by 4) of the top-level member named `name`, or -1. */
  #member(name: string): number {
    const spans = this.spans;
    for (let m = 0; m < spans.length; m += 4) {
      const start = spans[m]!;
      if (spans[m + 1]! - start === name.length && this.text.startsWith(name, start)) return m;
    }
    return -1;
  }

  /** The raw value token of a member (undefined when absent). */
  token(name: string): string | undefined {
    const m = this.#member(name);
    return m < 0 ? undefined : this.text.slice(this.spans[m + 2], this.spans[m + 3]);
  }

  /** A member's value if it is a JSON string (undefined when absent or not a string). */
  string(name: string): string | undefined {
    const m = this.#member(name);
    if (m < 0) return undefined;
    const text = this.text;
    const start = this.spans[m + 2]!;
    const end = this.spans[m + 3]!;
    if (text.charCodeAt(start) !== Ch.Quote) return undefined;
    const inner = text.slice(start + 1, end - 1);
    return inner.includes('\\') ? (JSON.parse(text.slice(start, end)) as string) : inner;
  }

  /** The line without its top-level member `name`: the JCS text of the object without it (the line when absent). */
  without(name: string): string {
    const m = this.#member(name);
    const text = this.text;
    if (m < 0) return text;
    const memberStart = this.spans[m]! - 1;
    const memberEnd = this.spans[m + 3]!;
    if (text.charCodeAt(memberStart - 1) === Ch.Comma) return text.slice(0, memberStart - 1) + text.slice(memberEnd);
    if (text.charCodeAt(memberEnd) === Ch.Comma) return text.slice(0, memberStart) + text.slice(memberEnd + 1);
    return text.slice(0, memberStart) + text.slice(memberEnd);
  }

  /** JCS text of the record without `hash`. */
  withoutHash(): string {
    return this.without('hash');
  }
}

enum Ch {
  Quote = 0x22,
  Backslash = 0x5c,
  Comma = 0x2c,
  Colon = 0x3a,
  OpenBrace = 0x7b,
  CloseBrace = 0x7d,
  OpenBracket = 0x5b,
  CloseBracket = 0x5d,
  Minus = 0x2d,
  Zero = 0x30,
  Nine = 0x39,
  Dot = 0x2e,
}

function isHexLower(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66);
}

// The scanners take the scan, the text and a position and return the position after the token, or -1
// when the token is not canonical; positions live in locals (a field store per character would cost
// in the hot loop).

/**
 * Units that need a closer look inside a string: controls, the backslash, surrogates. Most lines have
 * none at all; one native regex pass over the line says so, and then every string of the line ends at
 * the next quote (found by indexOf), which is several times faster than a per-unit loop in JS.
 */
const SPECIAL_STRING_UNIT = /[\u0000-\u001f\\\ud800-\udfff]/;

/**
 * Scans a canonical string token whose opening quote is at `i`. Canonical strings are
 * JSON.stringify's spelling of well-formed UTF-16: the short escapes for " \ \b \f \n \r \t, \u00xx
 * (lower-case hex) for the other controls, every other unit raw. Lone surrogates have no JCS form at
 * all (canonicalize refuses them), so they fail too.
 */
function scanString(st: CanonicalLine, s: string, i: number): number {
  if (st.plainStrings) {
    const close = s.indexOf('"', i + 1);
    st.lastStringEscaped = false;
    return close < 0 ? -1 : close + 1;
  }
  const end = s.length;
  let escaped = false;
  i++; // opening quote
  for (;;) {
    // Tight loop over the plain units that make up nearly all of a record's text.
    let c = s.charCodeAt(i);
    while (c >= 0x20 && c !== Ch.Quote && c !== Ch.Backslash && c < 0xd800) c = s.charCodeAt(++i);
    if (i >= end) return -1;
    if (c === Ch.Quote) {
      st.lastStringEscaped = escaped;
      return i + 1;
    }
    if (c === Ch.Backslash) {
      escaped = true;
      const e = s.charCodeAt(i + 1);
      if (e === 0x75 /* u */) {
        if (i + 6 > end) return -1;
        let v = 0;
        for (let k = 2; k < 6; k++) {
          const h = s.charCodeAt(i + k);
          if (!isHexLower(h)) return -1;
          v = v * 16 + (h <= 0x39 ? h - 0x30 : h - 0x57);
        }
        // Only controls without a short escape are written \u00xx.
        if (!(v < 0x20 && v !== 0x08 && v !== 0x09 && v !== 0x0a && v !== 0x0c && v !== 0x0d)) return -1;
        i += 6;
      } else {
        // JSON.stringify's short escapes only; \/ is not canonical.
        if (e !== Ch.Quote && e !== Ch.Backslash && e !== 0x62 && e !== 0x66 && e !== 0x6e && e !== 0x72 && e !== 0x74) return -1;
        i += 2;
      }
      continue;
    }
    if (c < 0x20) return -1;
    if (c > 0xdfff) {
      i++;
      continue;
    }
    // A surrogate: only a raw high one followed by a raw low one.
    const low = s.charCodeAt(i + 1);
    if (c > 0xdbff || !(low >= 0xdc00 && low <= 0xdfff)) return -1;
    i += 2;
  }
}

/** Scans a number token at `i`; canonical iff it is the ECMAScript spelling of its value. */
function scanNumber(st: CanonicalLine, s: string, i: number): number {
  const start = i;
  let c = s.charCodeAt(i);
  if (c === Ch.Minus) c = s.charCodeAt(++i);
  if (c === Ch.Zero) {
    c = s.charCodeAt(++i);
  } else if (c > Ch.Zero && c <= Ch.Nine) {
    do c = s.charCodeAt(++i);
    while (c >= Ch.Zero && c <= Ch.Nine);
  } else {
    return -1;
  }
  let simpleInteger = true;
  if (c === Ch.Dot) {
    simpleInteger = false;
    c = s.charCodeAt(++i);
    if (!(c >= Ch.Zero && c <= Ch.Nine)) return -1;
    do c = s.charCodeAt(++i);
    while (c >= Ch.Zero && c <= Ch.Nine);
  }
  if (c === 0x65 || c === 0x45) {
    simpleInteger = false;
    c = s.charCodeAt(++i);
    if (c === 0x2b || c === Ch.Minus) c = s.charCodeAt(++i);
    if (!(c >= Ch.Zero && c <= Ch.Nine)) return -1;
    do c = s.charCodeAt(++i);
    while (c >= Ch.Zero && c <= Ch.Nine);
  }
  const length = i - start;
  // Short integers without leading zeros are their own spelling, except -0.
  if (simpleInteger && length <= 15) return length === 2 && s.charCodeAt(start) === Ch.Minus && s.charCodeAt(start + 1) === Ch.Zero ? -1 : i;
  if (start >= st.argumentsStart && start < st.argumentsEnd) st.argumentsNeedAdmission = true;
  const token = s.slice(start, i);
  return String(Number(token)) === token ? i : -1;
}

/** Is key a (text in [aStart, aEnd)) strictly before key b in UTF-16 code-unit order of their values? */
function keyBefore(s: string, aStart: number, aEnd: number, aEscaped: boolean, bStart: number, bEnd: number, bEscaped: boolean): boolean {
  if (aEscaped || bEscaped) {
    return (JSON.parse(s.slice(aStart - 1, aEnd + 1)) as string) < (JSON.parse(s.slice(bStart - 1, bEnd + 1)) as string);
  }
  const aLength = aEnd - aStart;
  const bLength = bEnd - bStart;
  const n = Math.min(aLength, bLength);
  for (let k = 0; k < n; k++) {
    const x = s.charCodeAt(aStart + k);
    const y = s.charCodeAt(bStart + k);
    if (x !== y) return x < y;
  }
  return aLength < bLength;
}

const MAX_SCAN_DEPTH = 512;

function scanObject(st: CanonicalLine, s: string, i: number, depth: number): number {
  if (depth > MAX_SCAN_DEPTH) return -1;
  if (depth > MAX_ARGUMENT_DEPTH) st.argumentsNeedAdmission = true;
  i++;
  if (s.charCodeAt(i) === Ch.CloseBrace) return i + 1;
  let prevStart = -1;
  let prevEnd = -1;
  let prevEscaped = false;
  for (;;) {
    if (s.charCodeAt(i) !== Ch.Quote) return -1;
    const keyStart = i + 1;
    i = scanString(st, s, i);
    if (i < 0) return -1;
    const keyEscaped = st.lastStringEscaped;
    const keyEnd = i - 1;
    if (prevStart >= 0 && !keyBefore(s, prevStart, prevEnd, prevEscaped, keyStart, keyEnd, keyEscaped)) return -1;
    prevStart = keyStart;
    prevEnd = keyEnd;
    prevEscaped = keyEscaped;
    if (s.charCodeAt(i) !== Ch.Colon) return -1;
    const valueStart = ++i;
    const isArguments = depth === 0 && keyEnd - keyStart === 9 && s.startsWith('arguments', keyStart);
    if (isArguments) {
      st.argumentsStart = valueStart;
      st.argumentsEnd = s.length;
    }
    i = scanValue(st, s, i, depth + 1);
    if (i < 0) return -1;
    if (isArguments) st.argumentsEnd = i;
    if (depth === 0) st.spans.push(keyStart, keyEnd, valueStart, i);
    const next = s.charCodeAt(i++);
    if (next === Ch.CloseBrace) return i;
    if (next !== Ch.Comma) return -1;
  }
}

function scanValue(st: CanonicalLine, s: string, i: number, depth: number): number {
  switch (s.charCodeAt(i)) {
    case Ch.OpenBrace:
      return scanObject(st, s, i, depth);
    case Ch.OpenBracket: {
      if (depth > MAX_SCAN_DEPTH) return -1;
      if (depth > MAX_ARGUMENT_DEPTH) st.argumentsNeedAdmission = true;
      i++;
      if (s.charCodeAt(i) === Ch.CloseBracket) return i + 1;
      for (;;) {
        i = scanValue(st, s, i, depth + 1);
        if (i < 0) return -1;
        const next = s.charCodeAt(i++);
        if (next === Ch.CloseBracket) return i;
        if (next !== Ch.Comma) return -1;
      }
    }
    case Ch.Quote:
      return scanString(st, s, i);
    case 0x74:
      return s.startsWith('true', i) ? i + 4 : -1;
    case 0x66:
      return s.startsWith('false', i) ? i + 5 : -1;
    case 0x6e:
      return s.startsWith('null', i) ? i + 4 : -1;
    default:
      return scanNumber(st, s, i);
  }
}

/**
 * The scanned line when `line` is exactly the JCS text of a JSON object, else undefined; undefined
 * does not prove the line non-canonical (see isCanonicalLineSlow).
 */
export function scanCanonicalObject(line: string): CanonicalLine | undefined {
  if (line.charCodeAt(0) !== Ch.OpenBrace) return undefined;
  const st = new CanonicalLine(line);
  return scanObject(st, line, 0, 0) === line.length ? st : undefined;
}

/** The reference judgement: `line` parses to an object whose JCS text is the line. */
export function isCanonicalLineSlow(line: string): boolean {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return false;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return false;
  try {
    return jcs(parsed) === line;
  } catch {
    return false;
  }
}

/** Whether a JCS token is a number's (the JCS text of a number, and only of a number, starts with `-` or a digit). */
export function isNumberToken(token: string): boolean {
  const c = token.charCodeAt(0);
  return c === Ch.Minus || (c >= Ch.Zero && c <= Ch.Nine);
}

/** Whether a JCS token is a string's (the JCS text of a string, and only of a string, starts with a quote). */
export function isStringToken(token: string | undefined): token is string {
  return token !== undefined && token.charCodeAt(0) === Ch.Quote;
}
