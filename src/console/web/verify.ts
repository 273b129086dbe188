/**
 * Proving one record in the browser, from the recipe of docs/protocol.md §6 alone:
 *   leaf  = SHA-256(0x00 ‖ JCS(record without hash)), compared with record.hash;
 *   root  = the RFC 9162 §2.1.3.2 walk of the inclusion proof from that leaf, compared with the
 *           latest checkpoint's root;
 *   the checkpoint's Ed25519 signature over "writ-checkpoint/1\n" + JCS({key_id, root, size}),
 *   checked with WebCrypto against the key of /v1/ledger/keys whose key_id it names (and whose
 *   key_id is itself re-derived from the public key), which must be the key in force at the
 *   checkpoint's seq by the ledger's signed chain of `key` records.
 * Nothing here is shared with the sidecar's verifier: a second implementation is the point.
 */
import { canonicalize } from './jcs.js';
import type { Api, LedgerRecord } from './api.js';

export type Verdict =
  | { status: 'verified'; checkpointSize: number; keyId: string; witnesses: number | null }
  | { status: 'not-checkpointed'; checkpointSize: number | null }
  | { status: 'failed'; reason: string };

const encoder = new TextEncoder();

function bytes(n: number): Uint8Array<ArrayBuffer> {
  return new Uint8Array(new ArrayBuffer(n));
}

