/**
 * Closing an HTTP server gracefully: no new connections, requests in flight finish, idle keep-alive
 * connections are closed as they become idle, and whatever is still open after `hardAfterMs` is cut.
 */
import type { Server } from 'node:http';

export function closeGracefully(server: Server, hardAfterMs = 10_000): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
    const idle = setInterval(() => server.closeIdleConnections(), 100);
    const hard = setTimeout(() => server.closeAllConnections(), hardAfterMs);
    server.once('close', () => {
      clearInterval(idle);
      clearTimeout(hard);
    });
  });
}
