/**
 * `writ policy validate|test|fmt|replay [--dir DIR]` (docs/protocol.md §8, §12). Exit codes: 0 ok, 1 invalid policies /
 * failing tests / files that need formatting, 2 usage errors.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { isWritError } from '../errors.js';
import { describeCedarErrors, entitiesVersionOf, listSourceFiles, loadPolicyDir, type PolicyBundle } from '../policy/load.js';
import { caseLine, runPolicyTests } from '../policy-tests/run.js';

const USAGE = `usage: writ policy <validate|test|fmt|replay> [--dir DIR] [options]

  validate            load every *.cedar, the schema and entities.json; report problems
  test                run DIR/tests/**/*.json: one line per case, then "N passed, M failed"
      --coverage      also list the policies that never were a reason of any case
      --json          machine-readable output
  fmt                 format every *.cedar with Cedar's formatter (rewrites files)
      --check         change nothing; exit 1 if any file would change
  replay EXPORT.jsonl re-decide a ledger export's decisions with the policies of DIR and list
                      the ones that change ('writ policy replay --help')

  --dir DIR           the policy directory (default: policies)
`;

function out(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

function err(text: string): void {
  process.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** Loads or reports why not (exit code 1 when it cannot be loaded). */
function loadOrReport(dir: string, json: boolean): PolicyBundle | undefined {
  if (!existsSync(dir)) {
    // Usually the default `policies` where there is none (an installed package's folder, say).
    const message = `${dir}: no such directory; name the policy directory with --dir DIR`;
    if (json) out(JSON.stringify({ ok: false, error: { code: 'INVALID_REQUEST', message, details: [message] } }));
    else err(`writ policy: ${message}`);
    return undefined;
  }
  try {
    return loadPolicyDir(dir);
  } catch (e) {
    if (!isWritError(e)) throw e;
    const details = Array.isArray(e.details) ? (e.details as string[]) : [e.message];
    if (json) out(JSON.stringify({ ok: false, error: { code: e.code, message: e.message, details } }));
    else err(`writ policy: ${dir}: invalid policies\n${details.map((d) => `  ${d}`).join('\n')}`);
    return undefined;
  }
}

function validate(dir: string, json: boolean): number {
  const bundle = loadOrReport(dir, json);
  if (!bundle) return 1;
  const summary = {
    ok: true,
    policies: bundle.ids,
    policy_version: bundle.policyVersion,
    entities: bundle.seedEntities.length,
    entities_version: entitiesVersionOf(bundle.seedEntities),
    schema: bundle.schemaText !== undefined,
  };
  if (json) out(JSON.stringify(summary));
  else {
    out(
      `ok: ${bundle.ids.length} ${bundle.ids.length === 1 ? 'policy' : 'policies'}, ${bundle.seedEntities.length} entities, ` +
        `${summary.schema ? 'schema validated (strict)' : 'no schema'}`,
    );
    out(`policy_version ${bundle.policyVersion}`);
    out(`entities_version ${summary.entities_version}`);
  }
  return 0;
}

function test(dir: string, json: boolean, coverage: boolean): number {
  const bundle = loadOrReport(dir, json);
  if (!bundle) return 1;
  const run = runPolicyTests(bundle);
  if (json) {
    out(
      JSON.stringify({
        passed: run.passed,
        failed: run.failed,
        cases: run.results,
        ...(coverage ? { never_determining: run.neverDetermining } : {}),
      }),
    );
  } else {
    for (const result of run.results) out(caseLine(result));
    if (coverage) {
      out(`coverage: ${run.determining.length}/${bundle.ids.length} policies determined at least one case`);
      for (const id of run.neverDetermining) out(`never determining: ${id}`);
    }
    out(`${run.passed} passed, ${run.failed} failed`);
  }
  return run.failed > 0 ? 1 : 0;
}

function fmt(dir: string, check: boolean): number {
  if (!existsSync(dir)) {
    err(`writ policy fmt: ${dir}: no such directory; name the policy directory with --dir DIR`);
    return 1;
  }
  let files: string[];
  try {
    files = listSourceFiles(dir).filter((f) => f.endsWith('.cedar'));
  } catch (e) {
    err(`writ policy fmt: ${(e as Error).message}`);
    return 1;
  }
  let status = 0;
  let changed = 0;
  for (const rel of files) {
    const path = join(dir, rel);
    const text = readFileSync(path, 'utf8');
    const result = cedar.formatPolicies({ policyText: text });
    if (result.type === 'failure') {
      for (const line of describeCedarErrors(result.errors, rel, text)) err(line);
      status = 1;
      continue;
    }
    if (result.formatted_policy === text) continue;
    changed++;
    if (check) {
      out(`would reformat ${rel}`);
      status = 1;
    } else {
      writeFileSync(path, result.formatted_policy);
      out(`formatted ${rel}`);
    }
  }
  // One line either way, so a check that passes is visibly a check that ran.
  if (status === 0 && changed === 0) out(`${files.length} file(s) already formatted`);
  return status;
}

export async function main(argv: string[]): Promise<number> {
  // `replay` has options of its own: hand it everything but its name (src/cli/replay.ts).
  const subcommandAt = argv.findIndex((a, i) => !a.startsWith('-') && argv[i - 1] !== '--dir');
  if (argv[subcommandAt] === 'replay') {
    return (await import('./replay.js')).main([...argv.slice(0, subcommandAt), ...argv.slice(subcommandAt + 1)]);
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        dir: { type: 'string', default: 'policies' },
        json: { type: 'boolean', default: false },
        coverage: { type: 'boolean', default: false },
        check: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (e) {
    err(`writ policy: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    out(USAGE);
    return 0;
  }
  const [command, ...extra] = positionals;
  if (extra.length > 0) {
    err(`writ policy: unexpected argument '${extra[0]}'\n\n${USAGE}`);
    return 2;
  }
  // An option another subcommand takes is refused, not silently ignored (`validate --coverage` would
  // otherwise look like a coverage run that found nothing).
  const takes: Record<string, string[]> = { validate: ['json'], test: ['json', 'coverage'], fmt: ['check'] };
  const given = (['json', 'coverage', 'check'] as const).filter((o) => values[o]);
  const stray = command !== undefined && takes[command] ? given.find((o) => !takes[command]!.includes(o)) : undefined;
  if (stray !== undefined) {
    err(`writ policy ${command}: --${stray} is not an option of ${command}\n\n${USAGE}`);
    return 2;
  }
  const dir = values.dir;
  switch (command) {
    case 'validate':
      return validate(dir, values.json);
    case 'test':
      return test(dir, values.json, values.coverage);
    case 'fmt':
      return fmt(dir, values.check);
    default:
      err(`writ policy: ${command ? `unknown subcommand '${command}'` : 'missing subcommand'}\n\n${USAGE}`);
      return 2;
  }
}
