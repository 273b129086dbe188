/**
 * Where a guarded call's envelope and execution id come from (docs/protocol.md §7), each on its own:
 *   - the envelope: `params._meta["io.writ/envelope"]` as sent by the MCP client; else the PEP's
 *     defaults (`--defaults FILE` / `defaults` option); else the call is refused with
 *     `MISSING_CONTEXT`;
 *   - the execution id: `params._meta["io.writ/execution_id"]` as sent by the MCP client; else a fresh
 *     id (`<prefix>:<UUIDv7>`) per call, but only when the PEP was started with defaults — the
 *     operator opted into ids the client never sees; else the call is refused with `MISSING_CONTEXT`
 *     (path `params._meta["io.writ/execution_id"]`). A client that sends its own envelope without
 *     defaults must send its own id too: an id minted for it could not be looked up, and a retry
 *     after `OUTCOME_UNKNOWN` would get another fresh id and run the tool again instead of meeting
 *     `EXECUTION_TERMINAL`.
 * A refused call reaches neither the PDP nor the tool.
 *
 * ## Defaults format (`--defaults FILE`, JSON)
 * Either a plain §2 envelope — used as is for every call:
 *
 *     {"task_id": "OFF-2048", "purpose": "...", "requester": {"type":"User","id":"m-1"},
 *      "actor": {"type":"Agent","id":"offboarding-agent-prod"}, "subject": {"type":"Employee","id":"7721"}}
 *
 * or the extended form, recognised by its top-level `"envelope"` key:
 *
 *     { "envelope": { ...a (partial) §2 envelope... },
 *       "from_arguments": {                          // envelope fields read from the call's arguments
 *         "requester": "/requested_by",              //   JSON pointer (RFC 6901) to a {type,id} object
 *         "subject": {"type": "Employee", "id": "/employee_id"},  // fixed type, id at a pointer
 *         "task_id": "/ticket" },                    //   string fields: pointer to a string
 *       "tools": { "<tool name>": { "envelope": {...}, "from_arguments": {...} } },  // per-tool overrides
 *       "execution_id_prefix": "writ-proxy" }        // ids are "<prefix>:<uuid>" (default "writ-proxy")
 *
 * Resolution: `envelope`, then the tool's `envelope` over it (shallow), then every `from_arguments`
 * entry (the tool's winning over the global one for the same field). A pointer that does not resolve
 * to a usable value refuses the call with `MISSING_CONTEXT` (`path` = the pointer). An id read at a
 * pointer may be a string or a safe integer (written in decimal). The PDP validates the result like
 * any envelope (400 `ENVELOPE_INVALID`).
 */
import { v7 as uuidv7 } from 'uuid';
import { WritError } from '../errors.js';
import { schemaIssue } from '../schemas/validate.js';
import { META_ENVELOPE, META_EXECUTION_ID } from './types.js';

type PointerSpec = string | { type: string; id: string };

interface Layer {
  envelope: Record<string, unknown>;
  from_arguments: Record<string, PointerSpec>;
}

export interface Defaults {
  base: Layer;
  tools: Record<string, Layer>;
  prefix: string;
}

const UID_FIELDS = new Set(['requester', 'actor', 'subject']);

/** A JSON object (not null, not an array). */
export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function checkPointer(p: unknown, where: string): string {
  if (typeof p !== 'string' || (p !== '' && !p.startsWith('/'))) {
    throw new WritError('INVALID_REQUEST', `defaults: ${where} must be a JSON pointer ("" or starting with "/")`);
  }
  return p;
}

