/**
 * The compression dictionary of the records and state rows of a format-2 LMDB store (LZ4, layout.ts)
 * and of a schema-2 PostgreSQL database (DEFLATE, postgres/packing.ts), so a short value still finds
 * matches for its field names and fixed fragments. It holds only what writ itself writes the same way
 * in every deployment (member names in JCS order, fixed prefixes and codes), no deployment's values.
 * Stored values depend on every byte of it: it never changes within a format; a different dictionary
 * is a new format (and schema). Both codecs prefer near matches, so the commonest text (a decision
 * record's skeleton) comes last.
 */
const PARTS = [
  // State rows: executions, approvals, queue and pending entries, counts.
  '{"execution_id":"","actor":{"type":"Agent","id":""},"state":"proposed","binding":"writ-bind/1:sha256:","envelope_digest":"sha256:',
  '","subject":{"type":"","id":""},"server":"","tool":"","approvals":[],"records":[],"rev":0,"pending":{"groups":[],"seq":0},',
  '"approval_groups":[],"since":"","state":"invoking","state":"committed","state":"rejected","state":"unknown","state":"reconciled",',
  '{"approval_id":"","approver":{"type":"User","id":""},"expires_at":"","revoked":false}',
  // Other record kinds' members, in JCS (sorted) order.
  '{"attrs":{},"entities_version":"sha256:","hash":"sha256:","kind":"entity","parents":[],"prev":"sha256:","seq":0,"source":"","ts":"","uid":{"id":"","type":""},"v":1}',
  '{"entities_file":"","files":[],"hash":"sha256:","ids":[],"kind":"policy","policy_version":"sha256:","prev":"sha256:","result":"loaded","seq":0,"ts":"","v":1}',
  '{"hash":"sha256:","key_id":"","kind":"checkpoint","prev":"sha256:","root":"sha256:","seq":0,"signature":"","size":0,"ts":"","v":1}',
  '{"actor":{"id":"","type":"Agent"},"approval_id":"","approver":{"id":"","type":"User"},"binding":"writ-bind/1:sha256:","caller":{"name":"","role":"approver"},',
  '"envelope_digest":"sha256:","execution_id":"","expires_at":"","hash":"sha256:","kind":"approval","prev":"sha256:","seq":0,"ts":"","v":1}',
  '{"actor":{"id":"","type":"Agent"},"caller":{"name":"","role":"pep"},"execution_id":"","hash":"sha256:","kind":"outcome","outcome":"committed",',
  '"prev":"sha256:","seq":0,"state":"committed","ts":"","v":1}{"code":"EXECUTION_CONFLICT","kind":"refusal","message":""}',
  // A decision record: the commonest text, last.
  '{"actor":{"id":"","type":"Agent"},"approvals":[],"arguments":{},"binding":"writ-bind/1:sha256:","caller":{"name":"","role":"pep"},',
  '"decision":"allow","decision":"deny","decision":"approval_required","decision_id":"","entities_version":"sha256:",',
  '"envelope":{"actor":{"id":"","type":"Agent"},"authoritative_event":"","evidence_refs":[],"execute_after":"","purpose":"",',
  '"requester":{"id":"","type":"User"},"subject":{"id":"","type":""},"supersedes":null,"task_id":"","traceparent":"00-"},',
  '"envelope_digest":"sha256:","errors":[],"execution_id":"","hash":"sha256:","kind":"decision","now":"","obligations":[{"approver_group":"","policy":""}],',
  '"phase":"propose","phase":"execute","policy_version":"sha256:","prev":"sha256:","prior":{"committed":0,"invoking":0,"proposed_allowed":0,"unknown":0},',
  '"reasons":[],"seq":0,"server":"","state":"proposed","tool":"","trace_id":"","ts":"","v":1}',
];

const TEXT = PARTS.join('');
/** Padded at the front to a multiple of 8 bytes: lmdb-js hands LZ4 the dictionary's word-aligned length. */
export const RECORD_DICTIONARY: Buffer = Buffer.from(' '.repeat((8 - (Buffer.byteLength(TEXT) % 8)) % 8) + TEXT, 'utf8');
