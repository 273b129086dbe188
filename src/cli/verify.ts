/**
 * `writ verify EXPORT.jsonl [--keys KEYS.json] [--checkpoint CP.json]` (docs/protocol.md §6): checks a
 * ledger export offline, streaming (constant memory in the export's size), and prints one JSON line:
 *   {"ok":true,"records":N,"head":"<last record's hash>"}            exit 0
 *   {"ok":false,"seq":S,"code":"…"}                                  exit 1
 * exactly these members, so a caller can compare the object whole; on exit 1 the human explanation
 * is one line on stderr, `writ verify: seq S: CODE: <why>`. Usage errors (bad flags, unreadable or
 * invalid files, a --keys or --checkpoint document that is not one) print on stderr only and exit 2.
 */
import { createHash } from 'node:crypto';
import { createReadStream, readFileSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { isWritError, WritError } from '../errors.js';
import { ExportVerifier, parseKeysFile, type VerifyCode, type VerifyOptions, type VerifyResult } from '../ledger/verify.js';
import { pushLineBytes } from '../ledger/verify-block.js';
import { splitLines } from '../util/lines.js';
import { streamReader, verifyInParallel, type ReadBytes } from '../ledger/verify-parallel.js';
import { checkNoteUnderPolicy, parsePolicy, type TrustPolicy } from '../transparency/policy.js';
import { NoteError, parseNote } from '../transparency/note.js';
import { parseCheckpoint } from '../transparency/checkpoint.js';
import { parseTlogProof, type TlogProof } from '../transparency/proof.js';
import { recordEntry } from '../ledger/record.js';
import { hashToBytes } from '../ledger/merkle/hasher.js';
import { ProofError, verifyInclusion } from '../ledger/merkle/verify.js';

export const VERIFY_USAGE = `usage: writ verify EXPORT.jsonl [--keys KEYS.json] [--checkpoint CP.json] [--workers N]
       writ verify EXPORT.jsonl --note NOTE --policy POLICY [--keys KEYS.json] [--workers N]
       writ verify RECORD.json --proof PROOF --policy POLICY

Verifies a ledger export (GET /v1/ledger/export; '-' reads stdin) offline: every line is its record's
JCS text, seqs are contiguous from 0, every hash and prev link, every key record and checkpoint
(root and signature), and every decision binding recomputed from its stored arguments.

options:
  --keys KEYS.json        trusted public keys, {"keys":[{"key_id","public_key"}]} as served by
                          GET /v1/ledger/keys: the ledger's first key must be one of them (an
                          export with no key record, an empty one included, fails); a key
                          rotated in later is trusted through its signature by the key before it
  --checkpoint CP.json    a checkpoint record held from earlier (GET /v1/ledger/checkpoint): its
                          signature must verify and the export must extend it
  --note NOTE             a C2SP signed-note checkpoint (GET /ledger/checkpoint, with its witness
                          cosignatures): it must be signed by a log of the policy (key name =
                          origin) and cosigned by a quorum of its witnesses, and the export must
                          extend its tree (docs/protocol.md §16)
  --policy POLICY         a C2SP tlog-policy file: log <vkey>, witness <name> <vkey>, group <name>
                          all|any|<k> <member…>, quorum <name>|none
  --proof PROOF           a C2SP tlog-proof of one record (GET /v1/ledger/proofs/inclusion?seq=S&
                          format=tlog-proof): RECORD.json is that record's JCS line (a line of the
                          export); its hash, its inclusion at the proof's index and the proof's note
                          under --policy are checked; prints {"ok":true,"records":1,"head":<its hash>}
  --workers N             worker threads for the per-record checks (default: the number of CPUs,
                          or $WRIT_VERIFY_WORKERS); 0 checks everything on the main thread. Files
                          under 8 MB are checked on the main thread unless N is given.
  -h, --help              show this help

prints {"ok":true,"records":N,"head":"sha256:…"} and exits 0, or
       {"ok":false,"seq":S,"code":"…"} and exits 1, with code one of HASH_MISMATCH, PREV_MISMATCH,
       SEQ_GAP, ROOT_MISMATCH, BAD_SIGNATURE, UNKNOWN_KEY, BINDING_MISMATCH, TRUNCATED, MALFORMED, ILLEGAL_TRANSITION,
       QUORUM_NOT_MET (a note's quorum; S is the note's tree size), and the reason on stderr ("writ verify: seq S: CODE: …"); usage errors print on stderr and
       exit 2.
`;

/**
 * Streams a file (or stdin) through the verifier, splitting lines on \n at the byte level so a line
 * split across chunks is carried over. Only the current partial line is buffered.
 */
export async function verifyStream(stream: NodeJS.ReadableStream, opts: VerifyOptions): Promise<VerifyResult> {
  const verifier = new ExportVerifier(opts);
  const failure = await splitLines(stream as AsyncIterable<Buffer>, (buf, start, end) => pushLineBytes(verifier, buf, start, end));
  if (failure) return failure;
  return verifier.finish();
}

function usageError(message: string): number {
  process.stderr.write(`writ verify: ${message}\n\n${VERIFY_USAGE}`);
  return 2;
}

/** A file's text, or WritError INVALID_REQUEST naming the flag it came from (a usage error). */
function readTextFile(flag: string, file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new WritError('INVALID_REQUEST', `${flag}: cannot read ${file}: ${(err as Error).message}`);
  }
}

