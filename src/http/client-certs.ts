/**
 * Client certificates (docs/protocol.md §13): with `tls_client_ca_file`, the HTTPS listener asks each
 * client for a certificate; one that chains to that CA and whose URI SAN (`spiffe://trust-domain/path`)
 * names an entry of `tls_clients` authenticates the caller as that entry. The caller is worked out once
 * per connection, at the handshake, and kept with the socket; a request reads it from there (or, when an
 * HTTP front terminated TLS, from the front's own message — never from a header, which any client could
 * send).
 */
import { createHash } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import type { Context } from 'hono';
import type { Caller } from '../identity/caller.js';
import type { RecordIdentity } from '../identity/verify.js';
import type { Role } from '../config/config.js';
import type { Delegation } from '../identity/issuers.js';
import type { Uid } from '../util/uid.js';

export interface TlsClientSpec {
  /** The URI SAN the certificate must carry, exactly (a SPIFFE id or any URI). */
  uri: string;
  role: Role;
  actor?: Uid;
  principal?: Uid;
  delegated?: Delegation;
}

/** The URI SANs of a certificate's `subjectaltname` text (`URI:spiffe://…, DNS:…`). */
export function uriSans(subjectAltName: string | undefined): string[] {
  if (!subjectAltName) return [];
  // Node quotes a value holding a comma or a quote as a JSON string: split outside quotes only.
  const out: string[] = [];
  for (const m of subjectAltName.matchAll(/(?:^|, )URI:("(?:[^"\\]|\\.)*"|[^,]*)/g)) {
    const raw = m[1]!;
    out.push(raw.startsWith('"') ? (JSON.parse(raw) as string) : raw);
  }
  return out;
}

export class ClientCertTable {
  readonly #byUri = new Map<string, Caller>();

  constructor(specs: TlsClientSpec[]) {
    for (const s of specs) {
      const identity: RecordIdentity = { method: 'mtls', sub: s.uri };
      // Named in records (§17) by a digest prefix of the certificate's URI (its identity says the rest).
      const caller: Caller = { role: s.role, identity, name: `sha256:${createHash('sha256').update(s.uri, 'utf8').digest('hex').slice(0, 16)}` };
      if (s.actor) caller.actor = s.actor;
      if (s.principal) caller.principal = s.principal;
      if (s.delegated) caller.delegated = s.delegated;
      this.#byUri.set(s.uri, caller);
    }
  }

  /** The caller of a handshake's peer: a certificate that chained to the CA and names a known URI. */
  callerOf(socket: TLSSocket): Caller | undefined {
    if (!socket.authorized) return undefined;
    const cert = socket.getPeerCertificate();
    if (!cert || Object.keys(cert).length === 0) return undefined;
    for (const uri of uriSans(cert.subjectaltname)) {
      const caller = this.#byUri.get(uri);
      if (caller !== undefined) return caller;
    }
    return undefined;
  }
}

const callersBySocket = new WeakMap<object, Caller>();

/** Remembers a connection's certificate caller (called once, at its handshake). */
export function rememberCertificateCaller(socket: TLSSocket, table: ClientCertTable): void {
  const caller = table.callerOf(socket);
  if (caller !== undefined) callersBySocket.set(socket, caller);
}

/** The certificate caller of a node socket, if its handshake authenticated one. */
export function socketCaller(socket: object | undefined): Caller | undefined {
  return socket === undefined ? undefined : callersBySocket.get(socket);
}

/** The verified certificate caller behind a request, if any. */
export function certificateCallerOf(c: Context): Caller | undefined {
  const env = c.env as { incoming?: { socket?: object } } | undefined;
  return socketCaller(env?.incoming?.socket);
}
