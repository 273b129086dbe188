/**
 * Shared plumbing of the PEP tests: spawning `writ proxy` under the SDK client, an in-process server
 * wired to a client, a fake PDP per test file, envelopes, effects. (`writ proxy` on raw pipes:
 * test/helpers/proxy-process.ts.)
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { startFakePdp, type FakePdp, type FakePdpOptions } from './fake-pdp.js';

export const REPO = fileURLToPath(new URL('../../../', import.meta.url));
export const WRIT_BIN = join(REPO, 'bin', 'writ');
export const HOSTILE = join(REPO, 'test', 'pep', 'fixtures', 'hostile.mjs');
export const PEP_POLICIES = join(REPO, 'test', 'pep', 'policies');
export const FS_SERVER = join(REPO, 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');
export const MEMORY_SERVER = join(REPO, 'node_modules', '@modelcontextprotocol', 'server-memory', 'dist', 'index.js');

export const ACTOR = { type: 'Agent', id: 'offboarding-agent-prod' };
export const ACTOR_KEY = 'Agent::"offboarding-agent-prod"';

export function envelope(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    task_id: 'PEP-1',
    purpose: 'pep_tests',
    requester: { type: 'User', id: 'manager-1842' },
    actor: ACTOR,
    subject: { type: 'Employee', id: '7721' },
    supersedes: null,
    ...over,
  };
}

export function meta(executionId: string, env: Record<string, unknown> = envelope()): Record<string, unknown> {
  return { 'io.writ/envelope': env, 'io.writ/execution_id': executionId };
}

export function tempDir(prefix = 'writ-pep-'): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * For the test file that calls it (at top level): a temp dir made now, and a fake PDP started before
 * the file's tests; after them the PDP is stopped and the dir removed.
 */
export function fakePdpPerTestFile(options?: FakePdpOptions): { readonly pdp: FakePdp; readonly dir: string } {
  const t = tempDir();
  let pdp: FakePdp;
  before(async () => {
    pdp = await startFakePdp(options);
  });
  after(async () => {
    await pdp.stop();
    t.cleanup();
  });
  return {
    get pdp() {
      return pdp;
    },
    dir: t.dir,
  };
}

export interface ProxySession {
  client: Client;
  transport: StdioClientTransport;
  /** The proxy's (and child's) stderr so far. */
  stderr(): string;
  close(): Promise<void>;
}

export interface ProxyArgs {
  pdpUrl: string;
  token: string;
  server: string;
  command: string[];
  dir: string;
  defaults?: unknown;
  callTimeoutMs?: number;
  env?: Record<string, string>;
  cwd?: string;
}

/** `writ proxy … -- CMD` under an SDK client over stdio. */
export async function connectProxy(a: ProxyArgs): Promise<ProxySession> {
  const tokenFile = join(a.dir, `token-${Math.random().toString(36).slice(2)}`);
  writeFileSync(tokenFile, `  ${a.token}\n`);
  const args = [WRIT_BIN, 'proxy', '--pdp', a.pdpUrl, '--token-file', tokenFile, '--server', a.server];
  if (a.defaults !== undefined) {
    const f = join(a.dir, `defaults-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(f, JSON.stringify(a.defaults));
    args.push('--defaults', f);
  }
  if (a.callTimeoutMs !== undefined) args.push('--call-timeout', String(a.callTimeoutMs));
  args.push('--', ...a.command);
  return connectStdio(process.execPath, args, a.env, a.cwd);
}

/** An SDK client over stdio to any command. */
export async function connectStdio(command: string, args: string[], env?: Record<string, string>, cwd?: string): Promise<ProxySession> {
  const transport = new StdioClientTransport({
    command,
    args,
    env: { ...(process.env as Record<string, string>), ...env },
    stderr: 'pipe',
    ...(cwd ? { cwd } : {}),
  });
  let err = '';
  transport.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const client = new Client({ name: 'writ-pep-test', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    transport,
    stderr: () => err,
    close: async () => {
      await client.close();
    },
  };
}

/** An SDK client connected to `server` in process (InMemoryTransport); `close` closes both ends. */
export async function connectInMemory(server: McpServer): Promise<{ client: Client; close: () => Promise<void> }> {
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new Client({ name: 't', version: '1.0.0' });
  await client.connect(ct);
  return {
    client,
    close: async () => {
      await client.close();
      await server.close();
    },
  };
}

export function readEffects(file: string): Array<{ execution_id: string | null; key: string; mode: string; args: Record<string, unknown> }> {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** `_meta["io.writ/decision"]` of a tool result, or undefined. */
export function decisionOf(result: unknown): Record<string, unknown> | undefined {
  return (result as { _meta?: Record<string, Record<string, unknown>> })?._meta?.['io.writ/decision'];
}

export { waitFor } from '../helpers/wait.js';
