/**
 * C2SP tlog-policy files (c2sp.org/tlog-policy) and the quorum check. Pure.
 *
 * Lines: `log <vkey> [<url>]`, `witness <name> <vkey> [<url>]`, `group <name> all|any|<k> <member…>`,
 * `quorum <name>` (exactly one; `none` needs no cosignature). Blank lines and `#` comments are ignored; a
 * group or the quorum names only what earlier lines defined; a name is a member of one group at most
 * once; no two logs or witnesses wrap the same public key.
 */
import { parseCheckpoint, type CheckpointBody } from './checkpoint.js';
import { NoteError, SIG_COSIGNATURE_V1, SIG_ED25519, parseNote, parseVkey, verifySignature, type Note, type NoteSignature, type VerifierKey } from './note.js';

export interface TrustPolicy {
  logs: VerifierKey[];
  witnesses: Map<string, VerifierKey>;
  groups: Map<string, { k: number; members: string[] }>;
  quorum: string;
}

export function parsePolicy(text: string): TrustPolicy {
  const logs: VerifierKey[] = [];
  const witnesses = new Map<string, VerifierKey>();
  const groups = new Map<string, { k: number; members: string[] }>();
  let quorum: string | undefined;
  const seenKeys = new Set<string>();
  const lines = text.split('\n');
  const defined = (name: string) => witnesses.has(name) || groups.has(name);
  lines.forEach((raw, i) => {
    const bad = (why: string) => new NoteError('MALFORMED', `policy line ${i + 1}: ${why}`);
    if (/[\u0000-\u0008\u000b-\u001f\u007f]/.test(raw.replace(/\r$/, ''))) throw bad('control characters other than tab are not allowed');
    const line = raw.replace(/\r$/, '').trim();
    if (line === '' || line.startsWith('#')) return;
    const f = line.split(/[ \t]+/);
    const key = (vkey: string, type: number, what: string) => {
      let k: VerifierKey;
      try {
        k = parseVkey(vkey);
      } catch (e) {
        throw bad((e as Error).message);
      }
      if (k.type !== type) throw bad(`a ${what} key has signature type 0x0${type}`);
      const raw = k.publicKey.toString('hex');
      if (seenKeys.has(raw)) throw bad('the same public key is listed twice');
      seenKeys.add(raw);
      return k;
    };
    switch (f[0]) {
      case 'log':
        if (f.length < 2 || f.length > 3) throw bad('log <vkey> [<url>]');
        logs.push(key(f[1]!, SIG_ED25519, 'log'));
        return;
      case 'witness': {
        if (f.length < 3 || f.length > 4) throw bad('witness <name> <vkey> [<url>]');
        const name = f[1]!;
        if (name === 'none' || defined(name)) throw bad(`the name ${name} is already defined`);
        witnesses.set(name, key(f[2]!, SIG_COSIGNATURE_V1, 'witness'));
        return;
      }
      case 'group': {
        if (f.length < 4) throw bad('group <name> all|any|<k> <member…>');
        const name = f[1]!;
        if (name === 'none' || defined(name)) throw bad(`the name ${name} is already defined`);
        const members = f.slice(3);
        if (new Set(members).size !== members.length) throw bad('a member is listed once');
        for (const m of members) if (!defined(m)) throw bad(`${m} is not defined on an earlier line`);
        const k = f[2] === 'all' ? members.length : f[2] === 'any' ? 1 : /^[1-9][0-9]*$/.test(f[2]!) ? Number(f[2]) : NaN;
        if (!(k >= 1 && k <= members.length)) throw bad('the threshold is all, any or 1..n');
        groups.set(name, { k, members });
        return;
      }
      case 'quorum':
        if (f.length !== 2) throw bad('quorum <name>');
        if (quorum !== undefined) throw bad('a policy has one quorum line');
        if (f[1] !== 'none' && !defined(f[1]!)) throw bad(`${f[1]} is not defined on an earlier line`);
        quorum = f[1]!;
        return;
      default:
        throw bad(`unknown keyword ${JSON.stringify(f[0])}`);
    }
  });
  if (quorum === undefined) throw new NoteError('MALFORMED', 'a policy has a quorum line');
  return { logs, witnesses, groups, quorum };
}

/** Whether the witnesses named in `cosigned` (policy names) satisfy the policy's quorum. */
export function quorumMet(policy: TrustPolicy, cosigned: ReadonlySet<string>): boolean {
  const met = (name: string): boolean => {
    if (name === 'none') return true;
    if (policy.witnesses.has(name)) return cosigned.has(name);
    const g = policy.groups.get(name);
    if (!g) return false;
    return g.members.filter(met).length >= g.k;
  };
  return met(policy.quorum);
}

export type PolicyVerdict =
  | { ok: true; checkpoint: CheckpointBody; log: VerifierKey; cosigned: string[] }
  | { ok: false; code: 'MALFORMED' | 'UNKNOWN_KEY' | 'BAD_SIGNATURE' | 'QUORUM_NOT_MET'; message: string };

/**
 * Checks a checkpoint note under a policy: a log of the policy whose key name is the origin must have
 * signed it; every signature of a key the policy knows (log or witness) must verify — one that does not
 * is BAD_SIGNATURE, whatever else verifies; signatures of unknown keys are ignored; the witnesses whose
 * cosignatures verify must meet the quorum (QUORUM_NOT_MET).
 */
export function checkNoteUnderPolicy(input: string, policy: TrustPolicy): PolicyVerdict {
  let note: Note;
  let checkpoint: CheckpointBody;
  try {
    note = parseNote(input);
    checkpoint = parseCheckpoint(note.text);
  } catch (e) {
    return { ok: false, code: 'MALFORMED', message: (e as Error).message };
  }
  const known = (sig: NoteSignature) => (k: VerifierKey) => k.name === sig.name && k.keyId === sig.keyId;
  let log: VerifierKey | undefined;
  const cosigned = new Set<string>();
  for (const sig of note.signatures) {
    const logKey = policy.logs.find(known(sig));
    const witness = [...policy.witnesses].find(([, k]) => known(sig)(k));
    const key = logKey ?? witness?.[1];
    if (!key) continue;
    if (!verifySignature(note.text, sig, key).ok) return { ok: false, code: 'BAD_SIGNATURE', message: `the signature of ${key.vkey} does not verify` };
    if (logKey && logKey.name === checkpoint.origin) log = logKey;
    if (witness) cosigned.add(witness[0]);
  }
  if (!log) return { ok: false, code: 'UNKNOWN_KEY', message: `no log key of the policy for origin ${JSON.stringify(checkpoint.origin)} signed the note` };
  if (!quorumMet(policy, cosigned)) {
    return {
      ok: false,
      code: 'QUORUM_NOT_MET',
      message: `cosigned by ${cosigned.size} witness(es) of the policy (${[...cosigned].join(', ') || 'none'}): quorum ${policy.quorum} is not met`,
    };
  }
  return { ok: true, checkpoint, log, cosigned: [...cosigned] };
}
