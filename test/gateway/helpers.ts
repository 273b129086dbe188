/**
 * What the gateway tests start: a real IdP (oidc-provider), the real PDP with a delegated pep token for
 * the gateway, MCP servers as child processes, and the gateway itself (in-process); plus a small raw
 * Streamable HTTP client for the exchanges an SDK client would not send (another identity's session id,
 * mismatched routing headers).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { checkGatewayConfig } from '../../src/gateway/config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/gateway.js';
import { REPO, TEST_TOKENS, startTestServer, type TestServer } from '../helpers/server.js';

export const PUBLIC_URL = 'https://gw.test';
export const GATEWAY_TOKEN = 'test-gateway-delegated-pep-token';
export const FIXTURES = join(REPO, 'test', 'gateway', 'fixtures');
export const EVERYTHING = join(REPO, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
export const resource = (name: string): string => `${PUBLIC_URL}/mcp/${name}`;

/** The PDP, with the gateway's token a delegated pep for every resource the tests use; `extra`: more config (bench/gateway.mjs). */
export async function startPdp(issuer: string, servers: string[], extra: Record<string, unknown> = {}): Promise<TestServer> {
  const t = TEST_TOKENS;
  return startTestServer({
    policyDir: join(REPO, 'test', 'gateway', 'policies'),
    config: {
      tokens: [
        { token: GATEWAY_TOKEN, role: 'pep', actor: { type: 'Agent', id: 'writ-gateway' }, delegated: { audiences: servers.map(resource) } },
        // A plain pep with the clients' actor: bench/gateway.mjs compares it with the delegated one.
        { token: t.pep, role: 'pep', actor: { type: 'Agent', id: 'mcp-client' } },
        { token: t.auditor, role: 'auditor' },
        { token: t.admin, role: 'admin' },
      ],
      jwt_issuers: [{ issuer, audience: 'https://writ.test', roles: {} }],
      ...extra,
    },
  });
}

export interface Upstream {
  url: string;
  child: ChildProcess;
  stop(): void;
}

/** Starts an MCP server fixture that prints its URL on its first line. */
export async function startHttpUpstream(file: string, env: Record<string, string>): Promise<Upstream> {
  const child = spawn(process.execPath, [join(FIXTURES, file)], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout });
    rl.once('line', (l) => resolve(l.trim()));
    child.once('exit', (code) => reject(new Error(`${file} exited ${code} before listening`)));
  });
  return { url, child, stop: () => void child.kill() };
}

export async function startTestGateway(o: {
  pdpUrl: string;
  issuer: string;
  servers: Record<string, unknown>;
  extra?: Record<string, unknown>;
}): Promise<RunningGateway> {
  const cfg = checkGatewayConfig(
    {
      listen: '127.0.0.1:0',
      public_url: PUBLIC_URL,
      pdp: { url: o.pdpUrl, token_file: 'gateway.token' },
      jwt_issuers: [{ issuer: o.issuer }],
      authorization_servers: [o.issuer],
      scopes_supported: ['mcp'],
      defaults: { task_id: 'GW-1', purpose: 'gateway test', subject: { type: 'Employee', id: '7721' } },
      servers: o.servers,
      call_timeout_ms: 10_000,
      ...o.extra,
    },
    { readFile: () => GATEWAY_TOKEN },
  );
  return startGateway(cfg, { log: () => undefined, pdpTimeoutMs: 3_000 });
}

export const linesOf = (file: string): any[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];

/** The JSON-RPC messages of a Streamable HTTP answer (JSON or SSE). */
export async function messagesOf(res: Response): Promise<any[]> {
  const text = await res.text();
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    return text
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)));
  }
  if (text === '') return [];
  const v = JSON.parse(text);
  return Array.isArray(v) ? v : [v];
}

/** A raw MCP session over Streamable HTTP at the 2025-11-25 revision. */
export async function rawSession(
  url: string,
  token: string,
): Promise<{ id: string; request(method: string, params?: unknown, headers?: Record<string, string>): Promise<{ status: number; messages: any[] }> }> {
  let seq = 0;
  const post = async (body: unknown, headers: Record<string, string>) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`, ...headers },
      body: JSON.stringify(body),
    });
  const init = await post(
    {
      jsonrpc: '2.0',
      id: ++seq,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: { tasks: {} }, clientInfo: { name: 'raw', version: '1' } },
    },
    {},
  );
  if (init.status !== 200) throw new Error(`initialize: ${init.status} ${await init.text()}`);
  const id = init.headers.get('mcp-session-id')!;
  await messagesOf(init);
  const session = { 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' };
  await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session)).text();
  return {
    id,
    async request(method, params = {}, headers = {}) {
      const res = await post({ jsonrpc: '2.0', id: ++seq, method, params }, { ...session, ...headers });
      return { status: res.status, messages: await messagesOf(res) };
    },
  };
}
