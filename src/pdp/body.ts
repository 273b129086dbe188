/**
 * The bodies of the PDP's JSON routes (outcomes, approvals, entity upserts…), parsed without loss.
 */
import { WritError } from '../errors.js';
import { parseLossless, toPlain, type Json } from '../binding/index.js';
import { relabelDepthStop } from '../binding/parse.js';
import type { LosslessValue } from '../binding/parse.js';

/** A request body, parsed without loss (number tokens kept); an empty one is INVALID_JSON. */
export function parseLosslessBody(text: string): LosslessValue {
  if (text.trim() === '') throw new WritError('INVALID_JSON', 'the request body is empty');
  try {
    return parseLossless(text);
  } catch (e) {
    // These bodies carry no arguments: the parser's depth stop is no binding refusal here.
    throw relabelDepthStop(e, () => 'INVALID_REQUEST');
  }
}

export function parseBody(text: string): Json {
  return toPlain(parseLosslessBody(text));
}
