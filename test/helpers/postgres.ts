/**
 * A real PostgreSQL server for tests (no mocks): a fresh cluster in a temp dir (initdb), trust auth on
 * 127.0.0.1 and a unix socket dir inside the temp dir, fsync on, on a free port; stopped and removed
 * by stop(). PostgreSQL refuses to run as root, so as root the binaries run as the `postgres` user.
 * The binaries come from `pg_config --bindir` (Debian: /usr/lib/postgresql/<v>/bin).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export interface TestPostgres {
  port: number;
  /** The cluster's data directory. */
  dataDir: string;
  /** URL of a database (default `postgres`). */
  url(db?: string): string;
  /** Creates a fresh empty database and returns its URL. */
  createDatabase(name?: string): Promise<string>;
  /** Stops the server (fast shutdown: connections are closed), keeping its data. */
  pause(): void;
  /** Starts it again on the same port and data. */
  resume(): void;
  stop(): void;
}

function binDir(): string {
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
    if (existsSync(join(dir, 'initdb'))) return dir;
  } catch {
    /* fall through */
  }
  for (const v of ['17', '16', '15', '14']) {
    const dir = `/usr/lib/postgresql/${v}/bin`;
    if (existsSync(join(dir, 'initdb'))) return dir;
  }
  throw new Error('PostgreSQL server binaries not found (install the postgresql package)');
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const asRoot = process.getuid?.() === 0;

function run(bin: string, args: string[]): void {
  const r = asRoot ? spawnSync('runuser', ['-u', 'postgres', '--', bin, ...args], { encoding: 'utf8' }) : spawnSync(bin, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${bin} ${args.join(' ')} failed (${r.status}): ${r.stdout}\n${r.stderr}`);
}

let counter = 0;

export async function startPostgres(): Promise<TestPostgres> {
  const bin = binDir();
  const root = mkdtempSync(join(tmpdir(), 'writ-pg-'));
  chmodSync(root, 0o755);
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(root, uid, gid);
  }
  const data = join(root, 'data');
  const port = await freePort();
  run(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale', 'C']);
  const start = () =>
    run(join(bin, 'pg_ctl'), [
      '-D',
      data,
      '-l',
      join(root, 'server.log'),
      '-w',
      '-t',
      '30',
      '-o',
      `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on -c max_connections=200 -c shared_buffers=32MB`,
      'start',
    ]);
  start();
  let running = true;
  const url = (db = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${db}`;
  return {
    port,
    dataDir: data,
    url,
    async createDatabase(name) {
      const db = name ?? `writ_${process.pid}_${Date.now()}_${counter++}`;
      const client = new pg.Client({ connectionString: url() });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${db}`);
      } finally {
        await client.end();
      }
      return url(db);
    },
    pause() {
      if (!running) return;
      run(join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop']);
      running = false;
    },
    resume() {
      if (running) return;
      start();
      running = true;
    },
    stop() {
      if (running) {
        try {
          run(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
        } catch {
          /* already gone */
        }
        running = false;
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
}

let shared: Promise<TestPostgres> | undefined;

/** One server per test process, started on first use and stopped at exit. */
export function sharedPostgres(): Promise<TestPostgres> {
  if (!shared) {
    shared = startPostgres();
    shared.then((p) => process.once('exit', () => p.stop())).catch(() => undefined);
  }
  return shared;
}
