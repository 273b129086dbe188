/**
 * Lossless, strict JSON parsing for writ-bind/1 (docs/protocol.md §3).
 *
 * Why a parser of our own and not `lossless-json` (which is installed and was evaluated): its parser is
 * recursive with no depth limit (1,000,000 '[' overflows the stack with a RangeError), it silently
 * merges duplicate keys whose values are deep-equal, it accepts lone surrogates, it reports no JSON
 * pointer for an error, and it builds every string one character at a time. Wrapping it would need a
 * second full scan of the text for depth, duplicates and surrogates — that scan is a parser already. So
 * this one does everything in a single pass: number tokens are kept as their source text, strings are
 * sliced straight from the input when they hold no escape, nesting is bounded before recursing.
 *
 * Precedence of refusals, so that one input always gets one answer:
 *  - a syntax error anywhere makes the whole text INVALID_JSON (text that is not JSON is never judged
 *    by the binding rules);
 *  - otherwise the first duplicate key / lone surrogate in document order is reported;
 *  - nesting beyond the hard limit stops parsing at once (BINDING_TOO_DEEP), unless a duplicate key or
 *    lone surrogate was already met earlier in the document, which is then reported instead.
 */
import { isWritError, WritError, type ErrorCode } from '../errors.js';
import { isWellFormed } from '../util/canonical.js';
import type { AdmissionLimits } from './limits.js';

/** A JSON number token, kept exactly as written (e.g. `1.0`, `-0`, `2.50e1`). */
export class LosslessNumber {
  constructor(readonly text: string) {}
}

export type LosslessObject = { [key: string]: LosslessValue };
/** Parsed JSON with number tokens preserved; objects are plain objects whose members are all own
 *  data properties (a `__proto__` key is an own property, never the prototype). */
export type LosslessValue = null | boolean | string | LosslessNumber | LosslessValue[] | LosslessObject;

/** The hard nesting limit of the parser: the document root container is depth 1. Deep enough for a
 *  decision body whose arguments sit at the 64-deep admission limit (§3), small enough that the
 *  recursive descent can never exhaust the call stack. */
export const PARSE_MAX_DEPTH = 512;

/** The arguments object is depth 1; a container deeper than this is refused (§3). Defined here so that the
 *  parser's own refusal can name it; admission (admit.ts) enforces it. */
export const MAX_ARGUMENT_DEPTH = 64;

/** RFC 6901 JSON pointer of a path of keys/indices. */
export function jsonPointer(trail: ReadonlyArray<string | number>, length: number = trail.length, base = ''): string {
  let out = base;
  for (let i = 0; i < length; i++) {
    const step = trail[i]!;
    out += `/${typeof step === 'number' ? String(step) : escapePointerToken(step)}`;
  }
  return out;
}

export function escapePointerToken(token: string): string {
  if (token.indexOf('~') < 0 && token.indexOf('/') < 0) return token;
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** Sets a member so that `__proto__` stays plain data (an own property), never the prototype. */
export function setMember(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    target[key] = value;
  }
}

const hasOwn = Object.hasOwn;

const ESCAPES: Record<number, string> = {
  0x22: '"',
  0x5c: '\\',
  0x2f: '/',
  0x62: '\b',
  0x66: '\f',
  0x6e: '\n',
  0x72: '\r',
  0x74: '\t',
};

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}

function describeAt(text: string, pos: number): string {
  if (pos >= text.length) return 'at end of input';
  const ch = text.charCodeAt(pos);
  const shown = ch < 0x20 || ch > 0x7e ? `U+${ch.toString(16).toUpperCase().padStart(4, '0')}` : `'${text[pos]}'`;
  return `at offset ${pos} (${shown})`;
}

class Parser {
  private pos = 0;
  /** trail[k] is the key or index of the member currently being parsed inside the container at
   *  depth k+1; the pointer of a value nested in `d` containers is trail[0..d). */
  private readonly trail: Array<string | number> = [];
  private deferred: WritError | undefined;
  /** Set by parseString: the string just parsed holds a lone surrogate. */
  private illFormed = false;

  /** When set, where each member value of the root object starts and ends in the text. */
  rootSpans: Map<string, readonly [number, number]> | undefined;
  /** Members and elements met so far (admission limits). */
  private total = 0;

  constructor(
    private readonly text: string,
    private readonly maxDepth: number,
    private readonly limits?: AdmissionLimits,
  ) {}

