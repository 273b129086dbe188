/**
 * Offline verification of a ledger export (docs/protocol.md §6), one line at a time in constant memory.
 *
 * Per line, in this order (the first failing check names the failure, at that line's position):
 *   1. MALFORMED      — empty, not JSON, not an object, not byte-for-byte its own JCS text (this
 *                       also catches duplicate keys and re-spelled numbers such as `1.0`), or a field
 *                       that is not of its form: `v` not 1, `seq` not a non-negative integer, `kind`
 *                       not a non-empty string, `prev` or `hash` not a string, `ts` not an RFC 3339
 *                       UTC date-time (`…Z`), a checkpoint's `size` not a non-negative integer
 *                       (malformedField says why the cryptographic fields are not judged here);
 *   2. SEQ_GAP        — `seq` is not the line's position (deleted, duplicated or reordered lines);
 *   3. HASH_MISMATCH  — `hash` is not SHA-256(0x00 ‖ JCS(record without hash));
 *   4. PREV_MISMATCH  — `prev` is not the previous record's hash;
 *   5. kind checks    — key: key_id identifies public_key (UNKNOWN_KEY), signature (BAD_SIGNATURE:
 *                       null for the first key, else by the previous key), the first key listed in
 *                       --keys (UNKNOWN_KEY; later keys are vouched for by their signature);
 *                       checkpoint: root of the first `size` leaves (ROOT_MISMATCH),
 *                       key known and not rotated out by a later key record (UNKNOWN_KEY),
 *                       signature (BAD_SIGNATURE); decision with a binding:
 *                       recomputed from server, tool, arguments, which must be the canonical text
 *                       of an admitted value (BINDING_MISMATCH; docs/protocol.md §3). AuthZEN
 *                       decisions (`api: "authzen"`, docs/protocol.md §10) bind no tool call and carry
 *                       no binding: they get every other check, and MCP decisions lose none.
 * So an edited field is HASH_MISMATCH at its seq (MALFORMED if the new value is not of its form); an edit whose hash was recomputed is PREV_MISMATCH
 * at the next seq; a recomputed chain is ROOT_MISMATCH at the next checkpoint, or against the held
 * checkpoint (reported at the held checkpoint's seq), and an export shorter than the held checkpoint
 * is TRUNCATED at seq = number of records.
 *
 * A checkpoint's size may trail its own seq (it never covers itself); the verifier keeps the compact
 * ranges of the last CHECKPOINT_WINDOW sizes (structure-shared, so a few hundred kB) to check it.
 */
import { TransitionChecker, transitionFactsOf } from './transitions.js';
import { hash } from 'node:crypto';
import { WritError } from '../errors.js';
import { jcs } from '../util/canonical.js';
import { bindingFromCanonicalMembers, storedArgumentsProblem } from '../binding/index.js';
import { ZERO_HASH } from './record.js';
import { isRfc3339 } from '../util/rfc3339.js';
import { chainBreakPayload, checkpointPayload, keyIdOf, keyPayload, verifyPayload } from './signing.js';
import { HexMerkleAccumulator, EMPTY_ROOT_HEX, type HexAccumulatorState } from './merkle/hex-compact-range.js';
import { CanonicalLine, isCanonicalLineSlow, isNumberToken, isStringToken, scanCanonicalObject } from './canonical-scan.js';

export type VerifyCode =
  | 'HASH_MISMATCH'
  | 'PREV_MISMATCH'
  | 'SEQ_GAP'
  | 'ROOT_MISMATCH'
  | 'BAD_SIGNATURE'
  | 'UNKNOWN_KEY'
  | 'BINDING_MISMATCH'
  | 'TRUNCATED'
  | 'MALFORMED'
  | 'ILLEGAL_TRANSITION'
  /** `--note` under `--policy` (docs/protocol.md §16): too few witness cosignatures verify. */
  | 'QUORUM_NOT_MET';

