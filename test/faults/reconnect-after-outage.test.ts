import { createServer, connect as connectTcp, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, inject, test } from 'vitest';
import { connect, reconnectDelaySeconds } from '../../src/platform/db/open-database.js';
import { silentLogger } from '../../src/platform/logger.js';

/** A TCP relay to the run's PostgreSQL that can be cut (as a restart or a network outage) and restored on its port. */
async function startRelay() {
  const target = new URL(inject('databaseUrl'));
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  /** What clients have sent through the relay (since the last `sent(true)`). */
  let fromClients = '';
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server = createServer((client) => {
        const upstream = connectTcp(Number(target.port), target.hostname);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('error', () => {}).on('close', () => sockets.delete(socket));
        }
        client.on('data', (chunk: Buffer) => (fromClients += chunk.toString('latin1')));
        client.pipe(upstream).pipe(client);
      });
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        const address = server!.address();
        resolve(typeof address === 'object' && address ? address.port : port);
      });
    });
  const port = await listen(0);
  const url = new URL(target);
  url.port = String(port);
  return {
    url: url.toString(),
    async cut() {
      await new Promise<void>((resolve) => {
        server!.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
    },
    restore: () => listen(port),
    /** Cut, then answer on the port without a word: connection attempts wait for their timeout. */
    async silence() {
      await this.cut();
      await new Promise<void>((resolve) => {
        server = createServer((client) => {
          sockets.add(client);
          client.on('error', () => {}).on('close', () => sockets.delete(client));
        }).listen(port, '127.0.0.1', () => resolve());
      });
    },
    sent(reset = false) {
      const sent = fromClients;
      if (reset) fromClients = '';
      return sent;
    },
    close() {
      for (const socket of sockets) socket.destroy();
      server?.close();
    },
  };
}

// Found by the PostgreSQL-restart fault test: every failed connection attempt of the pool added
// to one count that postgres.js's default backoff grows on (to 10–20 s between attempts), so
// after a few seconds of a restart under load, requests sent meanwhile waited that long before
// even trying again — long after PostgreSQL was back.
test('a pool hammered through an outage settles every request within a couple of seconds once the database is back', async () => {
  const relay = await startRelay();
  const sql = connect(relay.url, { schema: 'public', max: 10, log: silentLogger });
  try {
    await sql`select 1`;
    await relay.cut();
    // Requests keep coming while it is down, as they do on a busy server.
    let down = true;
    const hammering = Array.from({ length: 10 }, async () => {
      while (down) {
        await sql`select 1`.catch(() => {});
        await sleep(20);
      }
    });
    await sleep(1500);
    await relay.restore();
    down = false;
    const back = Date.now();
    for (;;) {
      const ok = await sql`select 1 as one`.then(
        () => true,
        () => false,
      );
      if (ok) break;
      if (Date.now() - back > 10_000)
        throw new Error('no answer within 10 s of the database coming back');
      await sleep(20);
    }
    // Neither the new request nor those sent during the outage waited long past it (with the
    // default backoff they waited 10 s and more).
    await Promise.all(hammering);
    expect(Date.now() - back).toBeLessThan(5000);
  } finally {
    await sql.end({ timeout: 1 });
    relay.close();
  }
});

test('the wait between connection attempts stays under a second however many have failed', () => {
  const delays = Array.from({ length: 200 }, (_, retries) => reconnectDelaySeconds(retries));
  expect(delays[0]).toBeLessThan(0.02);
  expect(Math.max(...delays)).toBeLessThanOrEqual(1);
  expect(Math.min(...delays.slice(10))).toBeGreaterThanOrEqual(0.5);
});

// postgres.js listens again on a new connection after losing one; through an outage each failed
// attempt listened to every channel once more, while only one LISTEN was tried and failed per
// attempt (patches/ item 8).
test('regression: LISTENs piled up while the database was away, all sent once it was back', async () => {
  const relay = await startRelay();
  const sql = connect(relay.url, { schema: 'public', max: 1, log: silentLogger });
  const channels = ['pile_a', 'pile_b', 'pile_c'];
  let listened = 0;
  try {
    for (const channel of channels)
      await sql.listen(
        channel,
        () => {},
        () => listened++,
      );
    await relay.cut();
    await sleep(3000);
    relay.sent(true);
    const before = listened;
    await relay.restore();
    await expect.poll(() => listened, { timeout: 10_000 }).toBe(before + channels.length);
    await sleep(500);
    const listens = relay.sent().match(/listen "pile_/g) ?? [];
    expect(listens).toHaveLength(channels.length);
  } finally {
    await sql.end({ timeout: 1 });
    relay.close();
  }
});

test('regression: once a lost LISTEN connection was replaced, unlisten no longer stopped its channel', async () => {
  const sql = connect(inject('databaseUrl'), { schema: 'public', max: 2, log: silentLogger });
  const heard: string[] = [];
  let listened = 0;
  try {
    const subscription = await sql.listen(
      'relisten_check',
      (payload) => heard.push(payload),
      () => listened++,
    );
    // The LISTEN connection's backend ends (a restart, a failover): postgres.js listens again.
    await sql`
      select pg_terminate_backend(pid) from pg_stat_activity
      where query = 'listen "relisten_check"' and pid <> pg_backend_pid()`;
    await expect.poll(() => listened, { timeout: 10_000 }).toBe(2);
    await sql.notify('relisten_check', 'still listened');
    await expect.poll(() => heard).toEqual(['still listened']);
    await subscription.unlisten();
    await sql.notify('relisten_check', 'after unlisten');
    await sleep(300);
    expect(heard).toEqual(['still listened']);
  } finally {
    await sql.end({ timeout: 1 });
  }
});

test("regression: unlisten waited for the database when it was away, behind the channel's own LISTEN", async () => {
  // A database that stopped answering (its host gone): every connection attempt waits for its
  // timeout. A server stopping then (SIGTERM to its container and PostgreSQL's at once) waited
  // for two of them per channel, past the 10 s after which a container is killed.
  const relay = await startRelay();
  const sql = connect(relay.url, { schema: 'public', max: 1, log: silentLogger });
  try {
    const subscription = await sql.listen('silenced', () => {});
    await relay.silence();
    await sleep(200);
    const started = Date.now();
    await subscription.unlisten();
    expect(Date.now() - started).toBeLessThan(1000);
  } finally {
    await sql.end({ timeout: 0 });
    relay.close();
  }
});
