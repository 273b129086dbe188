/**
 * Admission of tool events (docs/protocol.md §17): `{events: [{type, data}]}`, at most 100, `type` 1–64
 * characters of `A-Za-z0-9._:-`, and each `data` admitted exactly as a decision's arguments are (§3):
 * parsed without loss and refused with the same BINDING_* codes and a JSON pointer into this body, so
 * what a record keeps is what was sent, never a rounded copy.
 */
import { WritError } from '../errors.js';
import { admitValue, memberOf, parseLossless, toPlain, type Json, type LosslessValue } from '../binding/index.js';
import { relabelDepthStop } from '../binding/parse.js';
import { validateEventsRequest } from '../schemas/validate.js';

export interface ToolEvent {
  type: string;
  data: Json;
}

export function admitEvents(text: string, delegated = false): ToolEvent[] {
  if (text.trim() === '') throw new WritError('INVALID_JSON', 'the request body is empty');
  let raw: LosslessValue;
  try {
    raw = parseLossless(text);
  } catch (e) {
    // Depth inside an event's data is a binding refusal (as in arguments); elsewhere a malformed body.
    throw relabelDepthStop(e, (path) => (/^\/events\/\d+\/data(\/|$)/.test(path) ? undefined : 'INVALID_REQUEST'));
  }
  const plain = toPlain(raw);
  validateEventsRequest(plain);
  if (!delegated && plain.identity_token !== undefined) {
    throw new WritError('INVALID_REQUEST', 'identity_token is sent only by a delegated pep (docs/protocol.md §13)', { path: '/identity_token' });
  }
  // The types come from the validated body; each event's data is admitted from the lossless value.
  const list = memberOf(raw, 'events') as LosslessValue[];
  return plain.events.map(({ type }, i) => ({
    type,
    data: admitValue(memberOf(list[i], 'data')!, `/events/${i}/data`),
  }));
}
