/**
 * `writ witness keygen --name NAME --out FILE` and `writ witness serve --key FILE --log VKEY [--log VKEY…]
 * --state DIR [--listen HOST:PORT]` (docs/protocol.md §16): a C2SP tlog-witness v1.0.0. Exit 0 done (serve:
 * stopped by SIGTERM/SIGINT), 1 refused, 2 usage.
 */
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { isWritError, WritError } from '../errors.js';
import { parseListen } from '../config/config.js';
import { SIG_ED25519, parseVkey, type VerifierKey } from '../transparency/note.js';
import { generateWitnessKey, readWitnessKey } from '../witness/key.js';
import { createWitnessServer } from '../witness/server.js';
import { WitnessState } from '../witness/state.js';

const USAGE = `usage: writ witness keygen --name NAME --out FILE
       writ witness serve --key FILE --log VKEY [--log VKEY…] --state DIR [--listen HOST:PORT]

keygen  makes a witness key (mode 0600, never overwritten) and prints its cosignature vkey (type 0x04).
serve   answers POST /add-checkpoint (C2SP tlog-witness v1.0.0) for the logs named by their vkeys
        (GET /v1/ledger/keys lists a writ ledger's); the latest checkpoint cosigned per log is kept
        in the state dir, fsync'd before each answer. --listen defaults to 127.0.0.1:8710.
`;

export async function main(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === '--help' || sub === '-h' || sub === undefined) {
    (sub === undefined ? process.stderr : process.stdout).write(USAGE);
    return sub === undefined ? 2 : 0;
  }
  let values: { name?: string; out?: string; key?: string; log?: string[]; state?: string; listen?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: rest,
      options: {
        name: { type: 'string' },
        out: { type: 'string' },
        key: { type: 'string' },
        log: { type: 'string', multiple: true },
        state: { type: 'string' },
        listen: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (e) {
    process.stderr.write(`writ witness: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  try {
    if (sub === 'keygen') {
      if (!values.name || !values.out) return usage('keygen needs --name NAME and --out FILE');
      process.stdout.write(`${generateWitnessKey(values.name, resolve(values.out)).vkey}\n`);
      return 0;
    }
    if (sub !== 'serve') return usage(`unknown command '${sub}' (keygen or serve)`);
    if (!values.key || !values.state || !values.log?.length) return usage('serve needs --key FILE, --state DIR and at least one --log VKEY');
    const logs = new Map<string, VerifierKey[]>();
    for (const v of values.log) {
      let key: VerifierKey;
      try {
        key = parseVkey(v);
      } catch (e) {
        return usage(`--log ${(e as Error).message}`);
      }
      if (key.type !== SIG_ED25519) return usage(`--log ${v}: a log key is an Ed25519 vkey (type 0x01)`);
      // Several keys for one origin: a log's keys before and after a rotation.
      logs.set(key.name, [...(logs.get(key.name) ?? []), key]);
    }
    const { host, port } = parseListen(values.listen ?? '127.0.0.1:8710');
    const key = readWitnessKey(resolve(values.key));
    const state = await WitnessState.open(resolve(values.state));
    const server = createWitnessServer({ name: key.name, privateKey: key.privateKey, logs, state });
    await new Promise<void>((ok, fail) => {
      server.once('error', fail);
      server.listen(port, host, () => ok());
    });
    const addr = server.address() as { address: string; port: number };
    const shown = addr.address.includes(':') ? `[${addr.address}]` : addr.address;
    process.stdout.write(`writ witness ${key.name} (${key.vkey}) listening on http://${shown}:${addr.port} for ${[...logs.keys()].join(', ')}\n`);
    await new Promise<void>((done) => {
      const stop = () => {
        server.close(() => done());
        server.closeAllConnections();
      };
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
    });
    state.close();
    return 0;
  } catch (e) {
    if (!isWritError(e) && !(e instanceof WritError)) {
      const err = e as NodeJS.ErrnoException;
      if (err?.code === 'EADDRINUSE' || err?.code === 'EACCES') {
        process.stderr.write(`writ witness: cannot listen: ${err.message}\n`);
        return 1;
      }
      throw e;
    }
    process.stderr.write(`writ witness ${sub}: ${e.message}\n`);
    return 1;
  }
}

function usage(message: string): number {
  process.stderr.write(`writ witness: ${message}\n\n${USAGE}`);
  return 2;
}
