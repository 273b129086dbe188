/**
 * The sidecar's configuration (docs/protocol.md §1): a JSON file (`--config` or WRIT_CONFIG), overridden by
 * flags; with no file, the bundled example policies, data in `.writ/`, and fresh dev tokens.
 */
import { hash, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { WritError } from '../errors.js';
import { CEDAR_TYPE_NAME, type Uid } from '../util/uid.js';
import { SIG_COSIGNATURE_V1, isKeyName, parseVkey } from '../transparency/note.js';
import * as log from '../log/log.js';
import type { LogFormat } from '../log/log.js';
import type { TlsClientSpec } from '../http/client-certs.js';
import { checkDelegation, checkJwtIssuers, IssuerConfigError, type Delegation, type JwtIssuerSpec } from '../identity/issuers.js';
import { DEFAULT_POLICY_FILE_MAX_BYTES } from '../policy/dir-files.js';
import { admissionLimitsOf, DEFAULT_ADMISSION_LIMITS, type AdmissionLimits } from '../binding/limits.js';

export type Role = 'pep' | 'approver' | 'auditor' | 'reconciler' | 'admin' | 'evaluator';
/** `evaluator`: an AuthZEN PEP (docs/protocol.md §10) that may ask about any subject; it names no actor. */
export const ROLES: readonly Role[] = ['pep', 'approver', 'auditor', 'reconciler', 'admin', 'evaluator'];

export interface TokenSpec {
  token?: string;
  token_sha256?: string;
  role: Role;
  /** pep: the workload the token authenticates (the Cedar principal). */
  actor?: Uid;
  /** approver: the person who approves. */
  principal?: Uid;
  /** pep: speaks for many users; each decision carries their `identity_token` (docs/protocol.md §13). */
  delegated?: Delegation;
  /** How records name this caller (`caller.name`, docs/protocol.md §17); by default a digest prefix of the token. */
  name?: string;
}

export interface WritConfig {
  listen: string;
  policy_dir: string;
  data_dir: string;
  tokens: TokenSpec[];
  checkpoint: { every_records: number; every_ms: number };
  approval_max_ttl_s: number;
  /** How long an execution must have been `invoking` before a reconciler may end it (docs/protocol.md §17). */
  stuck_after_s: number;
  witness_dir: string | null;
  /** How often the policy dir is checked for changes (hot reload). */
  policy_poll_ms: number;
  /**
   * 'sync' (default: each group commit made synchronously on the ledger writer's thread, fsync'd inside
   * the commit, with no hand-off to lmdb-js's writer thread) or 'flushed' (lmdb-js overlappingSync on its
   * writer thread: the commit returns first and the store awaits its flush). Both answer only after
   * fsync; 'sync' measured faster at 1 and 10 connections and no slower at 50
   * (bench/results/http-notes.md, fourth and eleventh passes).
   */
  durability: 'sync' | 'flushed';
  /**
   * How a NEW LMDB data dir holds its records and rows: 'none' (default) as plain text, 'lz4' compressed
   * against writ's dictionary (about 40 % of the disk, paid for in decisions/s: the compression runs in
   * the commit, on the ledger writer's thread). A data dir keeps the way it was made; PostgreSQL ignores it.
   */
  store_compression: 'none' | 'lz4';
  /** Testing aid, never for production: the PDP clock is read from this file (an RFC 3339 time) when set. */
  clock_file: string | null;
  /** Largest request body in bytes (413 beyond). */
  max_body_bytes: number;
  /**
   * Threads that run Cedar beside the event loop (0 = evaluate on the event loop). Default: one per
   * core beyond the first, at most 4 — the event loop itself keeps a core busy under load.
   */
  evaluator_threads: number;
  /**
   * HTTP fronts (src/front/): threads (Node ≥ 22.12: SO_REUSEPORT; a single front on any Node) or, for
   * several fronts on older Node, cluster processes that accept connections on the listen port and admit and evaluate decisions, in front of the one
   * ledger writer on the main thread. 0 = HTTP on the main thread. Default: one per core beyond the
   * first (at least 1, at most 4): the writer keeps part of a core busy, and on 2 cores one front
   * measured faster than two (bench/RESULTS.md).
   */
  http_threads: number;
  /**
   * Decisions remembered by exact Cedar-visible input (src/policy/memo.ts), least recently used out;
   * 0 disables. Emptied on a policy reload and on any entity change.
   */
  decision_memo_size: number;
  /**
   * On SIGTERM/SIGINT, how long to keep serving with `/readyz` answering 503 before the port closes: the
   * time a load balancer or Kubernetes takes to stop sending new requests. 0: close at once.
   */
  shutdown_delay_ms: number;
  /**
   * `text` (each line as `writ: …`) or `json` (one `{"ts","level","msg"}` object per line) for the
   * sidecar's operational lines (src/log/log.ts). WRIT_LOG_FORMAT=json where the config is silent.
   */
  log_format: LogFormat;
  /** PostgreSQL URL of a store shared by replicas (docs/protocol.md §9); null: the LMDB store of data_dir. */
  database_url: string | null;
  /** The deployment's signing key file (`writ keygen --out FILE`); null: `<data_dir>/signing-key.json`. */
  signing_key_file: string | null;
  /**
   * The sidecar's URL as its clients reach it (`https://pdp.example.com`, a path allowed), named by AuthZEN
   * discovery; null: the URL each request came in by (its Host header).
   */
  public_url: string | null;
  /**
   * PEM certificate chain and private key files: both set, the public listener speaks HTTPS (TLS ≥ 1.2);
   * both null, plain HTTP. Read once at start (a renewed certificate needs a restart).
   */
  tls_cert_file: string | null;
  tls_key_file: string | null;
  /** How wide a request body may be before any policy work (src/binding/limits.ts; docs/operators.md). */
  admission_limits: AdmissionLimits;
  /**
   * A caller's share of concurrent work (src/http/fairness.ts): decisions and evaluations it may have in
   * flight at once, and the body bytes they may hold together; past either, 429 RATE_LIMITED.
   */
  caller_max_in_flight: number;
  caller_max_in_flight_bytes: number;
  /** Largest policy-dir file (.cedar, schema, entities.json) read; a larger one is a rejected reload (src/policy/dir-files.ts). */
  policy_file_max_bytes: number;
  /** How long one request's policy evaluation may take on the evaluator threads before it is refused (EVALUATION_TIMEOUT). */
  evaluation_deadline_ms: number;
  /** The C2SP checkpoint origin (docs/protocol.md §16); null: `writ.local/<16 hex of the ledger's first key id>`. */
  log_origin: string | null;
  /** Serve `/ledger/tile/…` without a token (tiles are immutable and public by nature); false: auditor only. */
  public_tiles: boolean;
  /** C2SP tlog-witness witnesses each new checkpoint is submitted to: `url` is its prefix (`<url>/add-checkpoint`). */
  witnesses: WitnessSpec[];
  /** Identity providers whose JWT access tokens authenticate callers (docs/protocol.md §13). */
  jwt_issuers: JwtIssuerSpec[];
  /** PEM CA file: HTTPS clients may authenticate with a certificate it issued (§13); null: not asked. */
  tls_client_ca_file: string | null;
  /** Which certificate (by URI SAN, e.g. a SPIFFE id) is which caller. */
  tls_clients: TlsClientSpec[];
}

export interface WitnessSpec {
  url: string;
  /** The witness's cosignature vkey (type 0x04). */
  vkey: string;
}

/** The bundled example policies (`<package>/policies`); this module runs from `<package>/dist/src/config/`. */
export const BUNDLED_POLICIES = fileURLToPath(new URL('../../../policies', import.meta.url));

const MAX_TIMER_MS = 2 ** 31 - 1;

function isDirectory(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isDirectory() ?? false;
}

export const DEFAULTS: Omit<WritConfig, 'tokens'> = {
  listen: '127.0.0.1:8700',
  policy_dir: 'policies',
  data_dir: '.writ',
  checkpoint: { every_records: 1000, every_ms: 10000 },
  approval_max_ttl_s: 86400,
  stuck_after_s: 900,
  witness_dir: null,
  policy_poll_ms: 1000,
  durability: 'sync',
  store_compression: 'none',
  clock_file: null,
  max_body_bytes: 1024 * 1024,
  evaluator_threads: Math.min(Math.max(availableParallelism() - 1, 0), 4),
  http_threads: Math.min(Math.max(availableParallelism() - 1, 1), 4),
  decision_memo_size: 4096,
  shutdown_delay_ms: 0,
  log_format: 'text',
  database_url: null,
  signing_key_file: null,
  public_url: null,
  tls_cert_file: null,
  tls_key_file: null,
  log_origin: null,
  public_tiles: false,
  witnesses: [],
  jwt_issuers: [],
  tls_client_ca_file: null,
  tls_clients: [],
  admission_limits: { ...DEFAULT_ADMISSION_LIMITS },
  caller_max_in_flight: 256,
  caller_max_in_flight_bytes: 256 * 1024,
  evaluation_deadline_ms: 3000,
  policy_file_max_bytes: DEFAULT_POLICY_FILE_MAX_BYTES,
};

export interface ConfigOverrides {
  configPath?: string;
  listen?: string;
  policyDir?: string;
  dataDir?: string;
  databaseUrl?: string;
  signingKeyFile?: string;
  /**
   * `writ serve`: a named config must list its tokens, and an empty WRIT_CONFIG is refused — never run
   * in dev mode (fresh tokens printed) by mistake. Commands that call nothing (`writ keys rotate`) may
   * read a config without tokens, and take an empty WRIT_CONFIG as unset.
   */
  forServe?: boolean;
}

/** Narrows a value read from JSON to one of a list of names. */
function isOneOf<T extends string>(names: readonly T[], v: unknown): v is T {
  return (names as readonly unknown[]).includes(v);
}

function fail(message: string): never {
  throw new WritError('INVALID_REQUEST', `config: ${message}`);
}

function checkUid(v: unknown, where: string): Uid {
  const u = v as Uid;
  if (!u || typeof u !== 'object' || typeof u.type !== 'string' || typeof u.id !== 'string' || !CEDAR_TYPE_NAME.test(u.type)) {
    fail(`${where} must be {"type","id"} with a Cedar type name`);
  }
  return { type: u.type, id: u.id };
}

function checkTokens(list: unknown): TokenSpec[] {
  if (!Array.isArray(list)) fail('tokens must be an array');
  const specs = list.map((t: Record<string, unknown>, i: number): TokenSpec => {
    const where = `tokens[${i}]`;
    if (!t || typeof t !== 'object') fail(`${where} must be an object`);
    if (!isOneOf(ROLES, t.role)) fail(`${where}.role must be one of ${ROLES.join(', ')}`);
    const hasPlain = typeof t.token === 'string' && t.token.length > 0;
    const hasHash = typeof t.token_sha256 === 'string' && /^[0-9a-f]{64}$/i.test(t.token_sha256);
    if (hasPlain === hasHash) fail(`${where} needs exactly one of token or token_sha256 (64 hex)`);
    const spec: TokenSpec = { role: t.role };
    if (hasPlain) spec.token = t.token as string;
    else spec.token_sha256 = String(t.token_sha256).toLowerCase();
    if (t.role === 'pep') spec.actor = checkUid(t.actor, `${where}.actor`);
    if (t.role === 'approver') spec.principal = checkUid(t.principal, `${where}.principal`);
    if (t.delegated !== undefined) {
      if (t.role !== 'pep') fail(`${where}: only a pep token is delegated`);
      spec.delegated = checkDelegation(t.delegated, `${where}.delegated`);
    }
    if (t.name !== undefined) {
      // A name shows in every record the caller causes: visible text, no control characters, no edge spaces.
      if (typeof t.name !== 'string' || t.name.length > 128 || !/^\S(?:[^\p{Cc}]*\S)?$/u.test(t.name) || /\p{Cc}/u.test(t.name))
        fail(`${where}.name must be 1–128 characters without control characters, not starting or ending with a space`);
      spec.name = t.name;
    }
    if (t.role === 'evaluator' && t.actor !== undefined) fail(`${where}: an evaluator token names no actor (use a pep token bound to an actor)`);
    return spec;
  });
  // One secret, one caller: a token listed twice (plain or by its SHA-256) would otherwise take the
  // role of whichever entry auth happens to match first.
  const seen = new Map<string, number>();
  specs.forEach((spec, i) => {
    const digest = spec.token !== undefined ? hash('sha256', spec.token, 'hex') : spec.token_sha256!;
    const first = seen.get(digest);
    if (first !== undefined) fail(`tokens[${i}] is the same token as tokens[${first}]: give each caller a token of its own`);
    seen.set(digest, i);
  });
  return specs;
}

/** `tls_clients` (docs/protocol.md §13): one caller per certificate URI SAN. */
function checkTlsClients(list: unknown): TlsClientSpec[] {
  if (!Array.isArray(list)) fail('tls_clients must be an array');
  const seen = new Set<string>();
  return list.map((t: Record<string, unknown>, i: number): TlsClientSpec => {
    const where = `tls_clients[${i}]`;
    if (!t || typeof t !== 'object') fail(`${where} must be an object`);
    if (typeof t.uri !== 'string' || !/^[A-Za-z][A-Za-z0-9+.-]*:\S+$/.test(t.uri))
      fail(`${where}.uri must be a URI, e.g. "spiffe://example.org/ns/prod/sa/agent"`);
    if (seen.has(t.uri)) fail(`${where}.uri is listed twice`);
    seen.add(t.uri);
    if (!isOneOf(ROLES, t.role)) fail(`${where}.role must be one of ${ROLES.join(', ')}`);
    const spec: TlsClientSpec = { uri: t.uri, role: t.role };
    if (t.delegated !== undefined) {
      if (t.role !== 'pep') fail(`${where}: only a pep is delegated`);
      spec.delegated = checkDelegation(t.delegated, `${where}.delegated`);
    }
    if (t.role === 'pep') spec.actor = checkUid(t.actor, `${where}.actor`);
    if (t.role === 'approver') spec.principal = checkUid(t.principal, `${where}.principal`);
    return spec;
  });
}

/** Reads the config file (if any) and applies flag overrides; relative paths resolve against the cwd. */
/**
 * A misspelt key (`lsten`) would otherwise be silently ignored and its default used: said on stderr.
 * A warning, not a refusal, so a config written for a newer writ still starts an older one.
 */
function warnUnknownKeys(path: string, file: Record<string, unknown>): void {
  const known = new Set([...Object.keys(DEFAULTS), 'tokens']);
  const unknown = Object.keys(file).filter((k) => !known.has(k));
  const checkpoint = file.checkpoint;
  if (checkpoint && typeof checkpoint === 'object' && !Array.isArray(checkpoint)) {
    for (const k of Object.keys(checkpoint)) if (!Object.hasOwn(DEFAULTS.checkpoint, k)) unknown.push(`checkpoint.${k}`);
  }
  for (const k of unknown) {
    log.warn(`writ: config ${path}: unknown key ${JSON.stringify(k)} is ignored (known keys: ${[...known].sort().join(', ')})`);
  }
}

export function loadConfig(o: ConfigOverrides = {}): { config: WritConfig; devTokens: boolean } {
  // Named empty (`--config ""`, `WRIT_CONFIG=` from an unset shell variable) is a mistake, not "no config":
  // no config means dev mode, fresh tokens printed, which a deployment must never fall into.
  if (o.configPath === '') fail('--config is empty');
  // For `writ serve` an empty WRIT_CONFIG is refused too; elsewhere it means unset, as an empty
  // environment variable usually does (WRIT_DATABASE_URL likewise).
  if (o.forServe && o.configPath === undefined && process.env.WRIT_CONFIG === '') fail('WRIT_CONFIG is set but empty (unset it to run without a config)');
  const path = o.configPath ?? (process.env.WRIT_CONFIG || undefined);
  let file: Record<string, unknown> = {};
  if (path) {
    try {
      file = JSON.parse(readFileSync(path, 'utf8'));
    } catch (e) {
      fail(`cannot read ${path}: ${(e as Error).message}`);
    }
    if (!file || typeof file !== 'object' || Array.isArray(file)) fail(`${path} must hold a JSON object`);
    // The format first, so that what is said from here on (an unknown key, a refusal) is in it.
    if (isOneOf(log.LOG_FORMATS, file.log_format)) log.setLogFormat(file.log_format);
    warnUnknownKeys(path, file);
  }
  const config: WritConfig = {
    ...DEFAULTS,
    ...file,
    checkpoint: { ...DEFAULTS.checkpoint, ...(file.checkpoint ?? {}) },
    tokens: [],
  };
  // A flag given empty (`--database-url ""`, an unset shell variable) is a mistake, not "use the default":
  // an empty --database-url would otherwise serve from LMDB without a word.
  const flags: Array<[keyof typeof o, string]> = [
    ['listen', '--listen'],
    ['policyDir', '--policy-dir'],
    ['dataDir', '--data-dir'],
    ['databaseUrl', '--database-url'],
    ['signingKeyFile', '--signing-key-file'],
  ];
  for (const [key, flag] of flags) if (o[key] === '') fail(`${flag} is empty`);
  if (o.listen) config.listen = o.listen;
  if (o.policyDir) config.policy_dir = o.policyDir;
  if (o.dataDir) config.data_dir = o.dataDir;
  if (process.env.WRIT_DATABASE_URL) config.database_url = process.env.WRIT_DATABASE_URL;
  if (o.databaseUrl) config.database_url = o.databaseUrl;
  if (o.signingKeyFile) config.signing_key_file = o.signingKeyFile;
  if (config.database_url !== null) {
    const problem = typeof config.database_url === 'string' ? databaseUrlProblem(config.database_url) : 'not a string';
    if (problem !== undefined) fail(`database_url must be a postgres://user[:password]@host:port/db URL (${problem})`);
  }
  if (config.signing_key_file !== null && typeof config.signing_key_file !== 'string') fail('signing_key_file must be a path');
  if (config.public_url !== null) config.public_url = checkPublicUrl(config.public_url);
  checkTransparency(config);
  // Every value is checked for its type before use: a `max_body_bytes` of "x" would otherwise switch the
  // 413 limit off, a `policy_poll_ms` of 0 poll without pause, a `checkpoint` of 5 fall back unseen.
  for (const key of ['listen', 'policy_dir', 'data_dir'] as const) {
    if (typeof config[key] !== 'string' || config[key] === '') fail(`${key} must be a non-empty string`);
  }
  for (const key of ['witness_dir', 'clock_file', 'tls_cert_file', 'tls_key_file', 'tls_client_ca_file'] as const) {
    if (config[key] !== null && (typeof config[key] !== 'string' || config[key] === '')) fail(`${key} must be a path or null`);
  }
  if (file.checkpoint !== undefined && (file.checkpoint === null || typeof file.checkpoint !== 'object' || Array.isArray(file.checkpoint))) {
    fail('checkpoint must be an object {"every_records", "every_ms"}');
  }
  if (config.durability !== 'sync' && config.durability !== 'flushed') fail('durability must be "sync" or "flushed"');
  if (config.store_compression !== 'none' && config.store_compression !== 'lz4') fail('store_compression must be "none" or "lz4"');
  for (const [key, min] of [
    ['max_body_bytes', 1],
    ['policy_poll_ms', 10],
  ] as const) {
    if (!Number.isSafeInteger(config[key]) || config[key] < min) fail(`${key} must be an integer of at least ${min}`);
  }
  // Node's timers take at most 2^31−1 ms (~24.8 days) and quietly fire after 1 ms beyond it: a poll or
  // checkpoint interval meant as "rarely" would run without pause.
  if (config.policy_poll_ms > MAX_TIMER_MS) fail(`policy_poll_ms must be at most ${MAX_TIMER_MS} (Node's longest timer)`);
  if (config.signing_key_file) config.signing_key_file = resolve(config.signing_key_file);
  // Unnamed, the policy dir is `./policies` when there is one (where `writ policy validate/test` look too),
  // else the example bundled with writ itself, wherever writ is run from.
  const unnamed = file.policy_dir === undefined && !o.policyDir;
  config.policy_dir = unnamed && !isDirectory(resolve(DEFAULTS.policy_dir)) ? BUNDLED_POLICIES : resolve(config.policy_dir);
  config.data_dir = resolve(config.data_dir);
  if (config.witness_dir) config.witness_dir = resolve(config.witness_dir);
  if (config.clock_file) config.clock_file = resolve(config.clock_file);
  // Half a TLS setting would serve plain HTTP to clients told to expect HTTPS, or the reverse.
  if ((config.tls_cert_file === null) !== (config.tls_key_file === null)) fail('tls_cert_file and tls_key_file must be set together (or both left out)');
  if (config.tls_cert_file) config.tls_cert_file = resolve(config.tls_cert_file);
  if (config.tls_key_file) config.tls_key_file = resolve(config.tls_key_file);
  if (config.tls_client_ca_file !== null && config.tls_cert_file === null) fail('tls_client_ca_file needs HTTPS: set tls_cert_file and tls_key_file too');
  if (config.tls_client_ca_file) config.tls_client_ca_file = resolve(config.tls_client_ca_file);
  config.tls_clients = checkTlsClients(config.tls_clients);
  parseListen(config.listen);
  try {
    config.jwt_issuers = checkJwtIssuers(config.jwt_issuers);
  } catch (e) {
    if (e instanceof IssuerConfigError) fail(e.message);
    throw e;
  }
  for (const [k, v] of [
    ['checkpoint.every_records', config.checkpoint.every_records],
    ['checkpoint.every_ms', config.checkpoint.every_ms],
    ['approval_max_ttl_s', config.approval_max_ttl_s],
    ['stuck_after_s', config.stuck_after_s],
  ] as const) {
    if (!Number.isInteger(v) || v <= 0) fail(`${k} must be a positive integer`);
  }
  if (config.checkpoint.every_ms > MAX_TIMER_MS) fail(`checkpoint.every_ms must be at most ${MAX_TIMER_MS} (Node's longest timer)`);
  if (!Number.isInteger(config.evaluator_threads) || config.evaluator_threads < 0 || config.evaluator_threads > 64) {
    fail('evaluator_threads must be an integer from 0 to 64');
  }
  if (!Number.isInteger(config.http_threads) || config.http_threads < 0 || config.http_threads > 64) {
    fail('http_threads must be an integer from 0 to 64');
  }
  // WRIT_LOG_FORMAT=json holds where the config is silent (it also covers what is said before a config is read).
  if (file.log_format === undefined && process.env.WRIT_LOG_FORMAT === 'json') config.log_format = 'json';
  if (!log.LOG_FORMATS.includes(config.log_format)) fail(`log_format must be one of ${log.LOG_FORMATS.map((f) => JSON.stringify(f)).join(', ')}`);
  if (!Number.isInteger(config.shutdown_delay_ms) || config.shutdown_delay_ms < 0 || config.shutdown_delay_ms > 600_000) {
    fail('shutdown_delay_ms must be an integer from 0 to 600000');
  }
  if (!Number.isInteger(config.decision_memo_size) || config.decision_memo_size < 0 || config.decision_memo_size > 1_000_000) {
    fail('decision_memo_size must be an integer from 0 to 1000000');
  }
  const limits = admissionLimitsOf(file.admission_limits);
  if (typeof limits === 'string') fail(limits);
  config.admission_limits = limits;
  for (const [key, min, max] of [
    ['caller_max_in_flight', 1, 1_000_000],
    ['caller_max_in_flight_bytes', 1, 2 ** 40],
    ['evaluation_deadline_ms', 1, MAX_TIMER_MS],
    ['policy_file_max_bytes', 1, 2 ** 40],
  ] as const) {
    if (!Number.isSafeInteger(config[key]) || config[key] < min || config[key] > max) fail(`${key} must be an integer from ${min} to ${max}`);
  }
  // Dev tokens only when no config is named at all: a config without `tokens` (left out, or misspelt
  // `token`) is refused for `writ serve` (o.forServe) rather than served in dev mode with fresh tokens
  // printed.
  const devTokens = !path;
  if (path && file.tokens === undefined && o.forServe && !(Array.isArray(file.jwt_issuers) && file.jwt_issuers.length > 0))
    fail(`${path} has no "tokens": list who may call writ (fresh dev tokens are made only when serve runs with no config)`);
  config.tokens = devTokens || file.tokens === undefined ? [] : checkTokens(file.tokens);
  return { config, devTokens };
}

/** `log_origin`, `public_tiles` and `witnesses` (docs/protocol.md §16). */
function checkTransparency(config: WritConfig): void {
  if (config.log_origin !== null && (typeof config.log_origin !== 'string' || !isKeyName(config.log_origin))) {
    fail('log_origin must be a non-empty string without spaces or "+" (it is the checkpoint origin and the log key name), e.g. "pdp.example.com/ledger"');
  }
  if (typeof config.public_tiles !== 'boolean') fail('public_tiles must be true or false');
  if (!Array.isArray(config.witnesses)) fail('witnesses must be an array of {"url", "vkey"}');
  const seen = new Set<string>();
  config.witnesses = (config.witnesses as unknown[] as Record<string, unknown>[]).map((w, i) => {
    const where = `witnesses[${i}]`;
    if (!w || typeof w !== 'object' || Array.isArray(w)) fail(`${where} must be {"url", "vkey"}`);
    for (const k of Object.keys(w)) if (k !== 'url' && k !== 'vkey') fail(`${where}: unknown key ${JSON.stringify(k)}`);
    let url: URL | undefined;
    try {
      url = typeof w.url === 'string' ? new URL(w.url) : undefined;
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.search || url.hash)
      fail(`${where}.url must be the witness's http(s) prefix (it posts to <url>/add-checkpoint)`);
    let vkey;
    try {
      vkey = parseVkey(String(w.vkey));
    } catch (e) {
      fail(`${where}.vkey: ${(e as Error).message}`);
    }
    if (vkey.type !== SIG_COSIGNATURE_V1) fail(`${where}.vkey must be a cosignature vkey (type 0x04, 'writ witness keygen' prints one)`);
    if (seen.has(vkey.vkey)) fail(`${where} names the same witness key twice`);
    seen.add(vkey.vkey);
    return { url: url.href.replace(/\/+$/, ''), vkey: vkey.vkey };
  });
}

/** An http(s) URL with no credentials, query or fragment, without its trailing slash; else a config error. */
function checkPublicUrl(value: unknown): string {
  let url: URL | undefined;
  try {
    url = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password || url.search || url.hash || /[?#]/.test(String(value))) {
    fail('public_url must be an http(s) URL without credentials, query or fragment, e.g. "https://pdp.example.com"');
  }
  return url.href.replace(/\/+$/, '');
}

export function parseListen(listen: string): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(listen);
  if (!m || Number(m[2]) > 65535) fail(`listen must be HOST:PORT, got ${JSON.stringify(listen)}`);
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) };
}

