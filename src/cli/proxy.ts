/**
 * `writ proxy --pdp URL --token-file F --server NAME [--defaults FILE] [--call-timeout MS] -- CMD…`
 * (every option also from a WRIT_* environment variable, see PROXY_ENV).
 * Wraps any stdio MCP server: see src/pep/proxy.ts for the behaviour, src/pep/context.ts for the
 * defaults format. Exits with the child's status (2 on bad usage, 127 when CMD cannot start).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { checkTimeoutMs, MAX_TIMEOUT_MS, PdpClient } from '../pep/client.js';
import { defaultsEnvelopeIssue, parseDefaults, type Defaults } from '../pep/context.js';
import { runProxy } from '../pep/proxy.js';
import { actionNameRefusal } from '../schemas/action-names.js';

const USAGE = `usage: writ proxy --pdp URL --token-file FILE --server NAME [--defaults FILE] [--call-timeout MS] [--pdp-timeout MS] [--] CMD [ARG…]

Runs CMD as a stdio MCP server and puts writ in front of it: every tools/call is decided by the PDP
(phase execute), run once with the PDP's admitted arguments, and its outcome reported; every other
message passes through unchanged.

  --pdp URL           PDP base URL (e.g. http://127.0.0.1:8700)
  --token-file FILE   file holding the PEP bearer token (surrounding whitespace ignored)
  --server NAME       server name the policies see (Action::"NAME/<tool>")
  --defaults FILE     envelope defaults for calls without params._meta["io.writ/envelope"]
                      (a docs/protocol.md §2 envelope, or {"envelope", "from_arguments", "tools", "execution_id_prefix"})
  --call-timeout MS   per-call limit on the server's answer; beyond it the outcome is unknown (default 60000)
  --pdp-timeout MS    per-request limit on the PDP (default 10000)
  -h, --help          this text

Every option can also come from the environment, so that an MCP client that parses its own command
line (and may swallow "--server" or "--") can start the proxy with only the command after "writ proxy":
  WRIT_PDP, WRIT_TOKEN_FILE, WRIT_SERVER, WRIT_DEFAULTS, WRIT_CALL_TIMEOUT, WRIT_PDP_TIMEOUT
A flag wins over its variable. The server command starts at "--" or at the first word that is not an
option (so "writ proxy node server.js" works too).
`;

/** Each option's environment variable (docs/protocol.md §7; docs/integrators.md "In an MCP client's configuration"). */
export const PROXY_ENV: Record<string, string> = {
  pdp: 'WRIT_PDP',
  'token-file': 'WRIT_TOKEN_FILE',
  server: 'WRIT_SERVER',
  defaults: 'WRIT_DEFAULTS',
  'call-timeout': 'WRIT_CALL_TIMEOUT',
  'pdp-timeout': 'WRIT_PDP_TIMEOUT',
};

/**
 * Splits argv into the proxy's own options and the server command: the command starts after `--`, or
 * at the first word that is neither an option nor an option's value.
 */
function splitCommand(argv: string[]): { own: string[]; cmd: string[] } {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') return { own: argv.slice(0, i), cmd: argv.slice(i + 1) };
    if (!a.startsWith('-')) return { own: argv.slice(0, i), cmd: argv.slice(i) };
    const name = a.replace(/^--?/, '');
    if (!a.includes('=') && name in PROXY_ENV) i++; // skip the option's value
  }
  return { own: argv, cmd: [] };
}

/** A usage error: the message and the usage text; exit 2. */
function fail(msg: string): number {
  process.stderr.write(`writ proxy: ${msg}\n\n${USAGE}`);
  return 2;
}

/** A bad input the options named (an unreadable token file, bad defaults): the message alone; exit 2. */
function badInput(msg: string): number {
  process.stderr.write(`writ proxy: ${msg}\n`);
  return 2;
}

function positiveInt(v: string | undefined, name: string, dflt: number): number {
  if (v === undefined) return dflt;
  // Digits only: Number() would also take "1e3", "0x10" or " 5 ".
  if (!/^[1-9][0-9]*$/.test(v)) throw new Error(`${name} must be a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}, got ${JSON.stringify(v)}`);
  return checkTimeoutMs(Number(v), name);
}

export async function main(argv: string[]): Promise<number> {
  const { own, cmd } = splitCommand(argv);
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: own,
      options: {
        pdp: { type: 'string' },
        'token-file': { type: 'string' },
        server: { type: 'string' },
        defaults: { type: 'string' },
        'call-timeout': { type: 'string' },
        'pdp-timeout': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    return fail((e as Error).message);
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  for (const [option, variable] of Object.entries(PROXY_ENV)) {
    const fromEnv = process.env[variable];
    if (values[option] === undefined && fromEnv !== undefined && fromEnv !== '') values[option] = fromEnv;
  }
  const pdpUrl = values.pdp as string | undefined;
  const tokenFile = values['token-file'] as string | undefined;
  const server = values.server as string | undefined;
  if (!pdpUrl) return fail('--pdp (or WRIT_PDP) is required');
  if (!tokenFile) return fail('--token-file (or WRIT_TOKEN_FILE) is required');
  if (!server) return fail('--server (or WRIT_SERVER) is required');
  // A name no decision request may carry would start a proxy whose every call is refused: say so now.
  const badServer = actionNameRefusal(server);
  if (badServer) return fail(`${badServer.message.replace(/^--server/, '--server (or WRIT_SERVER)')}`);
  if (cmd.length === 0) return fail('the server command goes after -- (or after the options)');
  let token: string;
  let defaults: Defaults | undefined;
  let callTimeoutMs: number;
  let pdp: PdpClient;
  try {
    try {
      token = readFileSync(tokenFile, 'utf8').trim();
    } catch (e) {
      throw new Error(`--token-file (or WRIT_TOKEN_FILE) ${tokenFile}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });
    }
    if (!token) throw new Error(`${tokenFile} holds no token`);
    if (values.defaults) {
      const file = values.defaults as string;
      try {
        defaults = parseDefaults(JSON.parse(readFileSync(file, 'utf8')));
      } catch (e) {
        throw new Error(`--defaults ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });
      }
      const issue = defaultsEnvelopeIssue(defaults);
      if (issue) throw new Error(`--defaults ${file}: ${issue}`);
    }
    callTimeoutMs = positiveInt(values['call-timeout'] as string | undefined, '--call-timeout', 60_000);
    const pdpTimeout = positiveInt(values['pdp-timeout'] as string | undefined, '--pdp-timeout', 10_000);
    if (!/^https?:\/\//.test(pdpUrl)) throw new Error(`--pdp (or WRIT_PDP) must be an http(s) URL, e.g. http://127.0.0.1:8700; got ${JSON.stringify(pdpUrl)}`);
    pdp = new PdpClient({ url: pdpUrl, token, timeoutMs: pdpTimeout });
  } catch (e) {
    return badInput((e as Error).message);
  }
  const status = await runProxy({
    pdp,
    server,
    callTimeoutMs,
    command: cmd[0]!,
    args: cmd.slice(1),
    forwardSignals: true,
    ...(defaults ? { defaults } : {}),
  });
  // stdin may still be open (the client holds it) and would keep the process alive.
  await new Promise<void>((res) => process.stdout.write('', () => res()));
  process.exit(status);
}