  /**
   * Admission limits (limits.ts) stop the parse at the first excess, as the depth stop does: a body
   * 96,000 members wide costs the parse of its first 4,096, not of all of it (an earlier duplicate key
   * or lone surrogate is reported instead, as for depth).
   */
  private overLimit(what: string, length: number): never {
    if (this.deferred) throw this.deferred;
    throw new WritError('LIMIT_EXCEEDED', `${what} (an admission limit of this sidecar)`, { path: jsonPointer(this.trail, length) });
  }

  /** One member (index within its object, `nameLength`) or element (`nameLength` -1), now at trail[depth]. */
  private countMember(limits: AdmissionLimits, index: number, depth: number, nameLength: number): void {
    if (nameLength < 0) {
      if (index >= limits.array_elements) this.overLimit(`an array of more than ${limits.array_elements} elements`, depth + 1);
    } else {
      if (index >= limits.object_members) this.overLimit(`an object of more than ${limits.object_members} members`, depth + 1);
      if (nameLength > limits.string_length) this.overLimit(`a member name longer than ${limits.string_length} characters`, depth + 1);
    }
    if (++this.total > limits.total_members) this.overLimit(`more than ${limits.total_members} members and elements in the whole body`, depth + 1);
  }

  parseDocument(): LosslessValue {
    this.skipWhitespace();
    const value = this.parseValue(0);
    this.skipWhitespace();
    if (this.pos < this.text.length) this.syntax(`unexpected text after the JSON value ${describeAt(this.text, this.pos)}`, 0);
    if (this.deferred) throw this.deferred;
    return value;
  }

  private syntax(message: string, depth: number): never {
    throw new WritError('INVALID_JSON', `invalid JSON: ${message}`, { path: jsonPointer(this.trail, depth) });
  }

  private defer(code: 'BINDING_DUPLICATE_KEY' | 'BINDING_LONE_SURROGATE', message: string, depth: number): void {
    if (!this.deferred) this.deferred = new WritError(code, message, { path: jsonPointer(this.trail, depth) });
  }

