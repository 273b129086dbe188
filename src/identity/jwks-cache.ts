/**
 * The issuers' signing keys, fetched and kept (docs/protocol.md §13). The one place writ reaches an
 * identity provider:
 * - where the keys are: `jwks_uri`, else discovery (`<issuer>/.well-known/openid-configuration`, then
 *   RFC 8414's `/.well-known/oauth-authorization-server`), whose `issuer` must be the configured one;
 * - a fetch (discovery or keys) is attempted at most once per REFETCH_MS per issuer, whatever the
 *   number of requests naming an unknown `kid` — a flood of forged `kid`s cannot turn writ into a load
 *   generator against the IdP — and concurrent misses share one fetch;
 * - keys once had are kept when a later fetch fails: an unreachable IdP does not stop tokens signed with
 *   keys writ already holds.
 * Key selection and JWK import are jose's (createLocalJWKSet); symmetric keys are dropped on arrival, so
 * no HMAC key ever reaches verification even if an algorithm check were bypassed.
 */
import { createLocalJWKSet, type JSONWebKeySet } from 'jose';
import { trustedUrlProblem } from './issuers.js';

/** Least time between two fetches for one issuer. */
export const REFETCH_MS = 30_000;
/** A fetch that has not answered by then has failed. */
const FETCH_TIMEOUT_MS = 5_000;
/** Largest discovery or JWKS document read. */
const MAX_DOCUMENT_BYTES = 512 * 1024;

export type KeyLookup = ReturnType<typeof createLocalJWKSet>;
export type JwksFetch = (url: string) => Promise<unknown>;

export interface JwksCacheOptions {
  /** ms clock (tests move it to pass the refetch interval without waiting). */
  now?: () => number;
  /** Reads a JSON document (tests may count what is read). Default: fetch, https or loopback only. */
  fetchJson?: JwksFetch;
  /** Told of each fetch round's end (the sidecar counts them in /metrics). */
  onFetch?: (issuer: string, ok: boolean, problem?: string) => void;
}

/** Why an issuer's keys could not be had (the verifier answers 503 IDENTITY_UNAVAILABLE when none is held). */
export class KeysUnavailable extends Error {}

/** Where a verifier gets an issuer's keys: a JwksCache here, or one on another thread (RelayedKeys). */
export interface KeySource {
  lookupFor(issuer: string, kid: string): Promise<KeyLookup | undefined>;
}

interface IssuerState {
  issuer: string;
  jwksUri?: string;
  keys?: KeyLookup;
  /** The asymmetric keys held, as the issuer served them (public keys only). */
  jwks?: JSONWebKeySet;
  /** kids of the keys held, for "unknown kid" without asking jose. */
  kids: Set<string>;
  lastAttempt?: number;
  pending?: Promise<void>;
  lastError?: string;
  fetches: number;
}

export class JwksCache implements KeySource {
  readonly #states = new Map<string, IssuerState>();
  readonly #now: () => number;
  readonly #fetchJson: JwksFetch;
  readonly #onFetch: (issuer: string, ok: boolean, problem?: string) => void;

  constructor(issuers: Array<{ issuer: string; jwks_uri?: string }>, o: JwksCacheOptions = {}) {
    this.#now = o.now ?? Date.now;
    this.#fetchJson = o.fetchJson ?? fetchJsonDocument;
    this.#onFetch = o.onFetch ?? (() => undefined);
    for (const i of issuers) this.#states.set(i.issuer, { issuer: i.issuer, ...(i.jwks_uri ? { jwksUri: i.jwks_uri } : {}), kids: new Set(), fetches: 0 });
  }

  /** How many fetch rounds (discovery and keys) were started for an issuer: for tests and /metrics. */
  fetchesOf(issuer: string): number {
    return this.#states.get(issuer)?.fetches ?? 0;
  }

  /**
   * The key lookup for a token's header: the held keys when they name its `kid`, else after one fetch
   * if one is allowed now. Throws KeysUnavailable when no key was ever had; returns undefined when keys
   * are held but none names the kid (the verifier says so).
   */
  async lookupFor(issuer: string, kid: string): Promise<KeyLookup | undefined> {
    const s = this.#states.get(issuer);
    if (!s) throw new KeysUnavailable(`issuer ${issuer} is not configured`);
    if (s.keys && s.kids.has(kid)) return s.keys;
    await this.#refresh(s);
    if (!s.keys) throw new KeysUnavailable(`the keys of ${issuer} cannot be had${s.lastError ? ` (${s.lastError})` : ''}`);
    return s.kids.has(kid) ? s.keys : undefined;
  }

  /**
   * The keys held for an issuer once `kid` was looked up (fetching again if allowed), for a verifier on
   * another thread (the HTTP fronts): one cache, so one fetch budget per issuer for the whole process.
   */
  async keySetFor(issuer: string, kid: string): Promise<JSONWebKeySet> {
    await this.lookupFor(issuer, kid);
    return this.#states.get(issuer)!.jwks!;
  }

