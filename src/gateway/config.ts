/**
 * `writ gateway --config FILE` (docs/protocol.md §14): the config, checked once at start, every problem
 * named with where it is. Pure but for reading the files it names (the PDP token, TLS material).
 *
 *     {"listen": "127.0.0.1:8710", "public_url": "https://mcp.example.com",
 *      "pdp": {"url": "http://127.0.0.1:8700", "token_file": "gateway.token"},
 *      "jwt_issuers": [{"issuer": "https://idp.example.com"}],
 *      "authorization_servers": ["https://idp.example.com"],
 *      "scopes_supported": ["mcp"], "allowed_origins": ["https://app.example.com"],
 *      "defaults": {…an envelope, as writ proxy --defaults reads it…},
 *      "servers": {"crm": {"url": "https://crm.internal/mcp", "headers": {"authorization": "Bearer …"}},
 *                  "everything": {"command": ["npx", "mcp-server-everything"], "env": {…}}}}
 *
 * `jwt_issuers` entries are §13's, but the audience is each server's resource URI
 * (`<public_url>/mcp/NAME`) and no roles are granted: the gateway's clients are MCP clients, decided
 * as end users through the PDP, not writ callers. Beside §14's members: `call_timeout_ms`,
 * `log_format`, `tls_cert_file` / `tls_key_file` (HTTPS, as writ serve) and `shutdown_grace_ms`.
 */
import { readFileSync } from 'node:fs';
import { checkJwtIssuers, IssuerConfigError, trustedUrlProblem, type JwtIssuerSpec } from '../identity/issuers.js';
import { checkTimeoutMs } from '../pep/client.js';
import { defaultsEnvelopeIssue, isObject, parseDefaults, type Defaults } from '../pep/context.js';
import { LOG_FORMATS, type LogFormat } from '../log/log.js';

export type UpstreamSpec =
  | { kind: 'http'; url: string; headers: Record<string, string> }
  | { kind: 'stdio'; command: string; args: string[]; env?: Record<string, string> };

export interface GatewayConfig {
  host: string;
  port: number;
  /** Without a trailing slash. */
  publicUrl: string;
  publicOrigin: string;
  pdp: { url: string; token: string };
  issuers: JwtIssuerSpec[];
  authorizationServers: string[];
  scopesSupported?: string[];
  allowedOrigins?: string[];
  defaults?: Defaults;
  servers: Map<string, UpstreamSpec>;
  callTimeoutMs: number;
  logFormat: LogFormat;
  tls: { certFile: string; keyFile: string } | null;
  /** How long SIGTERM waits for calls in flight before closing anyway. */
  shutdownGraceMs: number;
}

export class GatewayConfigError extends Error {}

function fail(message: string): never {
  throw new GatewayConfigError(message);
}

const KNOWN = new Set([
  'listen',
  'public_url',
  'pdp',
  'jwt_issuers',
  'authorization_servers',
  'scopes_supported',
  'allowed_origins',
  'defaults',
  'servers',
  'call_timeout_ms',
  'log_format',
  'tls_cert_file',
  'tls_key_file',
  'shutdown_grace_ms',
]);

/** A server name is one URL path segment, and a PDP `action.server` (no `/`). */
const SERVER_NAME = /^[A-Za-z0-9._~-]{1,128}$/;

function stringArray(v: unknown, where: string, o: { urls?: boolean; nonEmpty?: boolean } = {}): string[] {
  if (!Array.isArray(v) || !v.every((s) => typeof s === 'string' && s !== '')) fail(`${where} must be an array of non-empty strings`);
  if (o.nonEmpty && v.length === 0) fail(`${where} must name at least one`);
  if (o.urls) for (const u of v) if (!URL.canParse(u)) fail(`${where}: ${JSON.stringify(u)} is not a URL`);
  return [...(v as string[])];
}

function stringRecord(v: unknown, where: string): Record<string, string> {
  if (!isObject(v) || !Object.values(v).every((s) => typeof s === 'string')) fail(`${where} must be an object of strings`);
  return { ...(v as Record<string, string>) };
}

function parseListen(v: unknown): { host: string; port: number } {
  if (v === undefined) return { host: '127.0.0.1', port: 8710 };
  const m = typeof v === 'string' ? /^(.*):(\d{1,5})$/.exec(v) : null;
  if (!m || Number(m[2]) > 65535) fail('listen must be "host:port" (port 0 picks a free one)');
  return { host: m[1]!.replace(/^\[(.*)\]$/, '$1') || '0.0.0.0', port: Number(m[2]) };
}

function readTokenFile(file: string): string {
  let token: string;
  try {
    token = readFileSync(file, 'utf8').trim();
  } catch (e) {
    fail(`pdp.token_file: cannot read ${file}: ${(e as Error).message}`);
  }
  if (token === '') fail(`pdp.token_file: ${file} is empty`);
  return token;
}

function timeoutMs(v: unknown, dflt: number, name: string): number {
  try {
    return checkTimeoutMs(v ?? dflt, name);
  } catch (e) {
    fail((e as Error).message);
  }
}

/** The resource URI of one server (RFC 8707 audience, RFC 9728 `resource`). */
export function resourceOf(cfg: Pick<GatewayConfig, 'publicUrl'>, name: string): string {
  return `${cfg.publicUrl}/mcp/${name}`;
}