/** Dev tokens for `writ serve` with no config: one per role, fresh on every start, written to tokens.json. */
export function generateDevTokens(dataDir: string): { specs: TokenSpec[]; file: string; byRole: Record<string, string> } {
  const fresh = (role: string) => `dev-${role}-${randomBytes(12).toString('hex')}`;
  const byRole: Record<string, string> = {
    pep: fresh('pep'),
    approver: fresh('approver'),
    auditor: fresh('auditor'),
    reconciler: fresh('reconciler'),
    admin: fresh('admin'),
    evaluator: fresh('evaluator'),
  };
  const specs: TokenSpec[] = [
    { token: byRole.pep!, role: 'pep', actor: { type: 'Agent', id: 'offboarding-agent-prod' } },
    { token: byRole.approver!, role: 'approver', principal: { type: 'User', id: 'hr-5519' } },
    { token: byRole.auditor!, role: 'auditor' },
    { token: byRole.reconciler!, role: 'reconciler' },
    { token: byRole.admin!, role: 'admin' },
    { token: byRole.evaluator!, role: 'evaluator' },
  ];
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, 'tokens.json');
  writeFileSync(file, `${JSON.stringify({ ...byRole, tokens: specs }, null, 2)}\n`, { mode: 0o600 });
  // `mode` applies only to a file it creates: a tokens.json left from before keeps its own, maybe loose.
  chmodSync(file, 0o600);
  return { specs, file, byRole };
}

/**
 * Why a database URL cannot be used, or undefined. Never quotes the URL: it may hold a password, and
 * these messages end up in logs. The driver parses the URL as WHATWG does, so a URL it cannot parse (a
 * port past 65535, a bad host) is refused here, as a usage error, rather than as an unreachable database.
 */
export function databaseUrlProblem(url: string): string | undefined {
  if (!/^postgres(ql)?:\/\/./.test(url)) {
    const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(url);
    return scheme ? `its scheme is ${scheme[1]}:` : 'it has no scheme';
  }
  try {
    new URL(url);
  } catch {
    return 'it cannot be parsed: check its host and port (1–65535)';
  }
  return undefined;
}
