/** `writ serve [--config FILE] [--listen HOST:PORT] [--policy-dir DIR] [--data-dir DIR]` */
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/config.js';
import { isWritError } from '../errors.js';
import { startSidecar } from '../server/serve.js';
import { StartStopped } from '../server/waiting.js';
import * as log from '../log/log.js';

const HELP = `usage: writ serve [--config FILE] [--listen HOST:PORT] [--policy-dir DIR] [--data-dir DIR]
                  [--database-url URL] [--signing-key-file FILE]

Runs the sidecar. With no config (flag or WRIT_CONFIG) it serves ./policies (or, where there is
none, the example policies bundled with writ) on 127.0.0.1:8700 with data in .writ/, and writes
fresh dev tokens to .writ/tokens.json.
--database-url (or WRIT_DATABASE_URL): keep executions, approvals, entities and the ledger in that
PostgreSQL database, shared by every replica naming it. --signing-key-file: the deployment's key.
SIGTERM/SIGINT: stop accepting, finish in-flight requests, write a final checkpoint, exit 0.
Log lines are text, or JSON objects with "log_format": "json" in the config (or WRIT_LOG_FORMAT=json
where the config does not say). HTTPS: "tls_cert_file" and "tls_key_file" (PEM files) in the config.
`;

export async function main(argv: string[]): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        config: { type: 'string' },
        listen: { type: 'string' },
        'policy-dir': { type: 'string' },
        'data-dir': { type: 'string' },
        'database-url': { type: 'string' },
        'signing-key-file': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (e) {
    process.stderr.write(`writ serve: ${(e as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  // Signals are taken from the start: a SIGTERM that arrives while the sidecar starts (or just after it
  // said it listens, while it prints the rest) is kept and honoured as soon as it runs — a clean stop
  // with its final checkpoint, never the default action that kills the process.
  // A second signal while the first is being honoured is the operator insisting: the default action.
  let pendingSignal: NodeJS.Signals | undefined;
  const insist = (signal: NodeJS.Signals) => {
    process.off('SIGTERM', signalListener);
    process.off('SIGINT', signalListener);
    process.kill(process.pid, signal);
  };
  let onSignal = (signal: NodeJS.Signals) => {
    if (pendingSignal !== undefined) return insist(signal);
    pendingSignal = signal;
  };
  const signalListener = (signal: NodeJS.Signals) => onSignal(signal);
  process.on('SIGTERM', signalListener);
  process.on('SIGINT', signalListener);
  // One taken by bin/writ while writ was still loading counts as if it came now.
  const early = (process as unknown as Record<symbol, { signal?: NodeJS.Signals; listener: (s: NodeJS.Signals) => void } | undefined>)[
    Symbol.for('writ.earlySignal')
  ];
  if (early) {
    process.off('SIGTERM', early.listener);
    process.off('SIGINT', early.listener);
    if (early.signal !== undefined) onSignal(early.signal);
  }
  let running;
  try {
    const overrides: Parameters<typeof loadConfig>[0] = { forServe: true };
    if (typeof values.config === 'string') overrides.configPath = values.config;
    if (typeof values.listen === 'string') overrides.listen = values.listen;
    if (typeof values['policy-dir'] === 'string') overrides.policyDir = values['policy-dir'];
    if (typeof values['data-dir'] === 'string') overrides.dataDir = values['data-dir'];
    if (typeof values['database-url'] === 'string') overrides.databaseUrl = values['database-url'];
    if (typeof values['signing-key-file'] === 'string') overrides.signingKeyFile = values['signing-key-file'];
    const { config, devTokens } = loadConfig(overrides);
    running = await startSidecar(config, { devTokens, stopRequested: () => pendingSignal !== undefined });
  } catch (e) {
    process.off('SIGTERM', signalListener);
    process.off('SIGINT', signalListener);
    if (e instanceof StartStopped) {
      // Nothing was started, so nothing is in flight and there is no ledger to checkpoint.
      log.notice(`writ serve: ${pendingSignal}: stopped while waiting for the database`);
      return 0;
    }
    const syscall = (e as NodeJS.ErrnoException | undefined)?.syscall;
    // A host that does not resolve, a port in use or not ours to bind: say it is the listen address.
    const context = syscall === 'getaddrinfo' || syscall === 'listen' || syscall === 'bind' ? 'the listen address (config `listen` or --listen): ' : '';
    const message = isWritError(e)
      ? `${e.code}: ${e.message}${Array.isArray(e.details) ? `\n  ${e.details.join('\n  ')}` : ''}`
      : context + ((e as Error)?.message ?? String(e));
    log.error(`writ serve: cannot start: ${message}`);
    return 1;
  }
  const r = running;
  return new Promise<number>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      log.notice(`writ serve: ${signal}: finishing in-flight requests, writing a final checkpoint`);
      r.close().then(
        () => resolve(0),
        (e) => {
          log.error(`writ serve: shutdown error: ${(e as Error).message}`);
          resolve(1);
        },
      );
    };
    let stopping = false;
    onSignal = (signal) => {
      if (stopping) return insist(signal);
      stopping = true;
      stop(signal);
    };
    if (pendingSignal !== undefined) {
      stopping = true;
      stop(pendingSignal);
    }
  });
}
