import { WritError } from '../errors.js';
import { isRfc3339, rfc3339CeilMillis } from '../util/rfc3339.js';

/**
 * RFC 3339 → the string Cedar's `datetime()` accepts. Cedar takes only `YYYY-MM-DDThh:mm:ss`
 * followed by `Z`, `.SSSZ`, `±hhmm` or `.SSS±hhmm`: exactly three fraction digits and an offset
 * without a colon. RFC 3339 allows any number of fraction digits, lower-case `t`/`z` and `±hh:mm`.
 * Cedar compares milliseconds, and `context.now` is a whole millisecond. A finer fraction is rounded
 * up to the next millisecond: `now < t` and `now >= t` then answer exactly as for the true instant, so
 * a not-before time (`execute_after`) is never passed early.
 */
const RFC3339 = /^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

export function cedarDatetimeText(rfc3339: string): string {
  const m = RFC3339.exec(rfc3339);
  // The calendar check too (no 02-30, 24:00, :60 or +24:00): Cedar refuses those, and a value only
  // some policies read must not decide whether a request parses (the engine may leave it out).
  if (!m || !isRfc3339(rfc3339.toUpperCase())) {
    throw new WritError('INVALID_REQUEST', `not an RFC 3339 timestamp with an offset: ${JSON.stringify(rfc3339)}`);
  }
  const [, date, time, fraction, zulu, sign, offHours, offMinutes] = m;
  if (fraction !== undefined && fraction.length > 3 && /[1-9]/.test(fraction.slice(3))) {
    const next = new Date(rfc3339CeilMillis(rfc3339.toUpperCase())).toISOString();
    if (next.length === 24) return next; // UTC; the instant is what Cedar compares (else the year left 0000–9999)
  }
  const millis = fraction === undefined ? '' : `.${fraction.padEnd(3, '0').slice(0, 3)}`;
  const offset = zulu !== undefined ? 'Z' : `${sign}${offHours}${offMinutes}`;
  return `${date}T${time}${millis}${offset}`;
}

/** A Cedar `datetime` extension value (JSON form) for an RFC 3339 string or a Date. */
export function cedarDatetime(value: string | Date): { __extn: { fn: 'datetime'; arg: string } } {
  if (typeof value !== 'string') {
    // A Date (the decision's clock) prints as YYYY-MM-DDThh:mm:ss.SSSZ, already Cedar's form — unless
    // its year needs more than four digits (then the checked path refuses it as before).
    const iso = value.toISOString();
    if (iso.length === 24) return { __extn: { fn: 'datetime', arg: iso } };
    return { __extn: { fn: 'datetime', arg: cedarDatetimeText(iso) } };
  }
  return { __extn: { fn: 'datetime', arg: cedarDatetimeText(value) } };
}
