import { once } from 'node:events';
import { createServer, connect as connectTcp, type AddressInfo, type Server } from 'node:net';
import postgres from 'postgres';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { connect } from '../../src/platform/db/open-database.js';
import { silentLogger } from '../../src/platform/logger.js';

// postgres.js (patches/postgres+3.4.9.patch, item 6) sends a transaction's BEGIN with its first
// statements, not a round trip ahead of them. Seen here from the wire: a proxy in front of the
// test database keeps every chunk the client writes.

let proxy: Server;
let url: string;
const written: Buffer[] = [];

beforeAll(async () => {
  const target = new URL(inject('databaseUrl'));
  proxy = createServer((client) => {
    const server = connectTcp(Number(target.port), target.hostname);
    client.on('data', (chunk: Buffer) => {
      written.push(chunk);
      server.write(chunk);
    });
    server.pipe(client);
    client.on('error', () => server.destroy());
    server.on('error', () => client.destroy());
    client.on('close', () => server.destroy());
  });
  proxy.listen(0, '127.0.0.1');
  await once(proxy, 'listening');
  const proxied = new URL(target.href);
  proxied.port = String((proxy.address() as AddressInfo).port);
  url = proxied.href;
});

afterAll(() => {
  proxy?.close();
});

/**
 * Runs a transaction of one statement, `select n`, on a connection of its own (`pooled`: as
 * through PgBouncer); returns its answer and whether BEGIN went out in the statement's write.
 */
async function oneTransaction(n: number, pooled: boolean) {
  const sql = connect(url, { schema: 'public', max: 1, log: silentLogger, pooled });
  try {
    await sql`select 1`; // connected: the startup is not part of what is looked at
    const answer = await sql.begin(async (tx) => {
      const [row] = await tx<[{ n: number }]>`select ${sql.unsafe(String(n))}::int as n`;
      return row.n;
    });
    const carrying = written.filter((chunk) => chunk.includes(`select ${n}`));
    expect(carrying).toHaveLength(1);
    return { answer, beginWithIt: carrying[0]!.includes('begin') };
  } finally {
    await sql.end({ timeout: 1 });
  }
}

test('a transaction sends BEGIN in the same write as its first statement', async () => {
  expect(await oneTransaction(4201, false)).toEqual({ answer: 4201, beginWithIt: true });
});

test('through a pooler that takes no pipeline, BEGIN still waits for its answer', async () => {
  expect(await oneTransaction(4202, true)).toEqual({ answer: 4202, beginWithIt: false });
});

test('a pipelined transaction is still one: a failed statement rolls back the ones before it, and the connection serves the next', async () => {
  const sql = connect(url, { schema: 'public', max: 1, log: silentLogger });
  const table = `pipelined_begin_${process.pid}`;
  try {
    await sql`create table ${sql(table)} (n int)`;
    await expect(
      sql.begin(async (tx) => {
        await tx`insert into ${sql(table)} values (1)`;
        await tx`select 1 / 0`;
      }),
    ).rejects.toThrow('division by zero');
    // Its first step is not a statement: BEGIN has been answered by the time one is sent.
    await sql.begin(async (tx) => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      await tx`insert into ${sql(table)} values (2)`;
    });
    const concurrent = await Promise.all(
      [3, 4, 5].map((n) =>
        sql.begin(async (tx) => {
          await tx`insert into ${sql(table)} values (${n})`;
          // Autocommitted, the insert's transaction id would be gone by now.
          const [{ inside }] = await tx<[{ inside: boolean }]>`
            select pg_current_xact_id_if_assigned() is not null as inside`;
          return inside;
        }),
      ),
    );
    expect(concurrent).toEqual([true, true, true]);
    const rows = await sql<{ n: number }[]>`select n from ${sql(table)} order by n`;
    expect(rows.map((row) => row.n)).toEqual([2, 3, 4, 5]);
  } finally {
    await sql`drop table if exists ${sql(table)}`.catch(() => {});
    await sql.end({ timeout: 1 });
  }
});

test('a transaction whose connection cannot be made fails', async () => {
  // A port nobody listens on any more: the connection is refused.
  const gone = createServer();
  gone.listen(0, '127.0.0.1');
  await once(gone, 'listening');
  const dead = new URL(url);
  dead.port = String((gone.address() as AddressInfo).port);
  gone.close();
  await once(gone, 'close');
  const sql = postgres(dead.href, { max: 1, connect_timeout: 1, onnotice: () => {} });
  try {
    await expect(sql.begin((tx) => tx`select 1`)).rejects.toThrow(/ECONNREFUSED/);
  } finally {
    await sql.end({ timeout: 1 });
  }
});