function readJsonFile(flag: string, file: string): unknown {
  const text = readTextFile(flag, file);
  try {
    return JSON.parse(text);
  } catch {
    throw new WritError('INVALID_REQUEST', `${flag}: ${file} is not JSON`);
  }
}

/**
 * The trust anchors of `writ verify` (and `writ policy replay`): --keys and --checkpoint files, read
 * and validated before the export is touched. Throws WritError INVALID_REQUEST naming the flag.
 */
export function readVerifyAnchors(keysFile: string | undefined, checkpointFile: string | undefined): VerifyOptions {
  const opts: VerifyOptions = {};
  if (keysFile !== undefined) opts.keys = parseKeysFile(readJsonFile('--keys', keysFile));
  if (checkpointFile !== undefined) opts.checkpoint = readJsonFile('--checkpoint', checkpointFile) as Record<string, unknown>;
  new ExportVerifier(opts); // validates the documents' shapes
  return opts;
}

type NotedTree = { ok: true; tree: { size: number; root: string }; said: string } | { ok: false; failure: VerifyResult & { ok: false } };

/**
 * --note and --policy (docs/protocol.md §16): the note's signatures under the policy, checked before the
 * export is read; its tree then becomes the one the export must extend. A file that cannot be read, a
 * policy that is not one or a note that is no signed checkpoint is a usage error (WritError).
 */
function readNoteAndPolicy(noteFile: string | undefined, policyFile: string | undefined, checkpointFile: string | undefined): NotedTree | undefined {
  if (noteFile === undefined && policyFile === undefined) return undefined;
  if (noteFile === undefined || policyFile === undefined) throw new WritError('INVALID_REQUEST', '--note and --policy go together');
  if (checkpointFile !== undefined) throw new WritError('INVALID_REQUEST', '--checkpoint or --note, not both');
  let policy: TrustPolicy;
  try {
    policy = parsePolicy(readTextFile('--policy', policyFile));
  } catch (e) {
    if (e instanceof NoteError) throw new WritError('INVALID_REQUEST', `--policy: ${e.message}`);
    throw e;
  }
  const verdict = checkNoteUnderPolicy(readTextFile('--note', noteFile), policy);
  if (!verdict.ok) {
    if (verdict.code === 'MALFORMED') throw new WritError('INVALID_REQUEST', `--note: ${verdict.message}`);
    // Reported at the note's tree size, as a held checkpoint without a seq is.
    let size: number;
    try {
      size = parseCheckpoint(parseNote(readTextFile('--note', noteFile)).text).size;
    } catch {
      size = 0;
    }
    return { ok: false, failure: { ok: false, seq: size, code: verdict.code, message: verdict.message } };
  }
  const { checkpoint, cosigned } = verdict;
  return {
    ok: true,
    tree: { size: checkpoint.size, root: `sha256:${checkpoint.root.toString('hex')}` },
    said:
      `the note of ${checkpoint.origin} at size ${checkpoint.size} is signed by ${verdict.log.vkey.split('+').slice(0, 2).join('+')} ` +
      `and cosigned by ${cosigned.length} witness(es)${cosigned.length ? ` (${cosigned.join(', ')})` : ''}: quorum ${policy.quorum} met`,
  };
}

