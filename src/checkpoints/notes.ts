/**
 * Checkpoints as C2SP signed notes (docs/protocol.md §16). The note text is the tlog-checkpoint body of
 * the latest §6 checkpoint record — origin, size, base64 of the same root — signed (signature type
 * 0x01, key name = origin) by the key in force; witness cosignatures gathered for that text are appended.
 * Ed25519 is deterministic, so the same checkpoint always gives the same log signature line.
 */
import { WritError } from '../errors.js';
import { hashToBytes } from '../ledger/merkle/hasher.js';
import type { LedgerRecord } from '../ledger/record.js';
import type { LedgerStore } from '../store/types.js';
import { formatCheckpoint } from '../transparency/checkpoint.js';
import { SIG_ED25519, encodeVkey, formatNote, signNoteText } from '../transparency/note.js';
import type { SigningKey } from './keys.js';

/**
 * `log_origin` when the config names none: `writ.local/` + the 16 hex of the ledger's first key id, so
 * that a key rotation does not rename the log (witnesses know a log by its origin).
 */
export async function defaultOrigin(store: LedgerStore, key: SigningKey): Promise<string> {
  const first = (await store.keys())[0]?.key_id ?? key.key_id;
  return `writ.local/${first.slice('ed25519:'.length, 'ed25519:'.length + 16)}`;
}

/** A key's vkey under the log's origin: `<origin>+<8 hex key id>+<base64(0x01 ‖ public key)>`. */
export function logVkey(origin: string, publicKeyB64: string): string {
  return encodeVkey(origin, SIG_ED25519, Buffer.from(publicKeyB64, 'base64'));
}

/**
 * The meta row holding the cosignatures of the latest cosigned checkpoint, `{text, lines: {vkey: line}}`:
 * in the store, so every replica of a shared store (and this one after a restart) serves them.
 */
const COSIGNATURES_KEY = 'note_cosignatures';

interface HeldCosignatures {
  text: string;
  size: number;
  lines: Record<string, string>;
}

export class CheckpointNotes {
  constructor(
    readonly store: LedgerStore,
    readonly key: SigningKey,
    readonly origin: string,
  ) {}

  /** The tlog-checkpoint text of a §6 checkpoint record. */
  textOf(cp: LedgerRecord): string {
    return formatCheckpoint({ origin: this.origin, size: Number(cp.size), root: hashToBytes(String(cp.root)) });
  }

  /** The log's signed note of a checkpoint text, without cosignatures. */
  signed(text: string): string {
    return formatNote(text, [signNoteText(text, this.origin, this.key.privateKey)]);
  }

  /** The note of the latest checkpoint with the cosignatures held for it, or undefined before the first. */
  async latest(): Promise<{ record: LedgerRecord; text: string; note: string; cosignatures: number } | undefined> {
    const record = await this.store.latestCheckpoint();
    if (!record) return undefined;
    await this.assertKeyInForce();
    const text = this.textOf(record);
    const held = await this.store.get<HeldCosignatures>('meta', COSIGNATURES_KEY);
    const lines = held?.text === text ? Object.values(held.lines) : [];
    return { record, text, note: formatNote(text, [signNoteText(text, this.origin, this.key.privateKey), ...lines]), cosignatures: lines.length };
  }

  /**
   * Holds a witness's cosignature line (already verified) for a checkpoint text, one per witness key,
   * durably. Only the latest cosigned checkpoint's are kept: a line for an older one than held is dropped.
   */
  async addCosignature(text: string, size: number, witnessVkey: string, line: string): Promise<void> {
    await this.store.write(
      (tx) => {
        const held = tx.get<HeldCosignatures>('meta', COSIGNATURES_KEY);
        if (held && held.size > size) return;
        const lines = held?.text === text ? { ...held.lines } : {};
        lines[witnessVkey] = line;
        tx.put('meta', COSIGNATURES_KEY, { text, size, lines });
      },
      { label: 'cosignature', reads: [['meta', COSIGNATURES_KEY]] },
    );
  }

  /** `writ keys rotate` retired this process's key: it signs no note (the next start uses the new key). */
  async assertKeyInForce(): Promise<void> {
    const keys = await this.store.keys();
    const latest = keys[keys.length - 1];
    if (latest && latest.key_id !== this.key.key_id) {
      throw new WritError(
        'STORE_UNAVAILABLE',
        `this replica's signing key ${this.key.key_id} was rotated out (the ledger's key is now ${latest.key_id}): restart it with the new key`,
      );
    }
  }
}
