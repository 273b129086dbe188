/** A test log: leaves, its key, and signed checkpoints with consistency proofs (the RFC 9162 code of src/ledger). */
import { createHash, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { consistencyProof } from '../../src/ledger/merkle/consistency.js';
import { memoryReader, rootAt } from '../../src/ledger/merkle/tree.js';
import { rawPublicKey } from '../../src/ledger/signing.js';
import { formatCheckpoint } from '../../src/transparency/checkpoint.js';
import { SIG_ED25519, encodeVkey, formatNote, signNoteText } from '../../src/transparency/note.js';

export class TestLog {
  readonly key: KeyObject = generateKeyPairSync('ed25519').privateKey;
  readonly vkey: string;
  readonly leaves: Buffer[];
  readonly reader;

  constructor(
    readonly origin: string,
    size = 600,
    salt = '',
  ) {
    this.vkey = encodeVkey(origin, SIG_ED25519, rawPublicKey(this.key));
    this.leaves = Array.from({ length: size }, (_, i) => createHash('sha256').update(`${salt}${origin}/${i}`).digest());
    this.reader = memoryReader(this.leaves);
  }

  text(size: number): string {
    return formatCheckpoint({ origin: this.origin, size, root: rootAt(size, this.reader) });
  }

  note(size: number, key: KeyObject = this.key): string {
    return formatNote(this.text(size), [signNoteText(this.text(size), this.origin, key)]);
  }

  /** An add-checkpoint body from `old` to `size`. */
  body(old: number, size: number, o: { note?: string; proof?: Buffer[] } = {}): string {
    const proof = o.proof ?? (old > 0 && old < size ? consistencyProof(old, size, this.reader) : []);
    return `old ${old}\n${proof.map((p) => `${p.toString('base64')}\n`).join('')}\n${o.note ?? this.note(size)}`;
  }
}