  private skipWhitespace(): void {
    const text = this.text;
    let pos = this.pos;
    for (;;) {
      const c = text.charCodeAt(pos);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) pos++;
      else break;
    }
    this.pos = pos;
  }

  /** `depth` = number of containers enclosing this value. */
  private parseValue(depth: number): LosslessValue {
    const c = this.text.charCodeAt(this.pos);
    switch (c) {
      case 0x7b:
        /* { */ return this.parseObject(depth);
      case 0x5b:
        /* [ */ return this.parseArray(depth);
      case 0x22: /* " */ {
        const s = this.parseString(depth);
        if (this.illFormed) this.defer('BINDING_LONE_SURROGATE', 'lone surrogate in a string', depth);
        if (this.limits !== undefined && s.length > this.limits.string_length)
          this.overLimit(`a string longer than ${this.limits.string_length} characters`, depth);
        return s;
      }
      case 0x74:
        return this.parseLiteral('true', true, depth);
      case 0x66:
        return this.parseLiteral('false', false, depth);
      case 0x6e:
        return this.parseLiteral('null', null, depth);
      default:
        if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return this.parseNumber(depth);
        return this.syntax(`expected a JSON value ${describeAt(this.text, this.pos)}`, depth);
    }
  }

  private enter(depth: number): void {
    if (depth + 1 > this.maxDepth) {
      if (this.deferred) throw this.deferred;
      // Far past the §3 limit: the refusal is the same code, and names the limit a caller must keep to.
      throw new WritError('BINDING_TOO_DEEP', `nesting deeper than ${MAX_ARGUMENT_DEPTH} levels (the parser stops at ${this.maxDepth})`, {
        path: jsonPointer(this.trail, depth),
      });
    }
  }

  private parseObject(depth: number): LosslessObject {
    this.enter(depth);
    const text = this.text;
    const object: LosslessObject = {};
    this.pos++;
    this.skipWhitespace();
    if (text.charCodeAt(this.pos) === 0x7d) {
      this.pos++;
      return object;
    }
    for (let index = 0; ; index++) {
      if (text.charCodeAt(this.pos) !== 0x22) this.syntax(`expected a quoted member name ${describeAt(text, this.pos)}`, depth);
      // Duplicates and lone surrogates in a name are reported at the member the name starts, before
      // anything inside its value (document order).
      const key = this.parseString(depth);
      this.trail[depth] = key;
      if (this.illFormed) this.defer('BINDING_LONE_SURROGATE', 'lone surrogate in a member name', depth + 1);
      const duplicate = hasOwn(object, key);
      if (duplicate) this.defer('BINDING_DUPLICATE_KEY', `duplicate key ${JSON.stringify(key)}`, depth + 1);
      if (this.limits !== undefined) this.countMember(this.limits, index, depth, key.length);
      this.skipWhitespace();
      if (text.charCodeAt(this.pos) !== 0x3a) this.syntax(`expected ':' after a member name ${describeAt(text, this.pos)}`, depth + 1);
      this.pos++;
      this.skipWhitespace();
      const start = this.pos;
      const value = this.parseValue(depth + 1);
      if (!duplicate) setMember(object, key, value);
      if (depth === 0 && !duplicate) this.rootSpans?.set(key, [start, this.pos]);
      this.skipWhitespace();
      const c = text.charCodeAt(this.pos);
      if (c === 0x2c) {
        this.pos++;
        this.skipWhitespace();
        continue;
      }
      if (c === 0x7d) {
        this.pos++;
        return object;
      }
      this.syntax(`expected ',' or '}' ${describeAt(text, this.pos)}`, depth);
    }
  }

  private parseArray(depth: number): LosslessValue[] {
    this.enter(depth);
    const text = this.text;
    const array: LosslessValue[] = [];
    this.pos++;
    this.skipWhitespace();
    if (text.charCodeAt(this.pos) === 0x5d) {
      this.pos++;
      return array;
    }
    for (let index = 0; ; index++) {
      this.trail[depth] = index;
      if (this.limits !== undefined) this.countMember(this.limits, index, depth, -1);
      array.push(this.parseValue(depth + 1));
      this.skipWhitespace();
      const c = text.charCodeAt(this.pos);
      if (c === 0x2c) {
        this.pos++;
        this.skipWhitespace();
        continue;
      }
      if (c === 0x5d) {
        this.pos++;
        return array;
      }
      this.syntax(`expected ',' or ']' ${describeAt(text, this.pos)}`, depth);
    }
  }

  private parseLiteral<T extends boolean | null>(word: string, value: T, depth: number): T {
    if (!this.text.startsWith(word, this.pos)) this.syntax(`expected a JSON value ${describeAt(this.text, this.pos)}`, depth);
    this.pos += word.length;
    return value;
  }

  private parseNumber(depth: number): LosslessNumber {
    const text = this.text;
    const start = this.pos;
    let pos = start;
    if (text.charCodeAt(pos) === 0x2d) pos++;
    let c = text.charCodeAt(pos);
    if (c === 0x30) {
      pos++;
    } else if (c >= 0x31 && c <= 0x39) {
      do pos++;
      while ((c = text.charCodeAt(pos)) >= 0x30 && c <= 0x39);
    } else {
      this.pos = pos;
      this.syntax(`expected a digit ${describeAt(text, pos)}`, depth);
    }
    if (text.charCodeAt(pos) === 0x2e) {
      pos++;
      c = text.charCodeAt(pos);
      if (!(c >= 0x30 && c <= 0x39)) {
        this.pos = pos;
        this.syntax(`expected a digit after '.' ${describeAt(text, pos)}`, depth);
      }
      do pos++;
      while ((c = text.charCodeAt(pos)) >= 0x30 && c <= 0x39);
    }
    c = text.charCodeAt(pos);
    if (c === 0x65 || c === 0x45) {
      pos++;
      c = text.charCodeAt(pos);
      if (c === 0x2b || c === 0x2d) pos++;
      c = text.charCodeAt(pos);
      if (!(c >= 0x30 && c <= 0x39)) {
        this.pos = pos;
        this.syntax(`expected a digit in the exponent ${describeAt(text, pos)}`, depth);
      }
      do pos++;
      while ((c = text.charCodeAt(pos)) >= 0x30 && c <= 0x39);
    }
    this.pos = pos;
    return new LosslessNumber(text.slice(start, pos));
  }

  /** Parses the string at `pos` (an opening quote) and sets `illFormed` when the decoded text holds a
   *  lone surrogate (the caller reports it at the right path). `depth` locates syntax errors. */
  private parseString(depth: number): string {
    const text = this.text;
    let pos = this.pos + 1;
    let chunkStart = pos;
    let result = '';
    let sawSurrogate = false;
    for (;;) {
      const c = text.charCodeAt(pos);
      if (c === 0x22) break;
      if (c === 0x5c) {
        result += text.slice(chunkStart, pos);
        const e = text.charCodeAt(pos + 1);
        if (e === 0x75) {
          const h0 = hexValue(text.charCodeAt(pos + 2));
          const h1 = hexValue(text.charCodeAt(pos + 3));
          const h2 = hexValue(text.charCodeAt(pos + 4));
          const h3 = hexValue(text.charCodeAt(pos + 5));
          if ((h0 | h1 | h2 | h3) < 0) {
            this.pos = pos;
            this.syntax(`invalid \\u escape ${describeAt(text, pos)}`, depth);
          }
          const unit = (h0 << 12) | (h1 << 8) | (h2 << 4) | h3;
          if ((unit & 0xf800) === 0xd800) sawSurrogate = true;
          result += String.fromCharCode(unit);
          pos += 6;
        } else {
          const replacement = ESCAPES[e];
          if (replacement === undefined) {
            this.pos = pos;
            this.syntax(`invalid escape ${describeAt(text, pos)}`, depth);
          }
          result += replacement;
          pos += 2;
        }
        chunkStart = pos;
        continue;
      }
      // biome-ignore lint/suspicious/noSelfCompare: `c !== c` is the cheapest NaN test (charCodeAt past the end) in the scanner's hot loop.
      if (c < 0x20 || c !== c /* NaN: end of input */) {
        this.pos = pos;
        // biome-ignore lint/suspicious/noSelfCompare: as above: NaN is the end of input.
        if (c !== c) this.syntax(`unterminated string ${describeAt(text, pos)}`, depth);
        this.syntax(`unescaped control character in a string ${describeAt(text, pos)}`, depth);
      }
      if ((c & 0xf800) === 0xd800) sawSurrogate = true;
      pos++;
    }
    result = chunkStart === this.pos + 1 ? text.slice(chunkStart, pos) : result + text.slice(chunkStart, pos);
    this.pos = pos + 1;
    this.illFormed = sawSurrogate && !isWellFormed(result);
    return result;
  }
}