function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = bytes(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

async function sha256(data: Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', data));
}

export function toHex(b: Uint8Array): string {
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

/** Strict lowercase/uppercase hex of 32 bytes, else undefined. */
function hash32(hex: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) return undefined;
  const out = bytes(32);
  for (let i = 0; i < 32; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) return undefined;
  const raw = atob(text);
  const out = bytes(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}

function withoutPrefix(value: unknown, prefix: string): string | undefined {
  return typeof value === 'string' && value.startsWith(prefix) ? value.slice(prefix.length) : undefined;
}

/** The record's leaf hash, `sha256:<hex>`, recomputed from its JCS text. */
export async function leafHash(record: Record<string, unknown>): Promise<string> {
  const { hash: _dropped, ...body } = record;
  const digest = await sha256(concat(Uint8Array.of(0x00), encoder.encode(canonicalize(body))));
  return `sha256:${toHex(digest)}`;
}

/**
 * The walk RFC 9162 §2.1.3.2 and §2.1.4.2 share: `fn` and `sn` are the node indexes of the proved node
 * and of the last node, level by level; each path entry is a sibling to the left (`step(entry, true)`)
 * or to the right of the node. Whether the walk used the path exactly up to the root.
 */
async function walkProofPath(
  fn: number,
  sn: number,
  path: Uint8Array<ArrayBuffer>[],
  step: (sibling: Uint8Array<ArrayBuffer>, onLeft: boolean) => Promise<void>,
): Promise<boolean> {
  for (const p of path) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      await step(p, true);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      await step(p, false);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0;
}

const interior = (left: Uint8Array<ArrayBuffer>, right: Uint8Array<ArrayBuffer>) => sha256(concat(Uint8Array.of(0x01), left, right));

/** RFC 9162 §2.1.3.2: the root an inclusion proof leads to, or undefined when the proof cannot fit. */
export async function rootFromInclusionProof(
  index: number,
  size: number,
  leaf: Uint8Array<ArrayBuffer>,
  path: Uint8Array<ArrayBuffer>[],
): Promise<Uint8Array | undefined> {
  if (!(index >= 0 && index < size)) return undefined;
  let r = leaf;
  const fits = await walkProofPath(index, size - 1, path, async (p, onLeft) => {
    r = await (onLeft ? interior(p, r) : interior(r, p));
  });
  return fits ? r : undefined;
}

/**
 * RFC 9162 §2.1.4.2: whether `path` proves the tree of `first` leaves (root `firstRoot`) is a prefix
 * of the tree of `second` leaves (root `secondRoot`) — the sidecar did not rewrite what it had shown.
 */
export async function verifyConsistencyProof(
  first: number,
  second: number,
  firstRoot: Uint8Array,
  secondRoot: Uint8Array,
  path: Uint8Array<ArrayBuffer>[],
): Promise<boolean> {
  if (!(first >= 1 && first <= second)) return false;
  if (first === second) return path.length === 0 && sameBytes(firstRoot, secondRoot);
  if (path.length === 0) return false;
  // When `first` is a power of two its root is a node of the second tree: the proof starts from it.
  const steps = (first & (first - 1)) === 0 ? [Uint8Array.from(firstRoot), ...path] : path;
  let fn = first - 1;
  let sn = second - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  // The first tree's root grows only by siblings on its left; the second's by every sibling.
  let fr = steps[0]!;
  let sr = steps[0]!;
  const fits = await walkProofPath(fn, sn, steps.slice(1), async (c, onLeft) => {
    if (onLeft) fr = await interior(c, fr);
    sr = await (onLeft ? interior(c, sr) : interior(sr, c));
  });
  return fits && sameBytes(fr, firstRoot) && sameBytes(sr, secondRoot);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Ed25519 over `payload` with a raw 32-byte key, by WebCrypto; a string says why it could not be checked. */
async function ed25519Verify(publicKey: Uint8Array<ArrayBuffer>, signatureBase64: unknown, payload: Uint8Array<ArrayBuffer>): Promise<boolean | string> {
  const signature = typeof signatureBase64 === 'string' ? fromBase64(signatureBase64) : undefined;
  if (signature?.length !== 64) return false;
  try {
    const verifier = await crypto.subtle.importKey('raw', publicKey, { name: 'Ed25519' }, false, ['verify']);
    return await crypto.subtle.verify({ name: 'Ed25519' }, verifier, signature, payload);
  } catch (e) {
    return `this browser cannot check Ed25519 signatures (${(e as Error).message})`;
  }
}

/** A base64 raw Ed25519 key whose key_id is `ed25519:` + the first 16 hex of its SHA-256, or why not. */
async function publicKeyNamed(keyId: unknown, publicKeyBase64: unknown): Promise<Uint8Array<ArrayBuffer> | string> {
  const publicKey = typeof publicKeyBase64 === 'string' ? fromBase64(publicKeyBase64) : undefined;
  if (publicKey?.length !== 32) return `key ${String(keyId)} is not a raw 32-byte Ed25519 key`;
  const derivedId = `ed25519:${toHex(await sha256(publicKey)).slice(0, 16)}`;
  if (derivedId !== keyId) return `key ${String(keyId)} does not match its public key`;
  return publicKey;
}

/** Checks a checkpoint record's signature against the ledger's published keys. */
export async function checkCheckpointSignature(cp: LedgerRecord, keys: Array<{ key_id: string; public_key: string }>): Promise<string | undefined> {
  const key = keys.find((k) => k.key_id === cp.key_id);
  if (!key) return `the checkpoint names unknown key ${String(cp.key_id)}`;
  const publicKey = await publicKeyNamed(key.key_id, key.public_key);
  if (typeof publicKey === 'string') return publicKey;
  if (typeof cp.signature !== 'string' || fromBase64(cp.signature)?.length !== 64) return 'the checkpoint signature is not 64 bytes of base64';
  const payload = encoder.encode(`writ-checkpoint/1\n${canonicalize({ key_id: cp.key_id, root: cp.root, size: cp.size })}`);
  const ok = await ed25519Verify(publicKey, cp.signature, payload);
  if (typeof ok === 'string') return ok;
  return ok ? undefined : 'bad checkpoint signature';
}

/**
 * The key in force at ledger position `atSeq`, from the ledger's `key` records (seq order): the first
 * has signature null, each later one is signed by the key before it over
 * "writ-key/1\n" + JCS({key_id, public_key}), and the last one before `atSeq` is the key that may
 * sign there. A checkpoint signed by a key rotated out before it is refused, as `writ verify` refuses
 * it (UNKNOWN_KEY): a key is often rotated because it may be compromised. Returns why not, as a string.
 */
export async function keyInForceAt(keyRecords: LedgerRecord[], atSeq: number): Promise<{ key_id: string; public_key: string; seq: number } | string> {
  let previous: Uint8Array<ArrayBuffer> | undefined;
  let inForce: { key_id: string; public_key: string; seq: number } | undefined;
  let lastSeq = -1;
  for (const rec of keyRecords) {
    if (rec.kind !== 'key' || !Number.isSafeInteger(rec.seq) || rec.seq <= lastSeq) return 'the key records are not a list of key records in seq order';
    lastSeq = rec.seq;
    if (rec.seq >= atSeq) break;
    if ((await leafHash(rec)) !== rec.hash) return `key record ${rec.seq} hash mismatch`;
    const publicKey = await publicKeyNamed(rec.key_id, rec.public_key);
    if (typeof publicKey === 'string') return `key record ${rec.seq}: ${publicKey}`;
    if (previous === undefined) {
      if (rec.signature !== null) return `the first key record (seq ${rec.seq}) must have signature null`;
    } else {
      const payload = encoder.encode(`writ-key/1\n${canonicalize({ key_id: rec.key_id, public_key: rec.public_key })}`);
      const ok = await ed25519Verify(previous, rec.signature, payload);
      if (typeof ok === 'string') return ok;
      if (!ok) return `key record ${rec.seq} is not signed by the key before it`;
    }
    previous = publicKey;
    inForce = { key_id: rec.key_id as string, public_key: rec.public_key as string, seq: rec.seq };
  }
  return inForce ?? `no key record precedes seq ${atSeq}`;
}

/** The largest checkpoint each signed-in session has verified (in memory, like the token). */
const largestVerified = new WeakMap<Api, { size: number; root: Uint8Array }>();

/**
 * A checkpoint verified now against the largest one verified before in this session: an honest
 * sidecar never serves an older one, nor two trees that disagree. A larger one must come with an
 * RFC 9162 consistency proof from the one seen before. Returns why not, or undefined.
 */
async function checkAgainstEarlier(api: Api, size: number, root: Uint8Array): Promise<string | undefined> {
  const earlier = largestVerified.get(api);
  if (earlier !== undefined) {
    if (size < earlier.size) return `the sidecar served checkpoint size ${size}, older than size ${earlier.size} that this page verified before (a rollback)`;
    if (size === earlier.size && !sameBytes(root, earlier.root)) return `two checkpoints of size ${size} with different roots (a fork)`;
    if (size > earlier.size) {
      const proof = await api.consistencyProof(earlier.size, size);
      const path: Uint8Array<ArrayBuffer>[] = [];
      for (const step of Array.isArray(proof.path) ? proof.path : [null]) {
        const node = typeof step === 'string' ? hash32(step) : undefined;
        if (!node) return 'the consistency proof is malformed';
        path.push(node);
      }
      if (!(await verifyConsistencyProof(earlier.size, size, earlier.root, root, path))) {
        return `the checkpoint of size ${size} does not extend the one of size ${earlier.size} this page verified before`;
      }
    }
  }
  if (earlier === undefined || size > earlier.size) largestVerified.set(api, { size, root });
  return undefined;
}

/**
 * Proves a record as the page shows it — the very object drawn, never a second copy fetched for the
 * proof — against the latest checkpoint, fetching the checkpoint, the keys and the inclusion proof.
 */
export async function verifyRecord(api: Api, record: LedgerRecord): Promise<Verdict> {
  const fail = (reason: string): Verdict => ({ status: 'failed', reason });
  const seq = record.seq;
  if (!Number.isSafeInteger(seq) || seq < 0) return fail(`the record's seq ${String(seq)} is not a position in the ledger`);
  let computed: string;
  try {
    computed = await leafHash(record);
  } catch (e) {
    return fail(`the record has no canonical form (${(e as Error).message})`);
  }
  if (computed !== record.hash) return fail('record hash mismatch');
  const leaf = hash32(computed.slice('sha256:'.length))!;

  const cp = await api.checkpoint();
  if (!cp) {
    // "No checkpoint at all" after this page has verified one is the strongest rollback of all:
    // a sidecar that lost or hid its checkpoints must not turn covered records into "not yet".
    const earlier = largestVerified.get(api);
    if (earlier !== undefined) return fail(`the sidecar served no checkpoint, but this page verified one of size ${earlier.size} before (a rollback)`);
    return { status: 'not-checkpointed', checkpointSize: null };
  }
  if (cp.kind !== 'checkpoint' || !Number.isSafeInteger(cp.size) || (cp.size as number) < 1) return fail('the latest checkpoint is malformed');
  const size = cp.size as number;
  // The checkpoint is proved before its size is believed: a forged one must not turn a record it
  // covers into "not yet checkpointed".
  const cpHash = await leafHash(cp);
  if (cpHash !== cp.hash) return fail('checkpoint record hash mismatch');

  const [{ keys }, keyRecords] = await Promise.all([api.keys(), api.keyRecords()]);
  const inForce = await keyInForceAt(keyRecords, cp.seq);
  if (typeof inForce === 'string') return fail(inForce);
  if (cp.key_id !== inForce.key_id) {
    return fail(`the checkpoint is signed by key ${String(cp.key_id)}, but the key in force at seq ${cp.seq} is ${inForce.key_id} (key record ${inForce.seq})`);
  }
  const published = keys.find((k) => k.key_id === inForce.key_id);
  if (published && published.public_key !== inForce.public_key) return fail(`/v1/ledger/keys and key record ${inForce.seq} disagree on key ${inForce.key_id}`);
  const badSignature = await checkCheckpointSignature(cp, keys);
  if (badSignature) return fail(badSignature);
  const root = hash32(withoutPrefix(cp.root, 'sha256:') ?? '');
  if (!root) return fail('the checkpoint root is malformed');
  const history = await checkAgainstEarlier(api, size, root);
  if (history) return fail(history);
  if (seq >= size) return { status: 'not-checkpointed', checkpointSize: size };

  const proof = await api.inclusionProof(seq, size);
  if (proof.seq !== seq || proof.size !== size || !Array.isArray(proof.path)) return fail('the inclusion proof answers another question');
  // The answer also names its leaf and root: the walk below does not need them, but an answer that
  // disagrees with what was recomputed is itself a reason for doubt.
  if (proof.leaf !== undefined && proof.leaf !== computed) return fail('the inclusion proof names another leaf');
  if (proof.root !== undefined && proof.root !== cp.root) return fail('the inclusion proof names another root');
  const path: Uint8Array<ArrayBuffer>[] = [];
  for (const step of proof.path) {
    const node = typeof step === 'string' ? hash32(step) : undefined;
    if (!node) return fail('the inclusion proof is malformed');
    path.push(node);
  }
  const reached = await rootFromInclusionProof(seq, size, leaf, path);
  if (!reached) return fail('the inclusion proof has the wrong length');
  if (!sameBytes(reached, root)) return fail('the inclusion proof does not lead to the checkpoint root');
  return { status: 'verified', checkpointSize: size, keyId: String(cp.key_id), witnesses: await cosigners(api, size, root) };
}

/**
 * How many witnesses cosigned the checkpoint used (docs/protocol.md §16): the signature lines of the
 * served signed note other than the log's own, when that note is of the same tree; null when it is not
 * (a newer checkpoint was written meanwhile) or cannot be read. The console holds no witness keys: the
 * cosignatures themselves are checked by `writ verify --note --policy`.
 */
export async function cosigners(api: Api, size: number, root: Uint8Array): Promise<number | null> {
  let note: string | null;
  try {
    note = await api.note();
  } catch {
    return null;
  }
  if (note === null) return null;
  const split = note.lastIndexOf('\n\n');
  if (split < 0) return null;
  const [origin, noteSize, noteRoot] = note.slice(0, split).split('\n');
  if (noteSize !== String(size) || noteRoot !== btoa(String.fromCharCode(...root))) return null;
  return note
    .slice(split + 2)
    .split('\n')
    .filter((line) => line.startsWith('\u2014 ') && line.split(' ')[1] !== origin).length;
}

/** The words the page shows beside a verdict about the checkpoint's witnesses, or '' when unknown. */
export function cosignedText(v: Verdict): string {
  if (v.status !== 'verified' || v.witnesses === null) return '';
  return v.witnesses === 0 ? 'checkpoint not cosigned by any witness' : `checkpoint cosigned by ${v.witnesses} witness${v.witnesses === 1 ? '' : 'es'}`;
}

/** The words the page shows for a verdict. */
export function verdictText(v: Verdict): string {
  switch (v.status) {
    case 'verified':
      return 'verified';
    case 'not-checkpointed':
      return 'not yet checkpointed';
    case 'failed':
      return `NOT verified: ${v.reason}`;
  }
}
