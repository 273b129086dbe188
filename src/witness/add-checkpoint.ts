/**
 * The C2SP tlog-witness v1.0.0 `add-checkpoint` decision (c2sp.org/tlog-witness), pure: given the request
 * body, the logs the witness knows (by origin) and the latest checkpoint it cosigned for that origin,
 * the HTTP status and what to store. The caller persists before it cosigns and answers.
 *
 *   400  the body is malformed, or the old size exceeds the checkpoint's size
 *   403  no signature of a key trusted for the origin verifies
 *   404  the origin is unknown
 *   409  the old size is not the size last cosigned (body: that size, `text/x.tlog.size`), or the same
 *        size with another root
 *   422  the consistency proof does not verify (or is not empty when the old size is 0)
 *   200  cosign: the new state is {size, root}
 */
import { ProofError, verifyConsistency } from '../ledger/merkle/verify.js';
import { parseCheckpoint, type CheckpointBody } from '../transparency/checkpoint.js';
import { NoteError, parseNote, strictBase64, verifyNote, type Note, type VerifierKey } from '../transparency/note.js';

/** The consistency proof has at most this many lines (the spec's bound). */
export const MAX_PROOF_LINES = 63;

export interface AddCheckpointRequest {
  oldSize: number;
  proof: Buffer[];
  /** The checkpoint note as sent (with all its signatures). */
  note: string;
}

export interface CosignedState {
  size: number;
  /** base64 of the 32-byte root. */
  root: string;
}

export type AddCheckpointOutcome =
  | { status: 200; checkpoint: CheckpointBody; note: Note; state: CosignedState }
  | { status: 409; size: number; reason: string }
  | { status: 400 | 403 | 404 | 422; reason: string };

/** Reads the body: `old N\n`, proof lines, an empty line, the checkpoint note. */
export function parseAddCheckpoint(body: string): AddCheckpointRequest {
  const bad = (why: string) => new NoteError('MALFORMED', why);
  const blank = body.indexOf('\n\n');
  if (blank < 0) throw bad('the body has an old size line, proof lines, an empty line, then the checkpoint');
  const head = body.slice(0, blank).split('\n');
  const m = /^old (0|[1-9][0-9]{0,15})$/.exec(head[0] ?? '');
  if (!m || !Number.isSafeInteger(Number(m[1]))) throw bad('the first line is "old <size>" (decimal, no leading zero)');
  const lines = head.slice(1);
  if (lines.length > MAX_PROOF_LINES) throw bad(`at most ${MAX_PROOF_LINES} consistency proof lines`);
  const proof = lines.map((l) => {
    const h = strictBase64(l);
    if (h?.length !== 32) throw bad('each proof line is base64 of a 32-byte hash');
    return h;
  });
  return { oldSize: Number(m[1]), proof, note: body.slice(blank + 2) };
}

export function decideAddCheckpoint(
  body: string,
  logs: ReadonlyMap<string, VerifierKey[]>,
  cosigned: (origin: string) => CosignedState | undefined,
): AddCheckpointOutcome {
  let req: AddCheckpointRequest;
  let note: Note;
  let checkpoint: CheckpointBody;
  try {
    req = parseAddCheckpoint(body);
    note = parseNote(req.note);
    checkpoint = parseCheckpoint(note.text);
  } catch (e) {
    return { status: 400, reason: (e as Error).message };
  }
  const keys = logs.get(checkpoint.origin);
  if (!keys) return { status: 404, reason: `unknown log origin ${JSON.stringify(checkpoint.origin)}` };
  try {
    verifyNote(note, keys);
  } catch (e) {
    return { status: 403, reason: e instanceof NoteError ? e.message : 'the checkpoint signature does not verify' };
  }
  if (req.oldSize > checkpoint.size) return { status: 400, reason: `old size ${req.oldSize} is larger than the checkpoint's size ${checkpoint.size}` };
  const held = cosigned(checkpoint.origin);
  const heldSize = held?.size ?? 0;
  if (req.oldSize !== heldSize) return { status: 409, size: heldSize, reason: `the latest cosigned size is ${heldSize}, not ${req.oldSize}` };
  const root = checkpoint.root.toString('base64');
  if (held && held.size === checkpoint.size) {
    if (held.root !== root) return { status: 409, size: heldSize, reason: `a different tree of size ${heldSize} was cosigned` };
    if (req.proof.length !== 0) return { status: 422, reason: 'the consistency proof between equal trees is empty' };
  } else if (req.oldSize === 0) {
    if (req.proof.length !== 0) return { status: 422, reason: 'the consistency proof from size 0 is empty' };
  } else {
    try {
      verifyConsistency(req.oldSize, checkpoint.size, Buffer.from(held!.root, 'base64'), checkpoint.root, req.proof);
    } catch (e) {
      if (!(e instanceof ProofError)) throw e;
      return { status: 422, reason: `the consistency proof from ${req.oldSize} to ${checkpoint.size} does not verify` };
    }
  }
  return { status: 200, checkpoint, note, state: { size: checkpoint.size, root } };
}
