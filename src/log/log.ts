/**
 * The sidecar's operational lines (started, reloaded, refused, failed), in one of two formats:
 * - `text` (the default): each line as it has always read, `writ: …` / `writ serve: …`;
 * - `json` (config `log_format`; WRIT_LOG_FORMAT=json where the config is silent and before it is read): one JSON
 *   object per line, `{"ts","level","msg"}`, so a log pipeline (Loki, Elastic, CloudWatch) can parse
 *   it without a pattern — as OPA and Cerbos log.
 * Each line goes to the stream it goes to in both formats — `info` to stdout, `notice` (level info),
 * `warn` and `error` to stderr — so a script that waits for `listening on` on stdout, or reads refusals
 * on stderr, reads the same stream either way. Per thread: only the
 * main thread logs (fronts and evaluators post what they have to say to it).
 */
export type LogFormat = 'text' | 'json';
export const LOG_FORMATS: readonly LogFormat[] = ['text', 'json'];

type Level = 'info' | 'warn' | 'error';

let format: LogFormat = process.env.WRIT_LOG_FORMAT === 'json' ? 'json' : 'text';

export function setLogFormat(f: LogFormat): void {
  format = f;
}

/** The text's own `writ: ` / `writ serve: ` prefix says what a JSON line's fields already say. */
const PREFIX = /^writ(?: [a-z]+)?: /;

function write(stream: NodeJS.WriteStream, level: Level, text: string): void {
  const line = text.endsWith('\n') ? text.slice(0, -1) : text;
  if (format === 'text') {
    stream.write(`${line}\n`);
    return;
  }
  stream.write(`${JSON.stringify({ ts: new Date().toISOString(), level, msg: line.replace(PREFIX, '') })}\n`);
}

/** Progress an operator expects to see (listening, policies loaded): stdout. */
export function info(text: string): void {
  write(process.stdout, 'info', text);
}

/** A routine event said on stderr, beside the warnings (a policy reload applied). */
export function notice(text: string): void {
  write(process.stderr, 'info', text);
}

/** Something refused or degraded that writ works around (a reload rejected, a request refused). */
export function warn(text: string): void {
  write(process.stderr, 'warn', text);
}

/** Something that failed (a checkpoint, a thread, an unexpected error). */
export function error(text: string): void {
  write(process.stderr, 'error', text);
}
