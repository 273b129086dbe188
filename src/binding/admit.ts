/**
 * Admission of lossless values into the admitted domain of writ-bind/1 (docs/protocol.md §3): the one
 * value from which the binding, the Cedar view and the forwarded arguments are all derived.
 */
import { WritError } from '../errors.js';
import { LosslessNumber, MAX_ARGUMENT_DEPTH, jsonPointer, setMember, type LosslessValue } from './parse.js';

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

export { MAX_ARGUMENT_DEPTH };

/** Cedar decimal is a signed 64-bit integer of ten-thousandths. */
const DECIMAL_MAX_SCALED = 9223372036854775807n;
const DECIMAL_MIN_SCALED = -9223372036854775808n;
/** Below this magnitude every double with ≤ 4 fractional digits is inside the decimal range. */
const DECIMAL_FAST_RANGE = 9e14;

/**
 * Keys that Cedar's JSON value format reads as escapes (`{"__entity": …}` becomes an entity reference,
 * `{"__extn": …}` an extension value, `{"__expr": …}` fails the whole request). A record carrying one
 * cannot be handed to Cedar as plain data — argument text could otherwise forge an entity reference in
 * the policy input — so such a value is refused as BINDING_UNREPRESENTABLE ("not representable in
 * Cedar"); the contract has no narrower code.
 */
const CEDAR_ESCAPE_KEYS = new Set(['__entity', '__extn', '__expr']);

type NumberRefusal = 'BINDING_UNSAFE_INTEGER' | 'BINDING_LOSSY_NUMBER' | 'BINDING_UNREPRESENTABLE';

/** The §3 number rule. Returns the admitted JS number, or the refusal code and a reason. */
export function admitNumberToken(token: string): number | { code: NumberRefusal; message: string } {
  const value = Number(token);
  if (isIntegerToken(token)) {
    if (!Number.isSafeInteger(value)) {
      return { code: 'BINDING_UNSAFE_INTEGER', message: `integer ${token} is beyond ±(2^53−1)` };
    }
    return value === 0 ? 0 : value; // `-0` is the integer 0
  }
  if (Number.isInteger(value)) {
    return { code: 'BINDING_LOSSY_NUMBER', message: `${token} has an integral value; the int/float distinction would be lost (write it as an integer)` };
  }
  if (!Number.isFinite(value)) {
    return { code: 'BINDING_UNREPRESENTABLE', message: `${token} is out of the Cedar decimal range` };
  }
  const text = String(value);
  const dot = text.indexOf('.');
  if (text.indexOf('e') >= 0 || dot < 0 || text.length - dot - 1 > 4) {
    return { code: 'BINDING_UNREPRESENTABLE', message: `${token} (${text}) is not a Cedar decimal: at most 4 fractional digits` };
  }
  if (Math.abs(value) >= DECIMAL_FAST_RANGE && !decimalInRange(text, dot)) {
    return { code: 'BINDING_UNREPRESENTABLE', message: `${token} is out of the Cedar decimal range ±922337203685477.5807` };
  }
  return value;
}

function isIntegerToken(token: string): boolean {
  for (let i = 0; i < token.length; i++) {
    const c = token.charCodeAt(i);
    if (c === 0x2e || c === 0x65 || c === 0x45) return false;
  }
  return true;
}

function decimalInRange(text: string, dot: number): boolean {
  const scaled = BigInt(text.slice(0, dot) + text.slice(dot + 1).padEnd(4, '0'));
  return scaled <= DECIMAL_MAX_SCALED && scaled >= DECIMAL_MIN_SCALED;
}

class Admitter {
  private readonly trail: Array<string | number> = [];
  constructor(private readonly basePath: string) {}

  private refuse(code: ConstructorParameters<typeof WritError>[0], message: string, length: number): never {
    throw new WritError(code, message, { path: jsonPointer(this.trail, length, this.basePath) });
  }

  /** `depth` = depth of `v` if it is a container (the admitted root is depth 1). */
  admit(v: LosslessValue, depth: number): Json {
    if (v === null || typeof v !== 'object') return v;
    if (v instanceof LosslessNumber) {
      const admitted = admitNumberToken(v.text);
      if (typeof admitted === 'number') return admitted;
      return this.refuse(admitted.code, admitted.message, depth - 1);
    }
    if (depth > MAX_ARGUMENT_DEPTH) {
      this.refuse('BINDING_TOO_DEEP', `nesting deeper than ${MAX_ARGUMENT_DEPTH} levels`, depth - 1);
    }
    const trail = this.trail;
    if (Array.isArray(v)) {
      const out: Json[] = new Array<Json>(v.length);
      for (let i = 0; i < v.length; i++) {
        trail[depth - 1] = i;
        out[i] = this.admit(v[i]!, depth + 1);
      }
      return out;
    }
    // Members are judged in the document's order (the first refusal is the first in the text), and the
    // admitted object holds them in JCS order (UTF-16 code units, RFC 8785 §3.2.3): the arguments a PEP
    // forwards to the tool then read as the canonical text, member for member. (JavaScript itself puts
    // integer-like names such as "10" first, in numeric order, whatever the insertion order.)
    const keys = Object.keys(v);
    const admitted: Json[] = new Array<Json>(keys.length);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      trail[depth - 1] = key;
      if (CEDAR_ESCAPE_KEYS.has(key)) {
        this.refuse('BINDING_UNREPRESENTABLE', `member name ${JSON.stringify(key)} is a Cedar JSON escape and cannot be passed to policy as data`, depth);
      }
      admitted[i] = this.admit(v[key]!, depth + 1);
    }
    const order = keys.map((_, i) => i);
    if (keys.length > 1) order.sort((a, b) => (keys[a]! < keys[b]! ? -1 : 1));
    const out: { [k: string]: Json } = {};
    for (const i of order) setMember(out, keys[i]!, admitted[i]!);
    return out;
  }
}

/**
 * Admission (§3 number rules, depth rule, Cedar escape keys) of a lossless value into the admitted
 * domain. basePath prefixes error paths (the HTTP server passes '/action/arguments'). The value passed
 * is at depth 1; a container at depth > 64 → BINDING_TOO_DEEP. Objects are plain objects whose
 * `__proto__`/`constructor` members are own data properties.
 */
export function admitValue(v: LosslessValue, basePath = ''): Json {
  return new Admitter(basePath).admit(v, 1);
}

/** Plain JS conversion for NON-argument parts of a body (envelope etc.): numbers → JS numbers, with
 *  no §3 refusal (schemas refuse numbers there anyway). Same `__proto__` safety. */
export function toPlain(v: LosslessValue): Json {
  if (v === null || typeof v !== 'object') return v;
  if (v instanceof LosslessNumber) {
    const n = Number(v.text);
    return n === 0 ? 0 : n;
  }
  if (Array.isArray(v)) return v.map(toPlain);
  const out: { [k: string]: Json } = {};
  for (const key of Object.keys(v)) setMember(out, key, toPlain(v[key]!));
  return out;
}
