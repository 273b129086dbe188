/**
 * `writ bind --server S --tool T [FILE|-]` (docs/protocol.md §3): reads raw argument JSON (a file, or stdin
 * when no file or `-`) and prints one JSON line: `{"binding","canonical","cedar"}` (exit 0) or
 * `{"error":{"code","message","path"}}` (exit 2). Bad flags print usage on stderr (exit 2). Bad input
 * never produces a stack trace: every refusal is a WritError turned into the error line.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { admitArgumentsText } from '../binding/index.js';
import { isWritError } from '../errors.js';

export const BIND_USAGE = `usage: writ bind --server S --tool T [FILE|-]

Reads raw argument JSON (a JSON object) from FILE, or from stdin when FILE is absent or '-', and
prints its writ-bind/1 binding as one JSON line:
  {"binding": "writ-bind/1:sha256:…", "canonical": "<JCS text>", "cedar": <Cedar context value>}
exit 0; or, when the arguments are refused,
  {"error": {"code": "BINDING_…", "message": "…", "path": "<JSON pointer>"}}
exit 2.

options:
  --server S   the MCP server name bound with the arguments (required)
  --tool T     the tool name bound with the arguments (required)
  -h, --help   show this help
`;

export interface BindOutput {
  exitCode: 0 | 2;
  /** Exactly one JSON line, newline-terminated. */
  stdout: string;
}

// Invalid UTF-8 is decoded with U+FFFD replacement (then judged as text); a leading BOM is dropped.
const utf8 = new TextDecoder('utf-8', { fatal: false });

/** The whole command minus IO: raw bytes (or text) in, the line to print and the exit code out.
 *  Only errors that are not refusals (bugs) propagate. */
export function bindOutput(input: Uint8Array | string, server: string, tool: string): BindOutput {
  const text = typeof input === 'string' ? input : utf8.decode(input);
  try {
    const bound = admitArgumentsText(text, server, tool);
    const line = JSON.stringify({ binding: bound.binding, canonical: bound.canonical, cedar: bound.cedar });
    return { exitCode: 0, stdout: line + '\n' };
  } catch (err) {
    if (!isWritError(err)) throw err;
    const line = JSON.stringify({ error: { code: err.code, message: err.message, path: err.path ?? '' } });
    return { exitCode: 2, stdout: line + '\n' };
  }
}

function usageError(message: string): number {
  process.stderr.write(`writ bind: ${message}\n\n${BIND_USAGE}`);
  return 2;
}

export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        server: { type: 'string' },
        tool: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    return usageError(err instanceof Error ? err.message : String(err));
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(BIND_USAGE);
    return 0;
  }
  if (values.server === undefined) return usageError('--server is required');
  if (values.tool === undefined) return usageError('--tool is required');
  if (positionals.length > 1) return usageError('at most one input file');
  const source = positionals[0] ?? '-';

  let input: Uint8Array;
  try {
    input = source === '-' ? await readStdin() : readFileSync(source);
  } catch (err) {
    const reason = err && typeof err === 'object' && 'code' in err ? String((err as { code: unknown }).code) : String(err);
    process.stderr.write(`writ bind: cannot read ${source === '-' ? 'stdin' : source}: ${reason}\n`);
    return 2;
  }

  let out: BindOutput;
  try {
    out = bindOutput(input, values.server, values.tool);
  } catch (err) {
    // Not a refusal: a defect. Still one line, no stack trace.
    process.stderr.write(`writ bind: internal error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 2;
  }
  await new Promise<void>((resolve) => process.stdout.write(out.stdout, () => resolve()));
  return out.exitCode;
}

async function readStdin(): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