  /** One fetch round unless one ran within REFETCH_MS (or is running: then its result is awaited). */
  #refresh(s: IssuerState): Promise<void> {
    if (s.pending) return s.pending;
    const now = this.#now();
    if (s.lastAttempt !== undefined && now - s.lastAttempt < REFETCH_MS) return Promise.resolve();
    s.lastAttempt = now;
    s.fetches++;
    s.pending = this.#fetchKeys(s)
      .then(
        (jwks) => {
          const held = heldKeys(jwks);
          s.jwks = held.jwks;
          s.keys = held.keys;
          s.kids = held.kids;
          delete s.lastError;
          this.#onFetch(s.issuer, true);
        },
        (e: unknown) => {
          // Keys held stay in use: an unreachable IdP must not stop tokens signed with known keys.
          s.lastError = (e as Error).message;
          this.#onFetch(s.issuer, false, s.lastError);
        },
      )
      .finally(() => {
        delete s.pending;
      });
    return s.pending;
  }

  async #fetchKeys(s: IssuerState): Promise<JSONWebKeySet> {
    if (!s.jwksUri) s.jwksUri = await this.#discover(s.issuer);
    const jwks = (await this.#fetchJson(s.jwksUri)) as JSONWebKeySet;
    if (!jwks || typeof jwks !== 'object' || !Array.isArray(jwks.keys)) throw new Error(`${s.jwksUri} is not a JWK set`);
    return jwks;
  }

  async #discover(issuer: string): Promise<string> {
    const base = issuer.replace(/\/+$/, '');
    const u = new URL(issuer);
    const path = u.pathname.replace(/\/+$/, '');
    const candidates = [`${base}/.well-known/openid-configuration`, `${u.origin}/.well-known/oauth-authorization-server${path}`];
    let lastError: unknown;
    for (const url of candidates) {
      let doc: Record<string, unknown>;
      try {
        doc = (await this.#fetchJson(url)) as Record<string, unknown>;
      } catch (e) {
        lastError = e;
        continue;
      }
      // OpenID Discovery §4.3 / RFC 8414 §3.3: a document for another issuer is not this issuer's.
      if (!doc || typeof doc !== 'object' || doc.issuer !== issuer) throw new Error(`${url} names issuer ${JSON.stringify(doc?.issuer)}, not ${issuer}`);
      const jwksUri = doc.jwks_uri;
      if (typeof jwksUri !== 'string') throw new Error(`${url} names no jwks_uri`);
      const problem = trustedUrlProblem(jwksUri);
      if (problem) throw new Error(`${url}: its jwks_uri ${problem}`);
      return jwksUri;
    }
    throw new Error(`discovery failed: ${(lastError as Error)?.message ?? 'no document'}`);
  }
}

/**
 * Keys held on another thread (an HTTP front's view of the sidecar's JwksCache): an unknown kid is asked
 * for there, where fetches are rate-limited for the whole process; the answer is kept here.
 */
export class RelayedKeys implements KeySource {
  readonly #held = new Map<string, { keys: KeyLookup; kids: Set<string> }>();

  /** `ask` answers the issuer's key set after looking `kid` up, or rejects with KeysUnavailable's message. */
  constructor(private readonly ask: (issuer: string, kid: string) => Promise<JSONWebKeySet>) {}

  async lookupFor(issuer: string, kid: string): Promise<KeyLookup | undefined> {
    const held = this.#held.get(issuer);
    if (held?.kids.has(kid)) return held.keys;
    let jwks: JSONWebKeySet;
    try {
      jwks = await this.ask(issuer, kid);
    } catch (e) {
      if (held) return undefined;
      throw new KeysUnavailable((e as Error).message);
    }
    const next = heldKeys(jwks);
    this.#held.set(issuer, next);
    return next.kids.has(kid) ? next.keys : undefined;
  }
}

/** A served key set as writ holds it: asymmetric keys only (an `oct` key must never verify anything), by kid. */
function heldKeys(served: JSONWebKeySet): { jwks: JSONWebKeySet; keys: KeyLookup; kids: Set<string> } {
  const jwks = { keys: served.keys.filter((k) => k && typeof k === 'object' && k.kty !== 'oct') };
  return { jwks, keys: createLocalJWKSet(jwks), kids: new Set(jwks.keys.map((k) => k.kid).filter((k): k is string => typeof k === 'string')) };
}

/** GET a JSON document: https or loopback http only, no redirects, bounded in time and size. */
async function fetchJsonDocument(url: string): Promise<unknown> {
  const problem = trustedUrlProblem(url);
  if (problem) throw new Error(`${url} ${problem}`);
  let res: Response;
  try {
    res = await fetch(url, {
      redirect: 'error',
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
      headers: { accept: 'application/json, application/jwk-set+json' },
    });
  } catch (e) {
    // undici says only "fetch failed": the cause (ECONNREFUSED, a certificate error, the timeout) is what an operator needs.
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`${url}: ${cause?.code ?? cause?.message ?? (e as Error).message}`, { cause: e });
  }
  if (!res.ok) throw new Error(`${url} answered ${res.status}`);
  const text = await res.text();
  if (text.length > MAX_DOCUMENT_BYTES) throw new Error(`${url} is larger than ${MAX_DOCUMENT_BYTES} bytes`);
  return JSON.parse(text);
}