/**
 * Lossless parse of raw JSON text (a whole HTTP body or a bare argument object). Refuses with WritError:
 * INVALID_JSON, BINDING_DUPLICATE_KEY (any repeated key, even with an equal value),
 * BINDING_LONE_SURROGATE (keys or values, escaped or literal), BINDING_TOO_DEEP (beyond `maxDepth`,
 * default PARSE_MAX_DEPTH), LIMIT_EXCEEDED (past `limits`, when given), each with `path` = JSON pointer of
 * the offending member/element.
 */
export function parseLossless(text: string, maxDepth: number = PARSE_MAX_DEPTH, limits?: AdmissionLimits): LosslessValue {
  return new Parser(text, maxDepth, limits).parseDocument();
}

/**
 * parseLossless, and the exact source text of each member of the root object (when the root is an
 * object): the text a value was parsed from determines everything derived from it, so a caller may key
 * a memo of derived views on it (decision admission does).
 */
export function parseLosslessWithRootText(
  text: string,
  maxDepth: number = PARSE_MAX_DEPTH,
  limits?: AdmissionLimits,
): { value: LosslessValue; rootText(key: string): string | undefined } {
  const parser = new Parser(text, maxDepth, limits);
  const spans = new Map<string, readonly [number, number]>();
  parser.rootSpans = spans;
  const value = parser.parseDocument();
  return {
    value,
    rootText: (key) => {
      const span = spans.get(key);
      return span === undefined ? undefined : text.slice(span[0], span[1]);
    },
  };
}

/**
 * The parser stops far past §3's depth limit wherever it is, with BINDING_TOO_DEEP; only the members the
 * binding rules judge (arguments, an AuthZEN context) should keep that code. Given a parse refusal,
 * returns it relabelled with the code `codeAt` names for its path (undefined: keep it), same path.
 */
export function relabelDepthStop(e: unknown, codeAt: (path: string) => ErrorCode | undefined): unknown {
  if (!(isWritError(e) && e.code === 'BINDING_TOO_DEEP')) return e;
  const code = codeAt(e.path ?? '');
  if (code === undefined) return e;
  return new WritError(code, `nesting deeper than ${PARSE_MAX_DEPTH} levels`, e.path === undefined ? {} : { path: e.path });
}

/** True for a JSON object of a lossless value (not an array, not a number token). */
export function isLosslessObject(v: LosslessValue | undefined): v is LosslessObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof LosslessNumber);
}

/** The own member `key` of a lossless object, else undefined. Safe for any key (`constructor`,
 *  `__proto__`, `hasOwnProperty` are data here, never inherited). */
export function memberOf(v: LosslessValue | undefined, key: string): LosslessValue | undefined {
  return isLosslessObject(v) && hasOwn(v, key) ? v[key] : undefined;
}
