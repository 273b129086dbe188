/**
 * `writ store migrate --database-url URL` and `writ store copy --data-dir DIR --database-url URL`
 * (docs/protocol.md §9). Exit 0 done, 1 refused or failed, 2 usage.
 */
import { parseArgs } from 'node:util';
import { isWritError } from '../errors.js';
import { databaseUrlProblem } from '../config/config.js';

const USAGE = `usage: writ store migrate [--database-url URL]
       writ store copy --data-dir DIR [--database-url URL]

migrate  creates or migrates the PostgreSQL schema (idempotent; safe while replicas start).
copy     copies an LMDB data dir's ledger and state into an empty database, every record and hash
         unchanged (a database holding records is refused; the data dir's server must be stopped).
The URL defaults to WRIT_DATABASE_URL.
`;

/** Why the command line cannot run (a usage error, exit 2), or undefined. The first problem wins. */
function usageProblem(sub: string | undefined, url: string | undefined, fromFlag: boolean, dataDir: string | undefined): string | undefined {
  if (sub !== 'migrate' && sub !== 'copy') return sub === undefined ? 'a command is needed: migrate or copy' : `unknown command '${sub}' (migrate or copy)`;
  if (!url) return 'a postgres:// --database-url (or WRIT_DATABASE_URL) is needed';
  const urlProblem = databaseUrlProblem(url);
  if (urlProblem !== undefined) {
    const source = fromFlag ? '--database-url' : 'WRIT_DATABASE_URL';
    return `${source} is not a postgres:// (or postgresql://) URL: ${urlProblem}`;
  }
  if (sub === 'copy' && !dataDir) return 'copy needs --data-dir DIR (the LMDB data dir to copy)';
  return undefined;
}

export async function main(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === '--help' || sub === '-h') {
    process.stdout.write(USAGE);
    return 0;
  }
  let values: { 'database-url'?: string; 'data-dir'?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: rest,
      options: { 'database-url': { type: 'string' }, 'data-dir': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    }));
  } catch (e) {
    process.stderr.write(`writ store: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const fromFlag = values['database-url'] !== undefined;
  const url = values['database-url'] ?? process.env.WRIT_DATABASE_URL;
  const problem = usageProblem(sub, url, fromFlag, values['data-dir']);
  if (problem !== undefined || url === undefined) {
    process.stderr.write(`writ store: ${problem}\n\n${USAGE}`);
    return 2;
  }
  try {
    const { copyLmdbToPostgres, migrateDatabase } = await import('../store/postgres/copy.js');
    if (sub === 'migrate') {
      const version = await migrateDatabase(url);
      process.stdout.write(`${JSON.stringify({ ok: true, schema_version: version })}\n`);
    } else {
      const report = await copyLmdbToPostgres(values['data-dir']!, url);
      process.stdout.write(`${JSON.stringify({ ok: true, ...report })}\n`);
    }
    return 0;
  } catch (e) {
    process.stderr.write(`writ store ${sub}: ${isWritError(e) ? `${e.code}: ` : ''}${(e as Error)?.message ?? String(e)}\n`);
    return 1;
  }
}
