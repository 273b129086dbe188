/**
 * The public listener's TLS material (config `tls_cert_file` / `tls_key_file`): read once at start and
 * checked by building a secure context from it, so a missing file, a key that does not match its
 * certificate or PEM that does not parse stops the start with the file named — never a listener that
 * fails each handshake. The same material goes to every listener on the public port (the sidecar's own,
 * the HTTP fronts', a waiting replica's).
 */
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type RequestListener, type Server, type ServerOptions } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import type { TLSSocket } from 'node:tls';
import { WritError } from '../errors.js';
import { ClientCertTable, rememberCertificateCaller, type TlsClientSpec } from './client-certs.js';

export interface TlsMaterial {
  cert: string;
  key: string;
  /**
   * `tls_client_ca_file` (PEM) and `tls_clients`: clients are asked for a certificate; one that chains to
   * this CA and names a `tls_clients` URI authenticates (src/http/client-certs.ts). The handshake does not
   * fail without one: the request is then authenticated by its token, or refused 401 as any other.
   */
  clientCa?: string;
  clients?: TlsClientSpec[];
}

/** Options for `https.createServer`: the material, and no protocol older than TLS 1.2. */
function tlsServerOptions(tls: TlsMaterial): SecureContextOptions & { requestCert?: boolean; rejectUnauthorized?: boolean } {
  const options = { cert: tls.cert, key: tls.key, minVersion: 'TLSv1.2' as const };
  return tls.clientCa === undefined ? options : { ...options, ca: tls.clientCa, requestCert: true, rejectUnauthorized: false };
}

/**
 * A listener for the public port: HTTPS with the material when there is some, else plain HTTP. (An
 * `https.Server` is an `http.Server` in all that writ uses: request events, timeouts, listen, close.)
 */
export function createPublicServer(tls: TlsMaterial | undefined, options: ServerOptions, listener: RequestListener): Server {
  if (!tls) return createHttpServer(options, listener);
  const server = createHttpsServer({ ...options, ...tlsServerOptions(tls) }, listener);
  if (tls.clientCa !== undefined) {
    const table = new ClientCertTable(tls.clients ?? []);
    server.on('secureConnection', (socket: TLSSocket) => rememberCertificateCaller(socket, table));
  }
  return server;
}

export function readTlsMaterial(
  certFile: string | null,
  keyFile: string | null,
  clients?: { caFile: string | null; clients: TlsClientSpec[] },
): TlsMaterial | undefined {
  if (certFile === null && keyFile === null) return undefined;
  // loadConfig refuses half a setting; a config built in code must not slip through to plain HTTP either.
  if (certFile === null || keyFile === null) throw new WritError('INVALID_REQUEST', 'tls_cert_file and tls_key_file must be set together (or both left out)');
  const read = (what: string, file: string): string => {
    try {
      return readFileSync(file, 'utf8');
    } catch (e) {
      throw new WritError('INVALID_REQUEST', `cannot read ${what} ${file}: ${(e as Error).message}`);
    }
  };
  const tls: TlsMaterial = { cert: read('tls_cert_file', certFile), key: read('tls_key_file', keyFile) };
  if (clients?.caFile) {
    tls.clientCa = read('tls_client_ca_file', clients.caFile);
    tls.clients = clients.clients;
  }
  try {
    createSecureContext(tlsServerOptions(tls));
  } catch (e) {
    throw new WritError('INVALID_REQUEST', `cannot use tls_cert_file ${certFile} with tls_key_file ${keyFile}: ${(e as Error).message}`);
  }
  return tls;
}