export type VerifyResult = { ok: true; records: number; head: string } | { ok: false; seq: number; code: VerifyCode; message: string };

/** A public key as served by `GET /v1/ledger/keys`. */
export interface PublicKeyEntry {
  key_id: string;
  public_key: string;
}

export interface VerifyOptions {
  /** Trusted public keys (`{"keys":[…]}` of GET /v1/ledger/keys): the ledger's first key record must be
   *  one of them; each later key record is trusted through its signature by the key before it. */
  keys?: PublicKeyEntry[];
  /** A checkpoint record held from earlier (GET /v1/ledger/checkpoint): the export must extend it. */
  checkpoint?: Record<string, unknown>;
  /** A tree whose signatures were checked elsewhere (a C2SP note under a policy, docs/protocol.md §16): the
   *  export must extend it, as it extends a held checkpoint. */
  tree?: { size: number; root: string };
  /** How far (in records) a checkpoint's size may trail its own seq. */
  checkpointWindow?: number;
}

export const CHECKPOINT_WINDOW = 4096;

const HEX64 = /^[0-9a-f]{64}$/;
/** The tag of every hash and root: `sha256:` + 64 lower-case hex. */
const TAG = 'sha256:';

class Failure {
  constructor(
    readonly seq: number,
    readonly code: VerifyCode,
    readonly message: string,
  ) {}
}

/** Raw 32 bytes of a standard-base64 Ed25519 public key, or undefined when it is not one. */
function decodePublicKey(b64: unknown): Buffer | undefined {
  if (typeof b64 !== 'string') return undefined;
  const raw = Buffer.from(b64, 'base64');
  return raw.length === 32 && raw.toString('base64') === b64 ? raw : undefined;
}

function isHashString(v: unknown): v is string {
  return typeof v === 'string' && v.length === 71 && v.startsWith('sha256:') && HEX64.test(v.slice(7));
}

function leafHashOf(bodyText: string): string {
  return `sha256:${hash('sha256', `\u0000${bodyText}`, 'hex')}`;
}

/** Read access to the record of a canonical line, whichever way the line was judged canonical. */
interface RecordView {
  /** The JCS text of a top-level member's value (undefined when absent). */
  token(name: string): string | undefined;
  /** A top-level member's value when it is a string. */
  string(name: string): string | undefined;
  /** JCS text of the record without `hash`. */
  withoutHash(): string;
}

function parsedRecordView(rec: Record<string, unknown>): RecordView {
  return {
    token: (name) => (Object.hasOwn(rec, name) ? jcs(rec[name]) : undefined),
    string: (name) => (Object.hasOwn(rec, name) && typeof rec[name] === 'string' ? rec[name] : undefined),
    withoutHash: () => {
      const { hash: _omit, ...rest } = rec;
      return jcs(rest);
    },
  };
}

/**
 * What one line says about itself, judged without any other line: either why it is MALFORMED, or
 * its header fields plus the outcome of the checks that need nothing but the line (its leaf hash,
 * and for a decision its binding). The verifier reports these in its fixed order, interleaved with
 * the checks that need the lines before (seq, prev, keys, checkpoints).
 */
export type LineFacts =
  | { malformed: string }
  | {
      malformed?: undefined;
      recordSeq: number;
      hash: string;
      prev: string;
      kind: string;
      /** Set when `hash` is not the record's leaf hash. */
      hashMismatch?: string;
      /** Set when a decision's binding is not the one its stored server, tool and arguments bind to. */
      bindingMismatch?: string;
      /** What the §4 state machine reads of the record, when it names an execution (transitions.ts). */
      transition?: string;
    };

/** Kinds whose records are checked against the ledger's state (keys seen, the Merkle tree, the last hash). */
export const KINDS_CHECKED_AGAINST_STATE: ReadonlySet<string> = new Set(['key', 'checkpoint', 'chain_break']);

