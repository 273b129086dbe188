/**
 * writ-bind/1, the admission core (docs/protocol.md §3): lossless parsing, admission or refusal, and the
 * three views of one admitted value — canonical text (what the tool receives), binding digest, and
 * Cedar context value. Equal binding ⇒ equal policy input ⇒ equal tool input.
 */
export {
  LosslessNumber,
  PARSE_MAX_DEPTH,
  parseLossless,
  parseLosslessWithRootText,
  jsonPointer,
  isLosslessObject,
  memberOf,
  type LosslessObject,
  type LosslessValue,
} from './parse.js';
export { MAX_ARGUMENT_DEPTH, admitNumberToken, admitValue, toPlain, type Json } from './admit.js';
export {
  BINDING_PROFILE,
  admitArgumentsText,
  bindCall,
  bindingFromCanonical,
  bindingFromCanonicalMembers,
  bindingOf,
  canonicalText,
  cedarView,
  envelopeDigest,
  envelopeDigestOfCanonical,
  storedArgumentsProblem,
  type BoundCall,
  type CedarValue,
} from './views.js';
