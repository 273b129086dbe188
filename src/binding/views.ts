/**
 * The three views of one admitted value (docs/protocol.md §3): the canonical text the tool receives, the
 * binding digest, and the Cedar context value.
 */
import { hash } from 'node:crypto';
import { WritError } from '../errors.js';
import { jcs, sha256Tagged } from '../util/canonical.js';
import { admitValue, type Json } from './admit.js';
import { parseLossless, setMember } from './parse.js';

export type CedarValue = boolean | number | string | CedarValue[] | { [k: string]: CedarValue } | { __extn: { fn: 'decimal'; arg: string } };

export const BINDING_PROFILE = 'writ-bind/1';
const BINDING_DOMAIN = 'writ-bind/1\n';
const ENVELOPE_DOMAIN = 'writ-envelope/1\n';

/**
 * Cedar view of an admitted value: integers → Long, other numbers → `decimal` extension values (the
 * admitted double's ECMAScript string, which always has a '.'), objects → records, arrays → sets;
 * nulls are dropped from records and sets.
 */
export function cedarView(admitted: Json): CedarValue {
  if (typeof admitted === 'number') {
    return Number.isInteger(admitted) ? admitted : { __extn: { fn: 'decimal', arg: String(admitted) } };
  }
  if (admitted === null || typeof admitted !== 'object') {
    // A bare null has no Cedar form; callers only pass containers or members, where nulls are dropped.
    if (admitted === null) throw new TypeError('null has no Cedar view');
    return admitted;
  }
  if (Array.isArray(admitted)) {
    const set: CedarValue[] = [];
    for (const element of admitted) if (element !== null) set.push(cedarView(element));
    return set;
  }
  const record: { [k: string]: CedarValue } = {};
  for (const key of Object.keys(admitted)) {
    const member = admitted[key]!;
    if (member !== null) setMember(record, key, cedarView(member));
  }
  return record;
}

/** RFC 8785 text of an admitted value: exactly what the tool receives. */
export function canonicalText(admitted: Json): string {
  return jcs(admitted);
}

/** The binding of arguments already in canonical (JCS) text, e.g. as stored in a ledger line. */
export function bindingFromCanonical(server: string, tool: string, canonicalArgs: string): string {
  return bindingFromCanonicalMembers(jcs(server), jcs(tool), canonicalArgs);
}

/**
 * The binding from the JCS texts of all three members, e.g. as they stand in a canonical ledger line
 * (`writ verify`, per decision). JCS of {arguments, server, tool} is spelled out (its keys are already
 * in JCS order) so nothing is canonicalized again; one-shot hashing, as this runs once per record.
 */
export function bindingFromCanonicalMembers(serverJcs: string, toolJcs: string, argumentsJcs: string): string {
  const payload = `${BINDING_DOMAIN}{"arguments":${argumentsJcs},"server":${serverJcs},"tool":${toolJcs}}`;
  return `${BINDING_PROFILE}:sha256:${hash('sha256', payload, 'hex')}`;
}

/** 'writ-bind/1:sha256:' + hex SHA-256("writ-bind/1\n" + JCS({arguments, server, tool})). */
export function bindingOf(server: string, tool: string, admittedArgs: Json): string {
  return bindingFromCanonical(server, tool, jcs(admittedArgs));
}

/** 'sha256:' + hex SHA-256("writ-envelope/1\n" + JCS(admitted envelope)). */
export function envelopeDigest(admittedEnvelope: Json): string {
  return envelopeDigestOfCanonical(jcs(admittedEnvelope));
}

/** envelopeDigest of an envelope whose JCS text is already known. */
export function envelopeDigestOfCanonical(canonicalEnvelope: string): string {
  return sha256Tagged(ENVELOPE_DOMAIN + canonicalEnvelope);
}

export interface BoundCall {
  /** The admitted value: what the PEP forwards to the tool. */
  arguments: Json;
  /** Its JCS text. */
  canonical: string;
  binding: string;
  cedar: CedarValue;
}

export function bindCall(server: string, tool: string, admittedArgs: Json): BoundCall {
  const canonical = jcs(admittedArgs);
  return {
    arguments: admittedArgs,
    canonical,
    binding: bindingFromCanonical(server, tool, canonical),
    cedar: cedarView(admittedArgs),
  };
}

/**
 * Why a stored arguments text — a JCS text, as every member of a canonical ledger line is — is not the
 * canonical text of admitted arguments, or undefined when it is (`writ verify`, per decision). A binding
 * recomputed over inadmissible arguments (`1e-7`, an unsafe integer) would still match its own
 * recomputation; admission again tells a forged call from a real one.
 */
export function storedArgumentsProblem(text: string): string | undefined {
  let admitted: Json;
  try {
    const parsed = parseLossless(text);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || !isPlainObject(parsed)) return 'the stored arguments are not a JSON object';
    admitted = admitValue(parsed);
  } catch (e) {
    if (e instanceof WritError) return `the stored arguments are not admissible (${e.code}${e.path !== undefined ? ` at ${JSON.stringify(e.path)}` : ''})`;
    throw e;
  }
  return jcs(admitted) === text ? undefined : 'the stored arguments are not the canonical text of their admitted value';
}

/** For `writ bind` and tests: parse + admit raw argument text, which must be a JSON object (else
 *  INVALID_REQUEST). */
export function admitArgumentsText(text: string, server: string, tool: string): BoundCall {
  const parsed = parseLossless(text);
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || !isPlainObject(parsed)) {
    throw new WritError('INVALID_REQUEST', 'the arguments must be a JSON object', { path: '' });
  }
  return bindCall(server, tool, admitValue(parsed));
}

function isPlainObject(v: object): boolean {
  return Object.getPrototypeOf(v) === Object.prototype;
}
