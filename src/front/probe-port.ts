/** A port check both the HTTP fronts (src/front/fronts.ts) and a waiting replica (src/server/waiting.ts) make before they share a port. */
import { createServer } from 'node:net';

/**
 * Binds the public address once without SO_REUSEPORT, so a port held by anyone else (another sidecar
 * included) fails here with EADDRINUSE instead of being silently shared, and port 0 resolves to a port.
 */
export function probePort(host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen({ host, port, exclusive: true }, () => {
      const addr = probe.address();
      const bound = typeof addr === 'object' && addr ? addr.port : port;
      probe.close(() => resolve(bound));
    });
  });
}
