import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import postgres from 'postgres';
import { afterAll, expect, inject, test } from 'vitest';

// postgres.js 3.4.9's COPY streams, as backup and restore use them, mended by
// patches/postgres+3.4.9.patch (items 9 and 10 of patches/README.md). A defect here is a wait
// for ever: each test is bounded by its timeout.
const sql = postgres(inject('databaseUrl'), { max: 2, onnotice: () => {} });
const table = `copy_${randomBytes(6).toString('hex')}`;
afterAll(async () => {
  await sql.unsafe(`drop table if exists ${table}`);
  await sql.end({ timeout: 1 });
});

test(
  'regression: a COPY FROM STDIN refused at its end (a constraint checked once its rows are in) never settled its writable, and its transaction waited for ever',
  { timeout: 15_000 },
  async () => {
    await sql.unsafe(
      `create table ${table} (id int primary key, parent int references ${table} (id))`,
    );
    const copied = sql.begin(async (tx) => {
      const copy = await tx`copy ${tx(table)} (id, parent) from stdin`.writable();
      // Row 2 names a parent that never comes: the foreign key is checked at the statement's end,
      // after every row has been sent.
      await pipeline(Readable.from(['1\t\\N\n', '2\t3\n']), copy);
    });
    await expect(copied).rejects.toMatchObject({ code: '23503' });
    // The transaction was rolled back, and its connection is free for the next statement.
    expect(await sql.unsafe(`select count(*)::int as count from ${table}`)).toEqual([{ count: 0 }]);
  },
);

test(
  'regression: a COPY TO STDOUT whose last rows came in one read with its end left the connection paused, and its next statement waited for ever',
  { timeout: 15_000 },
  async () => {
    const connection = await sql.reserve();
    try {
      await connection`select 1`;
      // More than a Readable's buffer (16 KiB), less than one socket read (64 KiB): read at once,
      // its rows overfill the stream (postgres.js pauses the socket) and the end comes with them.
      const query = connection`copy (select repeat('x', 1000) from generate_series(1, 40)) to stdout`;
      const readable = query.readable();
      await new Promise((resolve) => setImmediate(resolve));
      // Hold the event loop while PostgreSQL answers, so that the whole answer waits in one read.
      for (const until = Date.now() + 300; Date.now() < until;);
      let bytes = 0;
      for await (const chunk of (await readable) as AsyncIterable<Buffer>) bytes += chunk.length;
      expect(bytes).toBe(40 * 1001);
      expect(await connection`select 'next' as next`).toEqual([{ next: 'next' }]);
    } finally {
      connection.release();
    }
  },
);
