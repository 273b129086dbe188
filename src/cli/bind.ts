/**
 * `writ bind --server S --tool T [FILE|-]` (docs/protocol.md §3): reads raw argument JSON (a file, or stdin
 * when no file or `-`) and prints one JSON line: `{"binding","canonical","cedar"}` (exit 0) or
 * `{"error":{"code","message","path"}}` (exit 2). Bad flags print usage on stderr (exit 2). Bad input
 * never produces a stack trace: every refusal is a WritError turned into the error line.
 *
 * It binds exactly what POST /v1/decisions admits, and refuses what that refuses, with the same code:
 * the input is decoded as the HTTP API decodes a body (strict UTF-8, one leading BOM dropped), and
 * --server and --tool must be names that `action.server` and `action.tool` of a decision request may
 * hold (schemas/decision-request.json), else INVALID_REQUEST.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { admitArgumentsText } from '../binding/index.js';
import { isWritError, WritError } from '../errors.js';
import { actionNameRefusal } from '../schemas/action-names.js';

export const BIND_USAGE = `usage: writ bind --server S --tool T [FILE|-]

Reads raw argument JSON (a JSON object) from FILE, or from stdin when FILE is absent or '-', and
prints its writ-bind/1 binding as one JSON line:
  {"binding": "writ-bind/1:sha256:…", "canonical": "<JCS text>", "cedar": <Cedar context value>}
exit 0; or, when POST /v1/decisions would refuse the call, with the code it would answer,
  {"error": {"code": "…", "message": "…", "path": "<JSON pointer into the input>"}}
exit 2: INVALID_JSON (not JSON, or not UTF-8; one leading BOM is ignored), INVALID_REQUEST (not
an object, or a --server/--tool that a decision request's action.server/action.tool may not hold:
1-128 characters, and no "/" in a server), or a BINDING_* code.

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

// The HTTP API's decoding of a request body (src/http/body.ts readJsonText, src/front/front-thread.ts):
// bytes that are not UTF-8 are refused (INVALID_JSON), never replaced by U+FFFD, which would bind
// different arguments than the ones sent; one leading UTF-8 BOM is dropped (ignoreBOM: false), and
// a second BOM, or one after whitespace, is then refused by the JSON parser (INVALID_JSON).
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
const BOM = '\ufeff';

/** The arguments text of raw input bytes, decoded as the HTTP API decodes a body. */
export function decodeInput(input: Uint8Array | string): string {
  // Text given directly (tests, callers in-process) stands for its UTF-8 bytes: the same BOM rule.
  if (typeof input === 'string') return input.startsWith(BOM) ? input.slice(1) : input;
  try {
    return utf8.decode(input);
  } catch {
    throw new WritError('INVALID_JSON', 'the input is not valid UTF-8', { path: '' });
  }
}

/** The whole command minus IO: raw bytes (or text) in, the line to print and the exit code out.
 *  Only errors that are not refusals (bugs) propagate. */
export function bindOutput(input: Uint8Array | string, server: string, tool: string): BindOutput {
  try {
    const refused = actionNameRefusal(server, tool);
    if (refused) throw refused;
    const bound = admitArgumentsText(decodeInput(input), server, tool);
    const line = JSON.stringify({ binding: bound.binding, canonical: bound.canonical, cedar: bound.cedar });
    return { exitCode: 0, stdout: `${line}\n` };
  } catch (err) {
    if (!isWritError(err)) throw err;
    return { exitCode: 2, stdout: errorLine(err) };
  }
}

/** The refusal line: `{"error":{"code","message","path"}}` (path "" when not about one member of the input). */
function errorLine(err: WritError): string {
  return `${JSON.stringify({ error: { code: err.code, message: err.message, path: err.path ?? '' } })}\n`;
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

  // A name no decision request may hold is refused before any input is read (bindOutput checks it too).
  const refused = actionNameRefusal(values.server, values.tool);
  if (refused) {
    await new Promise<void>((resolve) => process.stdout.write(errorLine(refused), () => resolve()));
    return 2;
  }

  let input: Uint8Array;
  try {
    input = source === '-' ? await readStdin() : readFileSync(source);
  } catch (err) {
    const reason = err && typeof err === 'object' && 'code' in err ? String(err.code) : String(err);
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