/**
 * One record against its C2SP tlog-proof under a policy (docs/protocol.md §16): the record's line must
 * hash to its own `hash` (HASH_MISMATCH) and sit at the proof's index (its `seq`), the proof's note must
 * pass the policy (UNKNOWN_KEY, BAD_SIGNATURE, QUORUM_NOT_MET), and the inclusion proof must lead from the
 * record's hash to the note's root (ROOT_MISMATCH). Unreadable or unparsable files are usage errors.
 */
function verifyRecordProof(recordFile: string, proofFile: string, policyFile: string): VerifyResult {
  let proof: TlogProof;
  let policy: TrustPolicy;
  try {
    proof = parseTlogProof(readTextFile('--proof', proofFile));
    policy = parsePolicy(readTextFile('--policy', policyFile));
  } catch (e) {
    if (e instanceof NoteError) throw new WritError('INVALID_REQUEST', e.message);
    throw e;
  }
  const line = readTextFile('RECORD', recordFile).replace(/\r?\n$/, '');
  let record: { seq?: unknown; hash?: unknown };
  try {
    record = JSON.parse(line);
  } catch {
    return { ok: false, seq: proof.index, code: 'MALFORMED', message: 'the record is not JSON' };
  }
  const fail = (code: VerifyCode, message: string): VerifyResult => ({ ok: false, seq: proof.index, code, message });
  if (record.seq !== proof.index) return fail('MALFORMED', `the record's seq ${String(record.seq)} is not the proof's index ${proof.index}`);
  const entry = recordEntry(line);
  // The hash cut out must be the record's own (top-level) hash, not one nested in its content.
  if (
    entry === undefined ||
    `sha256:${createHash('sha256')
      .update(Buffer.from([0]))
      .update(entry)
      .digest('hex')}` !== record.hash
  )
    return fail('HASH_MISMATCH', "the record's text does not hash to its hash (give the record's line from the export, byte for byte)");
  const verdict = checkNoteUnderPolicy(proof.note, policy);
  if (!verdict.ok) {
    if (verdict.code === 'MALFORMED') throw new WritError('INVALID_REQUEST', `--proof: ${verdict.message}`);
    return fail(verdict.code, verdict.message);
  }
  const { size, root } = verdict.checkpoint;
  try {
    verifyInclusion(proof.index, size, hashToBytes(String(record.hash)), proof.path, root);
  } catch (e) {
    if (!(e instanceof ProofError)) throw e;
    return fail('ROOT_MISMATCH', `the inclusion proof does not lead from record ${proof.index} to the root of the note's tree of ${size}`);
  }
  return { ok: true, records: 1, head: String(record.hash) };
}

/** Below this size a file is verified on the main thread: starting workers would cost more than they save. */
const PARALLEL_MIN_BYTES = 8 << 20;

/** --workers, else $WRIT_VERIFY_WORKERS, else one worker per CPU; `given` when either was set. */
function workerCount(flag: string | undefined, env: string | undefined): { workers: number; given: boolean } {
  const text = flag ?? (env === '' ? undefined : env);
  if (text === undefined) return { workers: availableParallelism(), given: false };
  const what = flag !== undefined ? '--workers' : 'WRIT_VERIFY_WORKERS';
  if (!/^\d{1,4}$/.test(text)) throw new WritError('INVALID_REQUEST', `${what} must be a whole number of worker threads, got ${JSON.stringify(text)}`);
  return { workers: Number(text), given: true };
}

/** Verifies the export at `exportPath` ('-': stdin), with workers unless the input is small or `workers` is 0. */
export async function verifyInput(exportPath: string, opts: VerifyOptions, workers: number, workersGiven: boolean): Promise<VerifyResult> {
  if (exportPath === '-') {
    if (workers === 0) return verifyStream(process.stdin, opts);
    const stdin = streamReader(process.stdin);
    try {
      return await verifyInParallel(stdin.read, opts, { workers });
    } finally {
      await stdin.close();
    }
  }
  if (workers === 0 || (!workersGiven && statSync(exportPath).size < PARALLEL_MIN_BYTES)) {
    const stream = createReadStream(exportPath, { highWaterMark: 1 << 20 });
    try {
      return await verifyStream(stream, opts);
    } finally {
      stream.destroy();
    }
  }
  const file = await open(exportPath, 'r');
  try {
    const read: ReadBytes = async (into, offset, length) => (await file.read(into, offset, length, null)).bytesRead;
    return await verifyInParallel(read, opts, { workers });
  } finally {
    await file.close();
  }
}