/** Examines one line (without its terminator) on its own; see LineFacts. Pure. */
export function examineLine(line: string): LineFacts {
  if (line.length === 0) return { malformed: 'empty line' };
  let view: RecordView | undefined = scanCanonicalObject(line);
  if (view === undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      return { malformed: 'not JSON' };
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return { malformed: 'not a JSON object' };
    if (!isCanonicalLineSlow(line)) return { malformed: 'the line is not the JCS text of its record' };
    view = parsedRecordView(parsed as Record<string, unknown>);
  }
  const seqToken = view.token('seq');
  // Only a number token: Number() would also read `[5]` or `[]` as an integer.
  const recordSeq = seqToken !== undefined && isNumberToken(seqToken) ? Number(seqToken) : Number.NaN;
  const hash = view.string('hash');
  const prev = view.string('prev');
  const kind = view.string('kind');
  if (view.token('v') !== '1' || !Number.isSafeInteger(recordSeq) || kind === undefined || prev === undefined || hash === undefined) {
    return { malformed: 'missing or mistyped header field (v, seq, ts, kind, prev, hash)' };
  }
  const fieldProblem = malformedField(view, recordSeq, kind);
  if (fieldProblem !== undefined) return { malformed: fieldProblem };
  const facts: LineFacts = { recordSeq, hash, prev, kind };
  const recomputed = leafHashOf(view.withoutHash());
  if (recomputed !== hash) facts.hashMismatch = `hash is ${hash}, the record hashes to ${recomputed}`;
  if (kind === 'decision') {
    const bindingToken = view.token('binding');
    if (bindingToken !== undefined && bindingToken !== 'null') facts.bindingMismatch = bindingMismatchOf(view);
  }
  const transition = transitionFactsOf(kind, view);
  if (transition !== undefined) facts.transition = transition;
  return facts;
}

/**
 * Why a record with well-typed v, seq, kind, prev and hash is still not a record (MALFORMED), or
 * undefined. These are the fields whose value has a syntax of its own: a value outside it cannot be
 * the result of editing a real record's value into another real value, and no later check could name
 * it (a non-numeric checkpoint size is no tree size at all). Fields that hold or name cryptographic
 * material (hash, prev, root, key_id, signature, public_key) are left to the check that uses them,
 * so any value but the right one is HASH_MISMATCH, PREV_MISMATCH, ROOT_MISMATCH, UNKNOWN_KEY or
 * BAD_SIGNATURE, exactly as an edit to them is.
 */
function malformedField(view: RecordView, recordSeq: number, kind: string): string | undefined {
  if (recordSeq < 0) return `seq ${recordSeq} is negative`;
  if (kind.length === 0) return 'kind is empty';
  const ts = view.string('ts');
  if (ts === undefined) return `ts is ${view.token('ts') === undefined ? 'missing' : 'not a string'}`;
  if (!isRfc3339Utc(ts)) return `ts ${JSON.stringify(ts)} is not an RFC 3339 UTC date-time (e.g. 2026-08-24T10:00:00.000Z)`;
  if (kind === 'checkpoint') {
    const sizeToken = view.token('size');
    if (sizeToken === undefined) return 'the checkpoint has no size';
    const size = Number(sizeToken);
    // A canonical number token is its own ECMAScript spelling, so a safe integer's token is digits.
    if (!/^(0|[1-9][0-9]*)$/.test(sizeToken) || !Number.isSafeInteger(size)) return `checkpoint size ${sizeToken} is not a non-negative integer`;
  }
  return undefined;
}

/** RFC 3339 `date-time` (src/util/rfc3339.ts: real date and time, no leap second) in UTC, written `Z`. */
export function isRfc3339Utc(ts: string): boolean {
  return ts.charCodeAt(ts.length - 1) === 0x5a /* Z */ && isRfc3339(ts);
}

