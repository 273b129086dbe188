/**
 * `writ policy replay --dir CANDIDATE EXPORT.jsonl [--json] [--since TS] [--until TS] [--keys K] [--checkpoint C] [--no-verify]`
 * (docs/protocol.md §12): what the candidate policies would have decided on the ledger's real traffic.
 *
 * Three streaming passes over the export, each holding one line at a time: (1) the chain is verified
 * with `writ verify`'s checks (unless --no-verify); (2) a byte search finds the executions that some
 * decision supersedes, the only executions whose state replay has to follow; (3) every record is fed
 * to the Replayer (src/replay/), which prints each changed decision as it goes.
 *
 * Exit 0: no decision changed; 1: some did; 2: bad input (usage, an unreadable export, a policy dir
 * that does not load, an export that does not verify, a decision record that cannot be rebuilt).
 */
import { statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { isWritError } from '../errors.js';
import { decodeLine } from '../ledger/verify-block.js';
import { PolicyEngine } from '../policy/engine.js';
import { loadPolicyDir, type PolicyBundle } from '../policy/load.js';
import { forEachLine } from '../replay/lines.js';
import { SUPERSEDES_MARK, supersedeTargetOf } from '../replay/executions.js';
import { Replayer } from '../replay/replayer.js';
import { authzenDecider } from '../replay/authzen.js';
import { changeLines, jsonChange, summaryLine, type ReplayChange } from '../replay/diff.js';
import { rfc3339CeilMillis } from '../util/rfc3339.js';
import { readVerifyAnchors, verifyInput } from './verify.js';
import type { VerifyOptions } from '../ledger/verify.js';

export const REPLAY_USAGE = `usage: writ policy replay --dir CANDIDATE EXPORT.jsonl [--json] [--since TS] [--until TS]
                          [--keys KEYS.json] [--checkpoint CP.json] [--no-verify]

Re-decides every decision record of a ledger export (GET /v1/ledger/export) with the candidate
policies of CANDIDATE, using what each decision saw when it was made: the recorded envelope,
arguments, phase and PDP clock, the approvals that were valid then, the superseded execution's state
then, and the trusted entities as they stood then (rebuilt from the export's entity records). Prints
every decision that would change (its decision, or its reasons as a set) and then
"N replayed, M changed".

options:
  --dir CANDIDATE   the candidate policy directory (required)
  --json            one JSON line per change, {seq, execution_id, recorded: {decision, reasons},
                    candidate: {decision, reasons}}, then {"replayed": N, "changed": M}; a refusal
                    is {"error": {code, …}} (an export that does not verify, a candidate that
                    does not load)
  --since TS        only decisions whose clock (the record's "now", whole milliseconds) is at or
                    after TS (RFC 3339; any number of fractional digits)
  --until TS        only decisions whose clock is before TS (RFC 3339)
  --keys KEYS.json  trusted public keys (GET /v1/ledger/keys), checked as 'writ verify --keys' does:
                    the ledger's first key must be one of them
  --checkpoint CP.json
                    a checkpoint held from earlier (GET /v1/ledger/checkpoint): the export must
                    extend it, so a truncated or rewritten export is refused
  --no-verify       skip verifying the export's chain (hashes, links, checkpoints, bindings)
  -h, --help        show this help

The export is verified first, with the checks of 'writ verify'; one that does not verify is refused,
naming the verify code. Without --keys or --checkpoint that proves only that the export is
self-consistent: anyone can re-hash and re-sign an edited export with a key of their own. Entity records before --since still count: entities are rebuilt from the
start of the export. Progress is shown on stderr when it is a terminal.

exit 0: no decision changed; 1: some changed; 2: bad input (usage, unreadable export, a candidate that
does not load, an export that does not verify).
`;

function usageError(message: string): number {
  process.stderr.write(`writ policy replay: ${message}\n\n${REPLAY_USAGE}`);
  return 2;
}

function fail(message: string): number {
  process.stderr.write(`writ policy replay: ${message}\n`);
  return 2;
}

function instant(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  try {
    // Recorded clocks are whole milliseconds: rounded up, 21.6021 leaves out a decision made at 21.602.
    return rfc3339CeilMillis(text);
  } catch {
    throw new Error(`${flag}: ${JSON.stringify(text)} is not an RFC 3339 date-time with an offset`);
  }
}

/** Progress on stderr, only when stderr is a terminal. */
class Progress {
  private readonly enabled = process.stderr.isTTY === true;
  private last = 0;
  private readonly started = Date.now();

  tick(phase: string, lines: number, decisions?: number): void {
    if (!this.enabled) return;
    const now = Date.now();
    if (now - this.last < 250) return;
    this.last = now;
    const seconds = (now - this.started) / 1000;
    const rate = decisions !== undefined && seconds > 0 ? `, ${Math.round(decisions / seconds)} decisions/s` : '';
    process.stderr.write(`\r\x1b[Kwrit policy replay: ${phase}: ${lines} records${decisions !== undefined ? `, ${decisions} decisions replayed` : ''}${rate}`);
  }

  done(): void {
    if (this.enabled) process.stderr.write('\r\x1b[K');
  }
}

/** The reader of stdout went away (`writ policy replay … | head`): stop quietly, as `git log | head` does. */
class StdoutClosed extends Error {}

let stdoutError: NodeJS.ErrnoException | undefined;
function checkStdout(): void {
  const e = stdoutError;
  if (e) throw new StdoutClosed(e.message);
}

/** Writes `text` to stdout and waits for the pipe to drain when it is full (bounded memory). */
async function emit(text: string): Promise<void> {
  checkStdout();
  if (text === '') return;
  if (!process.stdout.write(text)) {
    await new Promise<void>((resolve) => {
      const done = () => {
        process.stdout.off('drain', done);
        process.stdout.off('error', done);
        resolve();
      };
      process.stdout.on('drain', done);
      process.stdout.on('error', done);
    });
  }
  checkStdout();
}

export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        dir: { type: 'string' },
        json: { type: 'boolean', default: false },
        since: { type: 'string' },
        until: { type: 'string' },
        'no-verify': { type: 'boolean', default: false },
        keys: { type: 'string' },
        checkpoint: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (e) {
    return usageError((e as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(REPLAY_USAGE);
    return 0;
  }
  // No default candidate: replaying the live ./policies would silently report "nothing changed".
  if (values.dir === undefined) return usageError('name the candidate policy directory: --dir CANDIDATE');
  if (positionals.length !== 1) return usageError('expected exactly one EXPORT file');
  const exportPath = positionals[0]!;
  if (exportPath === '-') return usageError('replay reads its export more than once: give a file, not stdin');
  let since: number | undefined;
  let until: number | undefined;
  try {
    since = instant('--since', values.since);
    until = instant('--until', values.until);
    if (since !== undefined && until !== undefined && since >= until) {
      throw new Error(`--since ${values.since} is not before --until ${values.until}: no decision could be selected`);
    }
  } catch (e) {
    return usageError((e as Error).message);
  }
  const json = values.json;
  let anchors: VerifyOptions;
  try {
    if (values['no-verify'] && (values.keys !== undefined || values.checkpoint !== undefined)) {
      throw new Error('--keys and --checkpoint are checked by verifying the export: they cannot go with --no-verify');
    }
    anchors = readVerifyAnchors(values.keys, values.checkpoint);
  } catch (e) {
    return usageError((e as Error).message);
  }

  let bundle: PolicyBundle;
  let engine: PolicyEngine;
  try {
    // The entities come from the export; the candidate's own entities.json is not used, so not read.
    bundle = loadPolicyDir(values.dir, { entities: false });
    engine = new PolicyEngine(bundle);
  } catch (e) {
    if (!isWritError(e)) throw e;
    const details = Array.isArray(e.details) ? (e.details as string[]) : [e.message];
    // With --json a script reads stdout: the refusal is there too, as an unverifiable export's is.
    if (json) await emit(`${JSON.stringify({ error: { code: e.code, message: e.message, details } })}\n`);
    return fail(`${values.dir}: the candidate policies do not load\n${details.map((d) => `  ${d}`).join('\n')}`);
  }
  try {
    if (!statSync(exportPath).isFile()) return fail(`${exportPath}: not a file`);
  } catch (e) {
    return fail(`cannot read ${exportPath}: ${(e as Error).message}`);
  }

  const progress = new Progress();
  // A closed stdout is an 'error' event; without a listener it would end the process with a stack trace.
  const onStdoutError = (e: NodeJS.ErrnoException) => {
    stdoutError = e;
  };
  process.stdout.on('error', onStdoutError);
  let started: Replayer | undefined;
  try {
    // 1. The chain, with writ verify's checks and its default worker threads.
    if (!values['no-verify']) {
      const verdict = await verifyInput(exportPath, anchors, availableParallelism(), false);
      if (!verdict.ok) {
        if (json) await emit(`${JSON.stringify({ error: { code: verdict.code, seq: verdict.seq, message: verdict.message } })}\n`);
        return fail(`refused: ${exportPath} does not verify: ${verdict.code} at seq ${verdict.seq} (${verdict.message})`);
      }
    }

    // 2. The executions some decision supersedes (usually none): a byte search, parsing only matches.
    const targets = new Set<string>();
    const mark = Buffer.from(SUPERSEDES_MARK);
    let lines = 0;
    await forEachLine(
      exportPath,
      (buf, start, end) => {
        lines++;
        const at = buf.indexOf(mark, start);
        if (at < 0 || at >= end) return;
        const text = decodeLine(buf, start, end);
        if (text === undefined) return;
        try {
          const target = supersedeTargetOf(JSON.parse(text));
          if (target !== undefined) targets.add(target);
        } catch {
          /* pass 3 reports lines that are not JSON */
        }
      },
      () => progress.tick('scanning', lines),
    );

    // 3. Replay.
    const authzen = await authzenDecider(engine);
    const replayer = new Replayer(engine, {
      supersedeTargets: targets,
      ...(since !== undefined ? { since } : {}),
      ...(until !== undefined ? { until } : {}),
      ...(authzen ? { authzen } : {}),
    });
    started = replayer;
    let pending = '';
    let line = 0;
    await forEachLine(
      exportPath,
      (buf, start, end) => {
        const text = decodeLine(buf, start, end);
        let record: Record<string, unknown>;
        try {
          if (text === undefined) throw new Error('not UTF-8');
          record = JSON.parse(text);
          if (record === null || typeof record !== 'object' || Array.isArray(record)) throw new Error('not a JSON object');
        } catch (e) {
          throw new BadExport(`line ${line + 1} of ${exportPath} is not a ledger record: ${(e as Error).message}`);
        }
        line++;
        let change: ReplayChange | undefined;
        try {
          change = replayer.push(record);
        } catch (e) {
          if (isWritError(e)) throw new BadExport(e.message);
          throw e;
        }
        if (change === undefined) return;
        pending += json ? `${jsonChange(change)}\n` : `${changeLines(change).join('\n')}\n`;
      },
      async () => {
        progress.tick('replaying', line, replayer.counts.replayed);
        const out = pending;
        pending = '';
        await emit(out);
      },
    );
    progress.done();
    const { replayed, changed, authzenSkipped, inexactEntities, firstInexactSeq } = replayer.counts;
    if (authzenSkipped > 0) {
      process.stderr.write(`writ policy replay: ${authzenSkipped} AuthZEN decisions not replayed: this build has no AuthZEN API (src/replay/authzen.ts)\n`);
    }
    if (inexactEntities > 0) {
      process.stderr.write(
        `writ policy replay: warning: ${inexactEntities} decisions (first at seq ${firstInexactSeq}) name an entities_version the export's entity ` +
          `records do not reach; they were replayed against the entities as last rebuilt\n`,
      );
    }
    await emit(json ? `${JSON.stringify({ replayed, changed })}\n` : `${summaryLine(replayed, changed)}\n`);
    return changed > 0 ? 1 : 0;
  } catch (e) {
    progress.done();
    if (e instanceof StdoutClosed) return (started?.counts.changed ?? 0) > 0 ? 1 : 0;
    if (e instanceof BadExport) return fail(e.message);
    const err = e as NodeJS.ErrnoException;
    if (err && typeof err.code === 'string' && err.syscall) return fail(`cannot read ${exportPath}: ${err.message}`);
    throw e;
  }
  // The listener stays: bin/writ lets the event loop drain, and an EPIPE can still arrive after the
  // last write was buffered — without a listener it would end the process with a stack trace.
}

class BadExport extends Error {}
