/** Starts `writ witness serve` as a child process on a free port (real process, real fsync'd state). */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { WRIT_BIN } from './server.js';

export interface TestWitness {
  url: string;
  child: ChildProcess;
  output(): string;
  stop(): Promise<number | null>;
}

/** `writ witness keygen`: the vkey it prints. */
export function witnessKeygen(name: string, out: string): string {
  const r = spawnSync(process.execPath, [WRIT_BIN, 'witness', 'keygen', '--name', name, '--out', out], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`witness keygen failed: ${r.stderr}`);
  return r.stdout.trim();
}

export async function startWitness(o: { key: string; logs: string[]; state: string; listen?: string }): Promise<TestWitness> {
  const args = [
    WRIT_BIN,
    'witness',
    'serve',
    '--key',
    o.key,
    '--state',
    o.state,
    '--listen',
    o.listen ?? '127.0.0.1:0',
    ...o.logs.flatMap((l) => ['--log', l]),
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const onData = () => {
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        child.stdout.off('data', onData);
        resolve(m[1]!);
      }
    };
    child.stdout.on('data', onData);
    void exited.then((code) => reject(new Error(`witness exited with ${code} before listening:\n${out}`)));
  });
  return {
    url,
    child,
    output: () => out,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
