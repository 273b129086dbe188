/**
 * `writ` subcommand dispatch. Each subcommand lives in its own module exporting
 * `main(argv): Promise<number>` (the exit code), loaded only when called so `writ bind` does not pay
 * for Cedar or LMDB.
 */
const COMMANDS: Record<string, { summary: string; load: () => Promise<{ main(argv: string[]): Promise<number> }> }> = {
  serve: { summary: 'run the sidecar (HTTP PDP + ledger)', load: () => import('./serve.js') },
  policy: { summary: 'validate | test | fmt | replay the policies of a directory', load: () => import('./policy.js') },
  bind: { summary: 'print the writ-bind/1 binding of raw argument JSON', load: () => import('./bind.js') },
  verify: { summary: 'verify a ledger export offline', load: () => import('./verify.js') },
  proxy: { summary: 'guard any stdio MCP server', load: () => import('./proxy.js') },
  gateway: { summary: 'guard remote MCP servers over Streamable HTTP (OAuth 2.1 resource server)', load: () => import('./gateway.js') },
  keygen: { summary: 'generate an Ed25519 ledger signing key', load: () => import('./keys.js').then((m) => ({ main: m.keygenMain })) },
  keys: { summary: 'keys rotate: rotate the ledger signing key', load: () => import('./keys.js').then((m) => ({ main: m.keysMain })) },
  repair: { summary: 'repair a corrupted store with a signed chain_break record', load: () => import('./repair.js') },
  store: { summary: 'store migrate | copy: the PostgreSQL store of replicas', load: () => import('./store.js') },
  ledger: { summary: 'ledger tiles: write the ledger as C2SP tiles and a signed checkpoint', load: () => import('./ledger.js') },
  witness: { summary: 'witness keygen | serve: a C2SP tlog-witness', load: () => import('./witness.js') },
};

export const USAGE = `usage: writ <command> [options]

commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(8)} ${c.summary}`)
  .join('\n')}

Run 'writ <command> --help' for the options of one command.
Every route, code and format ("§N" in the help texts) is in docs/protocol.md (also in the package).
`;

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name) {
    // No command is a usage error: like every other, on stderr with 2.
    process.stderr.write(USAGE);
    return 2;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (name === '--version') {
    process.stdout.write('writ 0.1.0\n');
    return 0;
  }
  const cmd = COMMANDS[name];
  if (!cmd) {
    process.stderr.write(`writ: unknown command '${name}'\n\n${USAGE}`);
    return 2;
  }
  const mod = await cmd.load();
  return mod.main(rest);
}
