import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A free TCP port on 127.0.0.1 (for a server process started with PORT set). */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = http.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export interface LoopbackServer {
  server: http.Server;
  port: number;
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Closes the server and every connection still open to it. */
  close(): Promise<void>;
}

/** Serves `handler` (an Express app, a request listener, or a server already set up) on a free 127.0.0.1 port. */
export async function serveOnLoopback(handler: http.RequestListener | http.Server): Promise<LoopbackServer> {
  const server = handler instanceof http.Server ? handler : http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    port,
    url: `http://127.0.0.1:${port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
