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
