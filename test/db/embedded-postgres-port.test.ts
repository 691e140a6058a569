import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { expect, test } from 'vitest';
import { freePort } from '../../src/platform/db/start-embedded-postgres.js';

/** Listens on `port` of 127.0.0.1 and closes again: whether nothing else holds it. */
const free = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

// Found by a fault test run on a busy machine (server-killed.test.ts: its restarted `up` said
// "embedded PostgreSQL … did not start"): the embedded PostgreSQL's port was chosen as the kernel
// chooses one for port 0 — from the range it also gives every outgoing connection — and bound
// only once an earlier PostgreSQL was stopped, seconds later. Meanwhile any connection made on
// the machine (16 senders reconnecting, the server's own pools) could take it. A port below that
// range is never given to a connection.
test('regression: the embedded PostgreSQL could lose its port to an outgoing connection before it started', async () => {
  const range = await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8');
  const [low] = range.trim().split(/\s+/).map(Number) as [number];
  const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
  for (const port of ports) {
    expect(port).toBeGreaterThanOrEqual(1024);
    expect(port).toBeLessThan(low);
  }
  expect((await Promise.all(ports.map(free))).every(Boolean)).toBe(true);
});