/** Why a decision's binding does not match its stored call, or undefined when it does. */
function bindingMismatchOf(view: RecordView): string | undefined {
  // The line is canonical, so each member's token is already its JCS text: bind them as they stand.
  const serverToken = view.token('server');
  const toolToken = view.token('tool');
  const argsToken = view.token('arguments');
  const binding = view.string('binding') ?? view.token('binding');
  if (!isStringToken(serverToken) || !isStringToken(toolToken) || argsToken === undefined) {
    return 'the record has a binding but not the server, tool and arguments it binds';
  }
  const recomputed = bindingFromCanonicalMembers(serverToken, toolToken, argsToken);
  if (recomputed !== binding) return `binding is ${String(binding)}, the stored call binds to ${recomputed}`;
  // The binding matches its own recomputation; the arguments must also be a value admission could have
  // produced. The scan already saw every number and container of a scanned line's arguments.
  if (view instanceof CanonicalLine && !view.argumentsNeedAdmission && argsToken.startsWith('{') && !argsToken.includes('"__')) return undefined;
  return storedArgumentsProblem(argsToken);
}

interface HeldCheckpoint {
  size: number;
  root: string;
  key_id: string;
  signature: string;
  seq?: number;
  hash?: string;
  /** Where failures against it are reported: its own seq when it has one, else its size. */
  reportSeq: number;
}

function parseHeldCheckpoint(cp: Record<string, unknown>): HeldCheckpoint {
  const bad = (what: string) => new WritError('INVALID_REQUEST', `--checkpoint: ${what}`);
  if (cp === null || typeof cp !== 'object' || Array.isArray(cp)) throw bad('not a checkpoint record object');
  if (cp.kind !== undefined && cp.kind !== 'checkpoint') throw bad(`kind is ${JSON.stringify(cp.kind)}, not "checkpoint"`);
  if (!Number.isSafeInteger(cp.size) || (cp.size as number) < 0) throw bad('size must be a non-negative integer');
  if (!isHashString(cp.root)) throw bad('root must be sha256:<64 hex>');
  if (typeof cp.key_id !== 'string') throw bad('key_id missing');
  if (typeof cp.signature !== 'string') throw bad('signature missing');
  if (cp.seq !== undefined && (!Number.isSafeInteger(cp.seq) || (cp.seq as number) < (cp.size as number))) {
    throw bad('seq must be an integer not below size');
  }
  if (cp.hash !== undefined && !isHashString(cp.hash)) throw bad('hash must be sha256:<64 hex>');
  const held: HeldCheckpoint = {
    size: cp.size as number,
    root: cp.root,
    key_id: cp.key_id,
    signature: cp.signature,
    reportSeq: (cp.seq as number | undefined) ?? (cp.size as number),
  };
  if (cp.seq !== undefined) held.seq = cp.seq as number;
  if (cp.hash !== undefined) held.hash = cp.hash;
  return held;
}

/** Validates a `{"keys":[{key_id, public_key}]}` document; throws INVALID_REQUEST (a usage error). */
export function parseKeysFile(doc: unknown): PublicKeyEntry[] {
  const bad = (what: string) => new WritError('INVALID_REQUEST', `--keys: ${what}`);
  if (doc === null || typeof doc !== 'object' || !Array.isArray((doc as { keys?: unknown }).keys)) {
    throw bad('expected {"keys":[{"key_id","public_key"}]}');
  }
  return (doc as { keys: unknown[] }).keys.map((k, i) => {
    const entry = k as Partial<PublicKeyEntry> | null;
    const raw = decodePublicKey(entry?.public_key);
    if (!raw) throw bad(`keys[${i}].public_key is not a base64 32-byte Ed25519 key`);
    if (entry!.key_id !== keyIdOf(raw)) throw bad(`keys[${i}].key_id does not identify its public_key`);
    return { key_id: entry!.key_id, public_key: entry!.public_key as string };
  });
}

/**
 * The verifier's state machine: feed it lines in order with `push` (returns a failure or undefined),
 * then `finish()`. Holds O(log n + window) state whatever the export's length.
 */