function parseLayer(v: unknown, where: string): Layer {
  if (!isObject(v)) throw new WritError('INVALID_REQUEST', `defaults: ${where} must be an object`);
  const env = v.envelope ?? {};
  if (!isObject(env)) throw new WritError('INVALID_REQUEST', `defaults: ${where}.envelope must be an object`);
  const fa = v.from_arguments ?? {};
  if (!isObject(fa)) throw new WritError('INVALID_REQUEST', `defaults: ${where}.from_arguments must be an object`);
  const from: Record<string, PointerSpec> = {};
  for (const [field, spec] of Object.entries(fa)) {
    const w = `${where}.from_arguments.${field}`;
    if (isObject(spec)) {
      if (!UID_FIELDS.has(field)) throw new WritError('INVALID_REQUEST', `defaults: ${w}: only entity fields take {type, id}`);
      if (typeof spec.type !== 'string') throw new WritError('INVALID_REQUEST', `defaults: ${w}.type must be a string`);
      from[field] = { type: spec.type, id: checkPointer(spec.id, `${w}.id`) };
    } else {
      from[field] = checkPointer(spec, w);
    }
  }
  return { envelope: env, from_arguments: from };
}

/** Parses a defaults document (either form). Throws WritError INVALID_REQUEST on a malformed one. */
export function parseDefaults(doc: unknown): Defaults {
  if (!isObject(doc)) throw new WritError('INVALID_REQUEST', 'defaults: must be a JSON object');
  if (!('envelope' in doc)) return { base: { envelope: doc, from_arguments: {} }, tools: {}, prefix: 'writ-proxy' };
  const known = new Set(['envelope', 'from_arguments', 'tools', 'execution_id_prefix']);
  for (const k of Object.keys(doc)) if (!known.has(k)) throw new WritError('INVALID_REQUEST', `defaults: unknown key "${k}"`);
  const tools: Record<string, Layer> = {};
  if (doc.tools !== undefined) {
    if (!isObject(doc.tools)) throw new WritError('INVALID_REQUEST', 'defaults: tools must be an object');
    for (const [name, layer] of Object.entries(doc.tools)) tools[name] = parseLayer(layer, `tools.${name}`);
  }
  const prefix = doc.execution_id_prefix ?? 'writ-proxy';
  if (typeof prefix !== 'string' || !/^[A-Za-z0-9._:-]{1,80}$/.test(prefix)) {
    throw new WritError('INVALID_REQUEST', 'defaults: execution_id_prefix must be 1-80 chars of A-Za-z0-9._:-');
  }
  return { base: parseLayer(doc, 'defaults'), tools, prefix };
}

/** RFC 6901 lookup; undefined when it does not resolve. */
export function resolvePointer(doc: unknown, pointer: string): unknown {
  if (pointer === '') return doc;
  let cur: unknown = doc;
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9][0-9]*)$/.test(key)) return undefined;
      cur = cur[Number(key)];
    } else if (isObject(cur)) {
      if (!Object.hasOwn(cur, key)) return undefined;
      cur = cur[key];
    } else {
      return undefined;
    }
  }
  return cur;
}

function idText(v: unknown): string | undefined {
  if (typeof v === 'string' && v.length > 0) return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  return undefined;
}

/** The envelope the defaults give for one call of `tool` with `args`. Throws MISSING_CONTEXT. */
export function envelopeFromDefaults(d: Defaults, tool: string, args: unknown): Record<string, unknown> {
  const t = Object.hasOwn(d.tools, tool) ? d.tools[tool] : undefined;
  const env: Record<string, unknown> = structuredClone({ ...d.base.envelope, ...(t?.envelope ?? {}) });
  const from = { ...d.base.from_arguments, ...(t?.from_arguments ?? {}) };
  for (const [field, spec] of Object.entries(from)) {
    if (typeof spec === 'string') {
      const v = resolvePointer(args, spec);
      if (UID_FIELDS.has(field)) {
        if (!isObject(v) || typeof v.type !== 'string' || idText(v.id) === undefined) {
          throw new WritError('MISSING_CONTEXT', `envelope.${field}: the arguments have no {type, id} at ${JSON.stringify(spec)}`, { path: spec });
        }
        env[field] = { type: v.type, id: idText(v.id) };
      } else {
        if (v === undefined || v === null) {
          throw new WritError('MISSING_CONTEXT', `envelope.${field}: the arguments have no value at ${JSON.stringify(spec)}`, { path: spec });
        }
        env[field] = v;
      }
    } else {
      const id = idText(resolvePointer(args, spec.id));
      if (id === undefined) {
        throw new WritError('MISSING_CONTEXT', `envelope.${field}: the arguments have no id at ${JSON.stringify(spec.id)}`, { path: spec.id });
      }
      env[field] = { type: spec.type, id };
    }
  }
  return env;
}

