import { createServer } from 'node:net';

/**
 * Throws the error `listen` would (EADDRINUSE, EACCES, EADDRNOTAVAIL) when the server could not
 * take `port` on `host`: checked before the database starts, so that a first start on a taken
 * port says so at once, not after initdb and the migrations. Port 0 is any free port: no check.
 */
export async function assertPortFree(port: number, host: string): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ port, host, exclusive: true }, () => resolve());
  });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}