export class ExportVerifier {
  #count = 0;
  #prevHash = ZERO_HASH;
  readonly #acc = new HexMerkleAccumulator();
  /** Compact-range snapshots by tree size, for checkpoints that trail their position. */
  readonly #recentStates: Array<HexAccumulatorState | undefined>;
  readonly #window: number;
  /** Keys introduced by key records so far (key_id → raw public key), plus the trusted --keys. */
  readonly #knownKeys = new Map<string, Buffer>();
  readonly #trustedKeys: Map<string, string> | undefined;
  #lastKey: Buffer | undefined;
  /** The ledger's key at this point: the last key record's key_id, and the seq of that record. */
  #lastKeyId: string | undefined;
  #lastKeySeq = -1;
  readonly #held: HeldCheckpoint | undefined;
  #heldSignatureChecked = false;
  #failure: Failure | undefined;
  /** Each execution's history through the §4 state machine (ILLEGAL_TRANSITION). */
  readonly #transitions = new TransitionChecker();

  constructor(opts: VerifyOptions = {}) {
    this.#window = opts.checkpointWindow ?? CHECKPOINT_WINDOW;
    this.#recentStates = new Array<HexAccumulatorState | undefined>(this.#window);
    if (opts.keys) {
      this.#trustedKeys = new Map();
      for (const k of opts.keys) {
        const raw = decodePublicKey(k.public_key);
        if (!raw || keyIdOf(raw) !== k.key_id) throw new WritError('INVALID_REQUEST', `trusted key ${k.key_id} does not match its public_key`);
        this.#trustedKeys.set(k.key_id, k.public_key);
        this.#knownKeys.set(k.key_id, raw);
      }
    }
    if (opts.checkpoint !== undefined && opts.tree !== undefined) throw new WritError('INVALID_REQUEST', 'a held checkpoint or a held tree, not both');
    if (opts.checkpoint !== undefined) this.#held = parseHeldCheckpoint(opts.checkpoint);
    if (opts.tree !== undefined) {
      // Its signatures are already checked: only the root and the length remain.
      this.#held = { size: opts.tree.size, root: opts.tree.root, key_id: '', signature: '', reportSeq: opts.tree.size };
      this.#heldSignatureChecked = true;
    }
    if (this.#held?.size === 0) this.#failure = this.#checkHeldRoot(TAG + EMPTY_ROOT_HEX);
  }

  /** Number of lines accepted so far. */
  get records(): number {
    return this.#count;
  }

  /** Checks the next line (without its line terminator). Returns the failure, if this line fails. */
  push(line: string): VerifyResult | undefined {
    if (this.#failure) return this.#result(this.#failure);
    const failure = this.#check(line);
    if (failure) {
      this.#failure = failure;
      return this.#result(failure);
    }
    return undefined;
  }

  /**
   * Accepts the next record from a line examined elsewhere (a worker thread) that needs nothing but
   * the lines before it: its LineFacts were all good (canonical, its own hash and, for a decision, its
   * binding), it is not a key, checkpoint or chain_break record, and it links to the line before it
   * (seq one more, prev that line's hash). With that line accepted, `push` would conclude exactly
   * this; what is left are the checks against the held checkpoint.
   */
  pushLinked(hash: string, transition?: string): VerifyResult | undefined {
    if (this.#failure) return this.#result(this.#failure);
    const seq = this.#count;
    const failure = this.#checkHeldBefore(seq) ?? this.#checkTransition(seq, transition) ?? this.#accept(seq, hash);
    if (failure) {
      this.#failure = failure;
      return this.#result(failure);
    }
    return undefined;
  }

  /** Reports the next line as MALFORMED without parsing it (e.g. its bytes are not UTF-8). */
  pushMalformed(reason: string): VerifyResult {
    this.#failure ??= new Failure(this.#count, 'MALFORMED', reason);
    return this.#result(this.#failure);
  }

  /** The verdict once every line has been pushed. */
  finish(): VerifyResult {
    if (this.#failure) return this.#result(this.#failure);
    const held = this.#held;
    if (held) {
      if (this.#count < held.size) {
        this.#failure = new Failure(this.#count, 'TRUNCATED', `the export has ${this.#count} records; the held checkpoint covers ${held.size}`);
        return this.#result(this.#failure);
      }
      if (!this.#heldSignatureChecked) {
        const failure = this.#checkHeldSignature();
        if (failure) {
          this.#failure = failure;
          return this.#result(failure);
        }
      }
    }
    if (this.#trustedKeys && this.#lastKeyId === undefined) {
      // Trusted keys were given to anchor the ledger, and no key record is there to be anchored: an
      // empty (or key-less) file proves nothing about the ledger those keys sign.
      this.#failure = new Failure(
        this.#count,
        'UNKNOWN_KEY',
        `the export has ${this.#count} records and no key record: none of the trusted keys can vouch for it`,
      );
      return this.#result(this.#failure);
    }
    return { ok: true, records: this.#count, head: this.#prevHash };
  }

  #result(f: Failure): VerifyResult {
    return { ok: false, seq: f.seq, code: f.code, message: f.message };
  }

  #check(line: string): Failure | undefined {
    const seq = this.#count;
    const heldFailure = this.#checkHeldBefore(seq);
    if (heldFailure) return heldFailure;

    const facts = examineLine(line);
    if (facts.malformed !== undefined) return new Failure(seq, 'MALFORMED', facts.malformed);
    const { recordSeq, hash, prev, kind } = facts;
    if (recordSeq !== seq) return new Failure(seq, 'SEQ_GAP', `expected seq ${seq}, found ${recordSeq}`);
    if (facts.hashMismatch !== undefined) return new Failure(seq, 'HASH_MISMATCH', facts.hashMismatch);
    if (prev !== this.#prevHash) return new Failure(seq, 'PREV_MISMATCH', `prev is ${prev}, the previous record's hash is ${this.#prevHash}`);

    // The kinds checked against ledger state here are KINDS_CHECKED_AGAINST_STATE.
    switch (kind) {
      case 'key': {
        const failure = this.#checkKeyRecord(seq, JSON.parse(line) as Record<string, unknown>);
        if (failure) return failure;
        break;
      }
      case 'checkpoint': {
        const failure = this.#checkCheckpointRecord(seq, JSON.parse(line) as Record<string, unknown>);
        if (failure) return failure;
        break;
      }
      case 'chain_break': {
        const failure = this.#checkChainBreak(seq, JSON.parse(line) as Record<string, unknown>, prev);
        if (failure) return failure;
        break;
      }
      case 'decision':
        if (facts.bindingMismatch !== undefined) return new Failure(seq, 'BINDING_MISMATCH', facts.bindingMismatch);
        break;
    }
    return this.#checkTransition(seq, facts.transition) ?? this.#accept(seq, hash);
  }

  #checkTransition(seq: number, transition: string | undefined): Failure | undefined {
    const illegal = this.#transitions.push(transition);
    return illegal === undefined ? undefined : new Failure(seq, 'ILLEGAL_TRANSITION', illegal);
  }

  /** The held checkpoint is checked once the keys that could have signed it are all known: those
   *  introduced before its own seq. */
  #checkHeldBefore(seq: number): Failure | undefined {
    const held = this.#held;
    if (held && !this.#heldSignatureChecked && held.seq === seq) return this.#checkHeldSignature();
    return undefined;
  }

  /** Accepts the record at `seq` (every check on the line itself has passed): it becomes leaf `seq`. */
  #accept(seq: number, hash: string): Failure | undefined {
    const held = this.#held;
    if (held?.hash !== undefined && held.seq === seq && hash !== held.hash) {
      return new Failure(seq, 'HASH_MISMATCH', `the record at seq ${seq} is not the held checkpoint (${held.hash})`);
    }
    this.#recentStates[seq % this.#window] = this.#acc.state;
    this.#acc.append(hash.slice(TAG.length));
    this.#prevHash = hash;
    this.#count = seq + 1;
    if (held && held.size === this.#count) {
      const failure = this.#checkHeldRoot(this.#rootAtSize(this.#count)!);
      if (failure) return failure;
    }
    return undefined;
  }

  #checkKeyRecord(seq: number, rec: Record<string, unknown>): Failure | undefined {
    const raw = decodePublicKey(rec.public_key);
    if (!raw) return new Failure(seq, 'UNKNOWN_KEY', 'public_key is not a base64 32-byte Ed25519 key');
    if (rec.key_id !== keyIdOf(raw)) return new Failure(seq, 'UNKNOWN_KEY', `key_id ${String(rec.key_id)} does not identify public_key (${keyIdOf(raw)})`);
    const keyId = rec.key_id;
    const first = this.#lastKey === undefined;
    if (first) {
      if (rec.signature !== null) return new Failure(seq, 'BAD_SIGNATURE', 'the first key record must have signature null');
    } else if (
      typeof rec.signature !== 'string' ||
      !verifyPayload(this.#lastKey!, keyPayload({ key_id: keyId, public_key: rec.public_key as string }), rec.signature)
    ) {
      return new Failure(seq, 'BAD_SIGNATURE', `key ${keyId} is not signed by the previous key`);
    }
    // The trusted keys anchor the ledger's first key. Each later key is vouched for by the key before
    // it (the signature just checked: only the holder of a trusted key can introduce the next), so keys
    // an auditor fetched before a rotation still verify the exports that follow it.
    if (first && this.#trustedKeys && this.#trustedKeys.get(keyId) !== rec.public_key) {
      return new Failure(seq, 'UNKNOWN_KEY', `the ledger's first key ${keyId} is not among the trusted keys`);
    }
    this.#knownKeys.set(keyId, raw);
    this.#lastKey = raw;
    this.#lastKeyId = keyId;
    this.#lastKeySeq = seq;
    return undefined;
  }

  /**
   * A signature by a key that a later key record rotated out. writ signs with the ledger's current key
   * only (a replica still holding a retired key stops writing checkpoints), and a key is often rotated
   * because it may be compromised: what it signs after its rotation is not vouched for.
   */
  #retired(seq: number, keyId: string, what: string): Failure | undefined {
    if (this.#lastKeyId === undefined || keyId === this.#lastKeyId) return undefined;
    return new Failure(
      seq,
      'UNKNOWN_KEY',
      `${what} key ${keyId} was rotated out by the key record at seq ${this.#lastKeySeq} (the ledger's key is then ${this.#lastKeyId})`,
    );
  }

  #checkCheckpointRecord(seq: number, rec: Record<string, unknown>): Failure | undefined {
    const { size, root, key_id, signature } = rec;
    if (!Number.isSafeInteger(size) || (size as number) < 0 || (size as number) > seq) {
      return new Failure(seq, 'ROOT_MISMATCH', `checkpoint size ${String(size)} is not between 0 and its seq ${seq}`);
    }
    const treeRoot = this.#rootAtSize(size as number);
    if (treeRoot === undefined) {
      return new Failure(
        seq,
        'ROOT_MISMATCH',
        `checkpoint size ${String(size)} trails its seq ${seq} by more than ${this.#window} records; its root cannot be checked in one pass`,
      );
    }
    if (root !== treeRoot)
      return new Failure(seq, 'ROOT_MISMATCH', `checkpoint root ${String(root)} is not the root of the first ${String(size)} records (${treeRoot})`);
    const key = typeof key_id === 'string' ? this.#knownKeys.get(key_id) : undefined;
    if (!key) return new Failure(seq, 'UNKNOWN_KEY', `checkpoint key ${String(key_id)} is not a known key`);
    if (typeof signature !== 'string' || !verifyPayload(key, checkpointPayload({ key_id: key_id as string, root: root, size: size as number }), signature)) {
      return new Failure(seq, 'BAD_SIGNATURE', `checkpoint signature does not verify under ${key_id as string}`);
    }
    return this.#retired(seq, key_id as string, 'checkpoint');
  }