export function checkGatewayConfig(doc: unknown, o: { readFile?: (file: string) => string } = {}): GatewayConfig {
  if (!isObject(doc)) fail('the gateway config must be a JSON object');
  for (const k of Object.keys(doc)) if (!KNOWN.has(k)) fail(`unknown member ${JSON.stringify(k)}`);
  const { host, port } = parseListen(doc.listen);
  if (typeof doc.public_url !== 'string' || !URL.canParse(doc.public_url)) fail('public_url must be the URL clients reach the gateway at');
  const pub = new URL(doc.public_url);
  if (pub.protocol !== 'https:' && pub.protocol !== 'http:') fail('public_url must be http(s)');
  if (pub.search || pub.hash) fail('public_url must not carry a query or fragment');
  const publicUrl = doc.public_url.replace(/\/+$/, '');

  if (!isObject(doc.pdp) || typeof doc.pdp.url !== 'string' || typeof doc.pdp.token_file !== 'string') fail('pdp must be {"url", "token_file"}');
  if (!/^https?:\/\/[^?#]+$/.test(doc.pdp.url) || !URL.canParse(doc.pdp.url)) fail('pdp.url must be an http(s) URL without query or fragment');
  const token = o.readFile ? o.readFile(doc.pdp.token_file).trim() : readTokenFile(doc.pdp.token_file);

  if (!isObject(doc.servers) || Object.keys(doc.servers).length === 0) fail('servers must name at least one MCP server');
  const servers = new Map<string, UpstreamSpec>();
  for (const [name, s] of Object.entries(doc.servers)) {
    const where = `servers[${JSON.stringify(name)}]`;
    if (!SERVER_NAME.test(name)) fail(`${where}: a server name is 1-128 of A-Za-z0-9._~-`);
    if (!isObject(s)) fail(`${where} must be {"url", "headers"?} or {"command": [argv…], "env"?}`);
    if (s.url !== undefined && s.command !== undefined) fail(`${where} has both url and command`);
    if (typeof s.url === 'string') {
      for (const k of Object.keys(s)) if (k !== 'url' && k !== 'headers') fail(`${where}: unknown member ${JSON.stringify(k)}`);
      if (!URL.canParse(s.url) || !/^https?:$/.test(new URL(s.url).protocol)) fail(`${where}.url must be an http(s) URL`);
      servers.set(name, { kind: 'http', url: s.url, headers: s.headers === undefined ? {} : stringRecord(s.headers, `${where}.headers`) });
    } else if (s.command !== undefined) {
      for (const k of Object.keys(s)) if (k !== 'command' && k !== 'env') fail(`${where}: unknown member ${JSON.stringify(k)}`);
      const argv = stringArray(s.command, `${where}.command`, { nonEmpty: true });
      servers.set(name, {
        kind: 'stdio',
        command: argv[0]!,
        args: argv.slice(1),
        ...(s.env !== undefined ? { env: stringRecord(s.env, `${where}.env`) } : {}),
      });
    } else fail(`${where} must have a url or a command`);
  }

  // §14: each issuer needs only `issuer` (and `jwks_uri`); the audience is per server, no roles are granted.
  if (!Array.isArray(doc.jwt_issuers) || doc.jwt_issuers.length === 0) fail('jwt_issuers must name at least one issuer of client tokens');
  let issuers: JwtIssuerSpec[];
  try {
    issuers = checkJwtIssuers(doc.jwt_issuers, { verifierOnly: true });
  } catch (e) {
    if (e instanceof IssuerConfigError) fail(e.message);
    throw e;
  }
  const authorizationServers = stringArray(doc.authorization_servers, 'authorization_servers', { urls: true, nonEmpty: true });
  for (const a of authorizationServers) {
    const p = trustedUrlProblem(a);
    if (p) fail(`authorization_servers: ${a} ${p}`);
  }
  const cfg: GatewayConfig = {
    host,
    port,
    publicUrl,
    publicOrigin: pub.origin,
    pdp: { url: doc.pdp.url, token },
    issuers,
    authorizationServers,
    servers,
    callTimeoutMs: timeoutMs(doc.call_timeout_ms, 60_000, 'call_timeout_ms'),
    logFormat: 'text',
    tls: null,
    shutdownGraceMs: timeoutMs(doc.shutdown_grace_ms, 30_000, 'shutdown_grace_ms'),
  };
  if (doc.scopes_supported !== undefined) cfg.scopesSupported = stringArray(doc.scopes_supported, 'scopes_supported');
  if (doc.allowed_origins !== undefined)
    cfg.allowedOrigins = stringArray(doc.allowed_origins, 'allowed_origins').map((u) => (URL.canParse(u) ? new URL(u).origin : u));
  if (doc.defaults !== undefined) {
    try {
      cfg.defaults = parseDefaults(doc.defaults);
    } catch (e) {
      fail(`defaults: ${(e as Error).message}`);
    }
    const issue = defaultsEnvelopeIssue(cfg.defaults);
    if (issue) fail(`defaults: ${issue}`);
  }
  if (doc.log_format !== undefined) {
    if (!(LOG_FORMATS as readonly unknown[]).includes(doc.log_format)) fail(`log_format must be one of ${LOG_FORMATS.join(', ')}`);
    cfg.logFormat = doc.log_format as LogFormat;
  }
  if ((doc.tls_cert_file === undefined) !== (doc.tls_key_file === undefined)) fail('tls_cert_file and tls_key_file go together');
  if (typeof doc.tls_cert_file === 'string' && typeof doc.tls_key_file === 'string') cfg.tls = { certFile: doc.tls_cert_file, keyFile: doc.tls_key_file };
  return cfg;
}