export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        keys: { type: 'string' },
        checkpoint: { type: 'string' },
        note: { type: 'string' },
        policy: { type: 'string' },
        proof: { type: 'string' },
        workers: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    return usageError((err as Error).message);
  }
  if (parsed.values.help) {
    process.stdout.write(VERIFY_USAGE);
    return 0;
  }
  if (parsed.positionals.length !== 1) return usageError('expected exactly one EXPORT file');
  const exportPath = parsed.positionals[0]!;
  if (parsed.values.proof !== undefined) {
    if (parsed.values.policy === undefined) return usageError('--proof needs --policy');
    if (parsed.values.note !== undefined || parsed.values.checkpoint !== undefined || parsed.values.keys !== undefined)
      return usageError('--proof goes with --policy only');
    let result: VerifyResult;
    try {
      result = verifyRecordProof(exportPath, parsed.values.proof, parsed.values.policy);
    } catch (err) {
      if (isWritError(err)) return usageError(err.message);
      throw err;
    }
    const { stdout, stderr } = verdictOutput(result);
    if (stderr !== undefined) process.stderr.write(stderr);
    await new Promise<void>((resolve) => process.stdout.write(stdout, () => resolve()));
    return result.ok ? 0 : 1;
  }

  let opts: VerifyOptions;
  let workers: number;
  let workersGiven: boolean;
  let noted: NotedTree | undefined;
  try {
    // Validate the options before touching the export.
    opts = readVerifyAnchors(parsed.values.keys, parsed.values.checkpoint);
    ({ workers, given: workersGiven } = workerCount(parsed.values.workers, process.env.WRIT_VERIFY_WORKERS));
    noted = readNoteAndPolicy(parsed.values.note, parsed.values.policy, parsed.values.checkpoint);
  } catch (err) {
    if (isWritError(err)) return usageError(err.message);
    throw err;
  }
  if (noted && !noted.ok) {
    const { stdout, stderr } = verdictOutput(noted.failure);
    process.stderr.write(stderr!);
    await new Promise<void>((resolve) => process.stdout.write(stdout, () => resolve()));
    return 1;
  }
  if (noted) opts.tree = noted.tree;

  let result: VerifyResult;
  try {
    result = await verifyInput(exportPath, opts, workers, workersGiven);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e && typeof e.code === 'string' && e.syscall) return usageError(`cannot read ${exportPath}: ${e.message}`);
    throw err;
  }
  const { stdout, stderr } = verdictOutput(result);
  if (stderr !== undefined) process.stderr.write(stderr);
  if (result.ok && noted?.ok) process.stderr.write(`writ verify: ${noted.said}\n`);
  await new Promise<void>((resolve) => process.stdout.write(stdout, () => resolve()));
  return result.ok ? 0 : 1;
}

/**
 * What `writ verify` prints for a verdict: on stdout exactly the contract's object (docs/protocol.md
 * §6), `{"ok":true,"records":N,"head":H}` or `{"ok":false,"seq":S,"code":C}`, members in that
 * order; on a failure, the reason as one line on stderr.
 */
export function verdictOutput(result: VerifyResult): { stdout: string; stderr?: string } {
  if (result.ok) {
    const stdout = `${JSON.stringify({ ok: true, records: result.records, head: result.head })}\n`;
    // Consistent, as the empty tree is, but every writ ledger starts with its key record: an empty file is
    // more likely a failed download than a ledger. Said, not failed (`--keys` makes it a failure).
    if (result.records === 0)
      return { stdout, stderr: 'writ verify: the export is empty: nothing was verified (a writ ledger starts with its key record; --keys requires it)\n' };
    return { stdout };
  }
  const reason = result.message.replace(/[\r\n]+/g, ' ');
  return {
    stdout: `${JSON.stringify({ ok: false, seq: result.seq, code: result.code })}\n`,
    stderr: `writ verify: seq ${result.seq}: ${result.code}: ${reason}\n`,
  };
}
