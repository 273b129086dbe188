/**
 * Just enough of a JSON scanner to cut raw member texts out of a JSON-RPC message without parsing
 * them: the proxy hands the PDP the exact bytes of `params.arguments` (so lossless admission, §3, sees
 * what the client sent) and hands the client the exact bytes of the server's `result`.
 * Input must already be known-valid JSON (the caller ran JSON.parse on it first).
 */

/** A member's raw value text, and where it stands in the text it was found in ([start, end)). */
export type RawMember = { found: true; raw: string; span: [number, number] } | { found: false; duplicate: boolean };

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);

class Scanner {
  i = 0;
  constructor(readonly s: string) {}
  ws(): void {
    while (this.i < this.s.length && WS.has(this.s.charCodeAt(this.i))) this.i++;
  }
  /** Skips one value and returns its [start, end) span. */
  value(): [number, number] {
    this.ws();
    const start = this.i;
    const c = this.s[this.i];
    if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']';
      this.i++;
      this.ws();
      if (this.s[this.i] === close) {
        this.i++;
        return [start, this.i];
      }
      for (;;) {
        if (c === '{') {
          this.string();
          this.ws();
          this.i++; // ':'
        }
        this.value();
        this.ws();
        const sep = this.s[this.i++];
        if (sep === close) return [start, this.i];
        if (sep !== ',') throw new SyntaxError('bad JSON');
        this.ws();
      }
    }
    if (c === '"') {
      this.string();
      return [start, this.i];
    }
    while (this.i < this.s.length && /[-+0-9.eEtruefalsn]/.test(this.s[this.i]!)) this.i++;
    if (this.i === start) throw new SyntaxError('bad JSON');
    return [start, this.i];
  }
  /** Skips a string token and returns its decoded value. */
  string(): string {
    this.ws();
    const start = this.i;
    if (this.s[this.i] !== '"') throw new SyntaxError('bad JSON');
    this.i++;
    while (this.i < this.s.length) {
      const ch = this.s[this.i];
      if (ch === '\\') this.i += 2;
      else if (ch === '"') {
        this.i++;
        return JSON.parse(this.s.slice(start, this.i)) as string;
      } else this.i++;
    }
    throw new SyntaxError('bad JSON');
  }
  /** Members of the object at the cursor: key and value span. */
  members(): Array<[string, [number, number]]> {
    this.ws();
    if (this.s[this.i] !== '{') return [];
    this.i++;
    const out: Array<[string, [number, number]]> = [];
    this.ws();
    if (this.s[this.i] === '}') return out;
    for (;;) {
      const k = this.string();
      this.ws();
      this.i++;
      out.push([k, this.value()]);
      this.ws();
      const sep = this.s[this.i++];
      if (sep === '}') return out;
      if (sep !== ',') throw new SyntaxError('bad JSON');
    }
  }
}

/**
 * The raw text of the member at `path` (object keys only). `duplicate` when a key on the path occurs
 * twice in one object — a reader taking the last and another the first would disagree, so callers
 * refuse such messages.
 */
export function rawMember(text: string, path: string[]): RawMember {
  let span: [number, number] = [0, text.length];
  for (const key of path) {
    const sc = new Scanner(text.slice(0, span[1]));
    sc.i = span[0];
    const hits = sc.members().filter(([k]) => k === key);
    if (hits.length > 1) return { found: false, duplicate: true };
    if (hits.length === 0) return { found: false, duplicate: false };
    span = hits[0]![1];
  }
  return { found: true, raw: text.slice(span[0], span[1]), span };
}

/** The raw text of each element of the top-level array `text` (a JSON-RPC batch), in order. */
export function rawElements(text: string): string[] {
  const sc = new Scanner(text);
  sc.ws();
  if (text[sc.i] !== '[') throw new SyntaxError('not an array');
  sc.i++;
  const out: string[] = [];
  sc.ws();
  if (text[sc.i] === ']') return out;
  for (;;) {
    const [start, end] = sc.value();
    out.push(text.slice(start, end));
    sc.ws();
    const sep = text[sc.i++];
    if (sep === ']') return out;
    if (sep !== ',') throw new SyntaxError('bad JSON');
  }
}
