/**
 * Text the console shows from the ledger (ids, reasons, arguments, messages) is data an agent or a
 * caller may have written. Unicode formatting characters would otherwise act on the page rather than
 * be seen: U+202E (RIGHT-TO-LEFT OVERRIDE) makes `Doc::"‮gnp.exe‬"` read "exe.png", a zero-width space
 * makes two different ids look equal. So every such character is shown as its escape (`\u202E`), the
 * way JSON would write it, and never as formatting. Newline and tab stay: the record views are
 * preformatted JSON text.
 */
const INVISIBLE =
  // C0 controls but tab and newline, DEL and C1 controls; soft hyphen; Arabic letter mark; Mongolian
  // vowel separator; zero-width and directional marks; line/paragraph separators; bidi embeddings,
  // overrides and isolates; word joiner and invisible operators; BOM; interlinear annotation; tag characters.
  /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u00AD\u061C\u180E\u200B-\u200F\u2028-\u202E\u2060-\u206F\uFEFF\uFFF9-\uFFFB]|\uDB40[\uDC00-\uDC7F]/g;

function escapeOf(ch: string): string {
  return Array.from({ length: ch.length }, (_, i) => `\\u${ch.charCodeAt(i).toString(16).toUpperCase().padStart(4, '0')}`).join('');
}

/** `text` with every invisible or formatting character replaced by its visible `\uXXXX` escape. */
export function visibleText(text: string): string {
  return text.replace(INVISIBLE, escapeOf);
}