/**
 * A fresh execution id for a call that brought none: a time-ordered UUID (RFC 9562 version 7: a
 * millisecond timestamp, then 74 random bits). The sidecar keys executions by their id in B-trees, and
 * ids minted in time order are appended next to each other; random (version 4) ids land anywhere and
 * make every group commit write and fsync more pages (docs/protocol.md, "Execution ids").
 */
export function freshExecutionId(prefix = 'writ-proxy'): string {
  return `${prefix}:${uuidv7()}`;
}

/** The (envelope, execution id) of one call, per the order above. Throws MISSING_CONTEXT. */
export function callContext(meta: unknown, defaults: Defaults | undefined, tool: string, args: unknown): { envelope: unknown; executionId: unknown } {
  const m = isObject(meta) ? meta : {};
  const hasEnv = Object.hasOwn(m, META_ENVELOPE) && m[META_ENVELOPE] !== undefined;
  const hasId = Object.hasOwn(m, META_EXECUTION_ID) && m[META_EXECUTION_ID] !== undefined;
  let envelope: unknown;
  if (hasEnv) envelope = m[META_ENVELOPE];
  else if (defaults) envelope = envelopeFromDefaults(defaults, tool, args);
  else {
    throw new WritError(
      'MISSING_CONTEXT',
      `no envelope: send params._meta["${META_ENVELOPE}"] and params._meta["${META_EXECUTION_ID}"], or start the PEP with defaults`,
    );
  }
  let executionId: unknown;
  if (hasId) executionId = m[META_EXECUTION_ID];
  else if (defaults) executionId = freshExecutionId(defaults.prefix);
  else {
    const path = `params._meta["${META_EXECUTION_ID}"]`;
    throw new WritError('MISSING_CONTEXT', `no execution id: send ${path} with the envelope (the PEP mints fresh ids only when started with defaults)`, {
      path,
    });
  }
  return { envelope, executionId };
}

/** A complete envelope of placeholders: a defaults layer is checked as the members it gives over these. */
const PLACEHOLDER_ENVELOPE = {
  task_id: 'placeholder',
  purpose: 'placeholder',
  requester: { type: 'User', id: 'placeholder' },
  actor: { type: 'Agent', id: 'placeholder' },
  subject: { type: 'Subject', id: 'placeholder' },
};

/**
 * Why an envelope member the defaults give could never pass §2 (a `task_id` that is a number, an
 * unknown member, a malformed timestamp…), or undefined. Such defaults would start a proxy whose every
 * call that relies on them is refused ENVELOPE_INVALID; the check runs the envelope schema over the
 * defaults' members laid on a complete envelope of placeholders.
 */
export function defaultsEnvelopeIssue(defaults: Defaults): string | undefined {
  const layers: Array<[string, Record<string, unknown>]> = [['envelope', defaults.base.envelope]];
  for (const [tool, layer] of Object.entries(defaults.tools)) layers.push([`tools.${tool}.envelope`, layer.envelope]);
  for (const [where, envelope] of layers) {
    const issue = schemaIssue('envelope.json', { ...PLACEHOLDER_ENVELOPE, ...envelope });
    if (issue) return `${where}${issue.path.replace(/\//g, '.')}: ${issue.message} (ENVELOPE_INVALID)`;
  }
  return undefined;
}