  /** An operator repair: it must chain from the last good record it names and be signed by a known key. */
  #checkChainBreak(seq: number, rec: Record<string, unknown>, prev: string): Failure | undefined {
    const { last_good_hash, last_good_seq, reason, key_id, signature } = rec;
    if (last_good_hash !== prev || last_good_seq !== seq - 1 || typeof reason !== 'string') {
      return new Failure(seq, 'PREV_MISMATCH', 'the chain_break does not name the record it chains from');
    }
    const key = typeof key_id === 'string' ? this.#knownKeys.get(key_id) : undefined;
    if (!key) return new Failure(seq, 'UNKNOWN_KEY', `chain_break key ${String(key_id)} is not a known key`);
    if (typeof signature !== 'string' || !verifyPayload(key, chainBreakPayload({ last_good_hash: prev, last_good_seq: seq - 1, reason }), signature)) {
      return new Failure(seq, 'BAD_SIGNATURE', `chain_break signature does not verify under ${key_id as string}`);
    }
    return this.#retired(seq, key_id as string, 'chain_break');
  }

  /** Root of the first `size` accepted leaves, if it is still within reach. */
  #rootAtSize(size: number): string | undefined {
    if (size === this.#count) return TAG + HexMerkleAccumulator.rootOf(this.#acc.state);
    if (this.#count - size > this.#window) return undefined;
    const state = this.#recentStates[size % this.#window];
    return state !== undefined && state.size === size ? TAG + HexMerkleAccumulator.rootOf(state) : undefined;
  }

  #checkHeldRoot(root: string): Failure | undefined {
    const held = this.#held!;
    if (root !== held.root) {
      return new Failure(held.reportSeq, 'ROOT_MISMATCH', `the first ${held.size} records have root ${root}, not the held checkpoint's ${held.root}`);
    }
    return undefined;
  }

  #checkHeldSignature(): Failure | undefined {
    const held = this.#held!;
    this.#heldSignatureChecked = true;
    const key = this.#knownKeys.get(held.key_id);
    if (!key) return new Failure(held.reportSeq, 'UNKNOWN_KEY', `the held checkpoint's key ${held.key_id} is not a known key`);
    if (!verifyPayload(key, checkpointPayload(held), held.signature)) {
      return new Failure(held.reportSeq, 'BAD_SIGNATURE', `the held checkpoint's signature does not verify under ${held.key_id}`);
    }
    // Placed by its seq, it is checked where it stands in the chain (the keys then known, the key then
    // current). Without a seq (size, root, key_id, signature only) it is checked once every key is known,
    // and a key rotated out since may have signed it in its day.
    return held.seq !== undefined ? this.#retired(held.reportSeq, held.key_id, "the held checkpoint's") : undefined;
  }
}

/** Verifies an export given as its lines (without terminators), stopping at the first failure. */
export async function verifyExport(lines: AsyncIterable<string> | Iterable<string>, opts: VerifyOptions = {}): Promise<VerifyResult> {
  const verifier = new ExportVerifier(opts);
  for await (const line of lines) {
    const failure = verifier.push(line);
    if (failure) return failure;
  }
  return verifier.finish();
}

/** The synchronous form, for callers holding the lines in memory (tests, the server). */
export function verifyExportSync(lines: Iterable<string>, opts: VerifyOptions = {}): VerifyResult {
  const verifier = new ExportVerifier(opts);
  for (const line of lines) {
    const failure = verifier.push(line);
    if (failure) return failure;
  }
  return verifier.finish();
}
