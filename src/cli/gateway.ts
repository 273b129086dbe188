/**
 * `writ gateway --config FILE`: guards remote (Streamable HTTP) and local (stdio) MCP servers for remote
 * clients, as an OAuth 2.1 resource server (docs/protocol.md §14; src/gateway/). Exits 2 on a bad config,
 * 0 after a graceful stop (SIGTERM, SIGINT).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { checkGatewayConfig, GatewayConfigError } from '../gateway/config.js';
import { startGateway } from '../gateway/gateway.js';
import { error, info, notice, setLogFormat, warn } from '../log/log.js';

const USAGE = `usage: writ gateway --config FILE

Serves each configured MCP server at <public_url>/mcp/NAME over MCP Streamable HTTP, to clients holding
an access token for that URL (RFC 8707 audience) from one of jwt_issuers; every tools/call is decided by
the PDP as a delegated pep, on the client's verified identity (docs/protocol.md §14).
`;

export async function main(argv: string[]): Promise<number> {
  let values: { config?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { config: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    process.stderr.write(`writ gateway: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (!values.config) {
    process.stderr.write(`writ gateway: --config is required\n\n${USAGE}`);
    return 2;
  }
  let cfg;
  try {
    cfg = checkGatewayConfig(JSON.parse(readFileSync(values.config, 'utf8')));
  } catch (e) {
    if (e instanceof GatewayConfigError || e instanceof SyntaxError || (e as NodeJS.ErrnoException).code === 'ENOENT') {
      process.stderr.write(`writ gateway: ${values.config}: ${(e as Error).message}\n`);
      return 2;
    }
    throw e;
  }
  setLogFormat(cfg.logFormat);
  const gw = await startGateway(cfg, { log: (l) => warn(l) });
  info(`writ gateway: listening on ${gw.url}; servers ${[...cfg.servers.keys()].map((n) => `${cfg.publicUrl}/mcp/${n}`).join(', ')}`);
  await new Promise<void>((resolve) => {
    const stop = (sig: string): void => {
      notice(`writ gateway: ${sig}: finishing calls in flight, then stopping`);
      gw.stop().then(resolve, (e) => {
        error(`writ gateway: stop failed: ${(e as Error)?.stack ?? String(e)}`);
        resolve();
      });
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  notice('writ gateway: stopped');
  return 0;
}
