/**
 * `writ repair [--data-dir DIR] [--reason TEXT]`: explicit operator repair of a store that
 * refuses to open as corrupt. The server must be stopped (the data dir lock tells). Finds the last
 * good record, moves the bad tail out of the live store (saved as DIR/repair-<time>-dropped.jsonl),
 * rebuilds derived data and appends a signed `chain_break` record chaining from the last good hash.
 * Says what it did on stderr and prints the report as one JSON line on stdout.
 * Exit 0 when the store is (now) sound, 1 when the repair is refused or fails, 2 on usage errors.
 */
import { parseArgs } from 'node:util';
import { isWritError } from '../errors.js';
import { repairStore } from '../store/lmdb/repair.js';

export const REPAIR_USAGE = `usage: writ repair [--data-dir DIR] [--reason TEXT]

Repairs a corrupt ledger store (the server must be stopped). Keeps the good prefix of the chain,
moves the bad tail out of the live store into DIR/repair-<time>-dropped.jsonl, and appends a
chain_break record {last_good_seq, last_good_hash, dropped_from_seq, reason, key_id, signature}
signed with the data dir key. The execution, approval and entity tables are left as they are.

options:
  --data-dir DIR    the data dir (default .writ)
  --reason TEXT     the reason recorded in the chain_break record
  -h, --help        show this help
`;

export async function main(argv: string[]): Promise<number> {
  let values: { 'data-dir'?: string; reason?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { 'data-dir': { type: 'string' }, reason: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    process.stderr.write(`writ repair: ${(e as Error).message}\n\n${REPAIR_USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(REPAIR_USAGE);
    return 0;
  }
  const dataDir = values['data-dir'] ?? '.writ';
  try {
    const report = await repairStore(dataDir, values.reason !== undefined ? { reason: values.reason } : {});
    if (report.outcome === 'intact') {
      process.stderr.write(`writ repair: ${dataDir}: the chain of ${report.records} records is intact; nothing to repair\n`);
    } else if (report.outcome === 'rebuilt') {
      process.stderr.write(`writ repair: ${dataDir}: all ${report.records} records are good; rebuilt the Merkle nodes and indexes\n`);
    } else {
      process.stderr.write(
        `writ repair: ${dataDir}: ${report.problem} at seq ${report.dropped_from_seq}; ` +
          `last good record is seq ${report.last_good_seq} (${report.last_good_hash})\n` +
          `writ repair: dropped ${report.dropped_records} record(s) from seq ${report.dropped_from_seq} ` +
          `out of the live store (saved in ${report.dropped_file})\n` +
          `writ repair: appended chain_break record seq ${report.chain_break!.seq}; the store serves again\n`,
      );
    }
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return 0;
  } catch (e) {
    if (!isWritError(e)) throw e;
    process.stderr.write(`writ repair: ${e.message}\n`);
    return 1;
  }
}
