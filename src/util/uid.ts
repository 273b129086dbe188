/** Cedar entity uids as writ passes them around: `{type, id}`, printed as `Type::"id"`. */
export interface Uid {
  type: string;
  id: string;
}

/**
 * A Cedar type name: `Name(::Name)*`, where no Name is one of Cedar's reserved identifiers (its grammar
 * excludes them: `true`, `false`, `if`, `then`, `else`, `in`, `is`, `like`, `has`, and the `__cedar`
 * namespace). Cedar refuses such a type at evaluation; refused here, it is a 400, never a deny.
 * schemas/defs.json `cedarTypeName` holds the same pattern.
 */
export const CEDAR_TYPE_NAME =
  /^(?!(?:true|false|if|then|else|in|is|like|has|__cedar)(?:::|$))[A-Za-z_][A-Za-z0-9_]*(?:::(?!(?:true|false|if|then|else|in|is|like|has|__cedar)(?:::|$))[A-Za-z_][A-Za-z0-9_]*)*$/;

/** `Type::"id"` — Cedar's own uid syntax; also the key of an actor or entity in the store. */
export function uidKey(uid: Uid): string {
  return `${uid.type}::${JSON.stringify(uid.id)}`;
}

/** Parses `Type::"id"` (as in `?actor=`); undefined when it is not one. */
export function parseUidKey(text: string): Uid | undefined {
  const m = /^(.+?)::("(?:[^"\\]|\\.)*")$/.exec(text);
  if (!m || !CEDAR_TYPE_NAME.test(m[1]!)) return undefined;
  try {
    const id = JSON.parse(m[2]!);
    return typeof id === 'string' ? { type: m[1]!, id } : undefined;
  } catch {
    return undefined;
  }
}

export function sameUid(a: Uid, b: Uid): boolean {
  return a.type === b.type && a.id === b.id;
}
