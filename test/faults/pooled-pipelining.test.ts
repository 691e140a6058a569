import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { connect } from '../../src/platform/db/open-database.js';
import { silentLogger } from '../../src/platform/logger.js';
import { requireTool } from '../support/require-tool.js';
import { findPgBouncer, startPgBouncer, type PgBouncer } from '../support/start-pgbouncer.js';

requireTool('pgbouncer', findPgBouncer() !== undefined, 'apt-get install -y pgbouncer');

let bouncer: PgBouncer;
let admin: postgres.Sql;
let database: string | undefined;

beforeAll(async () => {
  const runUrl = new URL(inject('databaseUrl'));
  admin = postgres(runUrl.href, { max: 1, onnotice: () => {} });
  database = `sb_pipelining_${randomBytes(4).toString('hex')}`;
  await admin.unsafe(`create database ${database}`);
  // One server connection for every client: each transaction of one may land where another's was.
  bouncer = await startPgBouncer({
    serverUrl: runUrl.href,
    databases: { app: database },
    poolSize: 1,
  });
});

afterAll(async () => {
  await bouncer?.stop();
  if (database) await admin.unsafe(`drop database if exists ${database} with (force)`);
  await admin?.end({ timeout: 1 });
});

test('regression: through PgBouncer in transaction mode, a query sent behind another on one connection gets its own answer', async () => {
  // postgres.js sends a query with parameters as Parse/Describe/Flush, then Bind/Execute/Sync
  // once it has the parameters' types. Sent behind another query on the same connection, its
  // first half followed that query's Sync: PgBouncer 1.18 handed the server connection to
  // another client at that Sync's ReadyForQuery, and the two clients' answers crossed — one
  // got the other's parameter types ("Invalid time value"), or waited for ever.
  const clients = Array.from({ length: 4 }, () =>
    connect(bouncer.url('app'), { schema: 'public', max: 1, log: silentLogger, pooled: true }),
  );
  try {
    const wrong: string[] = [];
    await Promise.all(
      clients.map(async (sql, c) => {
        for (let round = 0; round < 100; round++) {
          const n = c * 1000 + round;
          const [plain, typed, stamped, inside] = await Promise.all([
            sql<[{ one: number }]>`select 1 as one`,
            sql<[{ n: number }]>`select ${n}::int as n`,
            sql<
              [{ at: Date }]
            >`select ${new Date(0)}::timestamptz as at, ${String(n)}::text as tag`,
            // A transaction keeps its connection to itself, one statement at a time.
            sql.begin(async (tx) => {
              const [first] = await tx<[{ n: number }]>`select ${n}::int as n`;
              const [second] = await tx<[{ n: number }]>`select ${first.n + 1}::int as n`;
              return second.n;
            }),
          ]);
          if (
            plain[0].one !== 1 ||
            typed[0].n !== n ||
            stamped[0].at.getTime() !== 0 ||
            inside !== n + 1
          ) {
            wrong.push(`client ${c} round ${round}`);
          }
        }
      }),
    );
    expect(wrong).toEqual([]);
  } finally {
    await Promise.all(clients.map((sql) => sql.end({ timeout: 1 })));
  }
});
