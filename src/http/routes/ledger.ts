/**
 * The ledger, auditor only (docs/protocol.md §9, §16): records, one record, the latest checkpoint, the
 * keys, inclusion and consistency proofs, the export.
 */
import type { Hono } from 'hono';
import { logVkey, type CheckpointNotes } from '../../checkpoints/notes.js';
import { NOTE_MEDIA_TYPE, tlogProofOf } from '../../checkpoints/routes.js';
import { WritError } from '../../errors.js';
import { LEDGER_RECORD_KINDS } from '../../schemas/load.js';
import type { LedgerStore } from '../../store/types.js';
import { parseUidKey, uidKey } from '../../util/uid.js';
import { intParam } from '../params.js';
import type { AppEnv, RouteKit } from '../route-kit.js';

export interface LedgerDeps {
  store: LedgerStore;
  /** The ledger as C2SP signed notes (keys' vkeys, tlog-proofs); absent: this sidecar serves none. */
  notes?: CheckpointNotes | undefined;
}

export function registerLedgerRoutes(app: Hono<AppEnv>, kit: RouteKit, d: LedgerDeps): void {
  const { store } = d;
  app.get('/v1/ledger/records', kit.roles('auditor'), async (c) => {
    const q: { from: number; limit: number; kind?: string; actor?: string; execution_id?: string; task_id?: string; trace_id?: string } = {
      from: intParam(c, 'from', 0),
      // Past 1000 a page is capped (`next` goes on from there); an empty page is not a request.
      limit: Math.min(intParam(c, 'limit', 100), 1000),
    };
    if (q.limit < 1) throw new WritError('INVALID_REQUEST', 'query parameter limit must be from 1 to 1000');
    const kind = c.req.query('kind');
    if (kind) {
      // A misspelt kind would otherwise list nothing, indistinguishable from a ledger without such records.
      if (!(LEDGER_RECORD_KINDS as readonly string[]).includes(kind)) {
        throw new WritError('INVALID_REQUEST', `kind must be one of ${LEDGER_RECORD_KINDS.join(', ')}`);
      }
      q.kind = kind;
    }
    const actor = c.req.query('actor');
    if (actor) {
      const uid = parseUidKey(actor);
      if (!uid) throw new WritError('INVALID_REQUEST', 'actor must be Type::"id"');
      // The uid as the store keys it: `Agent::"a\u002db"` names the same actor as `Agent::"a-b"`.
      q.actor = uidKey(uid);
    }
    const execution = c.req.query('execution_id');
    if (execution) q.execution_id = execution;
    // Correlation (§17): the decisions of one task, or of one trace (the envelope's traceparent).
    const task = c.req.query('task_id');
    if (task) q.task_id = task;
    const trace = c.req.query('trace_id');
    if (trace) {
      if (!/^[0-9a-f]{32}$/.test(trace)) throw new WritError('INVALID_REQUEST', 'trace_id is 32 lower-case hex digits (the trace id of a traceparent)');
      q.trace_id = trace;
    }
    return c.json(await store.listRecords(q));
  });
  app.get('/v1/ledger/records/:seq', kit.roles('auditor'), async (c) => {
    const raw = c.req.param('seq') ?? '';
    // A seq is a whole number (§8: a malformed path segment is 400); a well-formed one past the end is 404.
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw)))
      throw new WritError('INVALID_REQUEST', `a record seq is a whole number from 0, not ${JSON.stringify(raw)}`);
    const record = await store.getRecord(Number(raw));
    if (!record) throw new WritError('NOT_FOUND', `no record ${raw}`);
    return c.json(record);
  });
  app.get('/v1/ledger/checkpoint', kit.roles('auditor'), async (c) => {
    const cp = await store.latestCheckpoint();
    if (!cp) throw new WritError('NOT_FOUND', 'no checkpoint has been written yet');
    return c.json(cp);
  });
  app.get('/v1/ledger/keys', kit.roles('auditor'), async (c) => {
    const keys = await store.keys();
    const notes = d.notes;
    return c.json({ keys: notes ? keys.map((k) => ({ ...k, vkey: logVkey(notes.origin, k.public_key) })) : keys });
  });
  app.get('/v1/ledger/proofs/inclusion', kit.roles('auditor'), async (c) => {
    const format = c.req.query('format');
    if (format !== undefined && format !== 'json' && format !== 'tlog-proof') throw new WritError('INVALID_REQUEST', 'format must be json or tlog-proof');
    if (format === 'tlog-proof') {
      if (!d.notes) throw new WritError('NOT_FOUND', 'this sidecar serves no signed notes');
      if (c.req.query('size') !== undefined) throw new WritError('INVALID_REQUEST', 'a tlog-proof is for the latest checkpoint: leave size out');
      return c.body(await tlogProofOf({ notes: d.notes, store }, intParam(c, 'seq')), 200, { 'content-type': NOTE_MEDIA_TYPE });
    }
    const seq = intParam(c, 'seq');
    const committed = await store.size();
    const size = intParam(c, 'size', committed);
    if (size > committed || seq >= size) throw new WritError('INVALID_REQUEST', `need seq < size <= ${committed}`);
    return c.json({ seq, size, leaf: (await store.getRecord(seq))!.hash, root: await store.root(size), path: await store.inclusionProof(seq, size) });
  });
  app.get('/v1/ledger/proofs/consistency', kit.roles('auditor'), async (c) => {
    const from = intParam(c, 'from');
    const committed = await store.size();
    const to = intParam(c, 'to', committed);
    if (from < 1 || from > to || to > committed) throw new WritError('INVALID_REQUEST', `need 1 <= from <= to <= ${committed}`);
    return c.json({ from, to, from_root: await store.root(from), to_root: await store.root(to), path: await store.consistencyProof(from, to) });
  });
  app.get('/v1/ledger/export', kit.roles('auditor'), async (c) => {
    const from = intParam(c, 'from', 0);
    const committed = await store.size();
    const to = intParam(c, 'to', committed);
    const source = store.exportLines(from, Math.min(to, committed));
    // LMDB gives a synchronous iterator (no await per line); a shared store pages asynchronously.
    const lines: Iterator<string> | AsyncIterator<string> = Symbol.asyncIterator in source ? source[Symbol.asyncIterator]() : source[Symbol.iterator]();
    const encoder = new TextEncoder();
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        // Batches of lines per chunk keep memory flat for exports of millions of records.
        let chunk = '';
        for (let i = 0; i < 512; i++) {
          const pending = lines.next();
          const next = pending instanceof Promise ? await pending : pending;
          if (next.done) {
            if (chunk) controller.enqueue(encoder.encode(chunk));
            controller.close();
            return;
          }
          chunk += `${next.value}\n`;
        }
        controller.enqueue(encoder.encode(chunk));
      },
    });
    return c.body(stream, 200, { 'content-type': 'application/x-ndjson' });
  });
}
