import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, WEBHOOK_SECRET, type TestServer } from '../support/test-server.js';
import { deliver, readFixture, storedFor } from './deliver.js';
import { isolateFromGitHub } from './github-app.js';

const INGEST_TIMEOUT_MS = 800;

// The server logs through a real pino, into memory, so that what reaches the log can be checked.
const lines: string[] = [];
const log = pino(
  { level: 'debug' },
  new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  }),
);

let server: TestServer;
beforeAll(async () => {
  isolateFromGitHub();
  server = await startTestServer({ log, githubTuning: { ingestTimeoutMs: INGEST_TIMEOUT_MS } });
});
afterAll(() => server.stop());

const stored = (id: string) => storedFor(server.sql, id);

test('a write that fails after the todo was made: 500, a clean message, nothing kept', async () => {
  // The delivery's row, written with its todo in one statement, is made to fail: the todo, in
  // already, must go with it.
  await server.sql`
    alter table deliveries add constraint test_refuses_todos check (todo_id is null)`;
  let sent;
  try {
    sent = await deliver(server.url, 'issue_comment.created.command');
  } finally {
    await server.sql`alter table deliveries drop constraint test_refuses_todos`;
  }
  expect(sent.status).toBe(500);
  expect(JSON.parse(sent.body)).toEqual({
    error:
      'the delivery could not be recorded; nothing was stored, so redeliver it later (the server log has the details)',
    code: 'not_recorded',
  });
  expect(await stored(sent.id)).toEqual({ deliveries: 0, todos: 0 });

  // Nothing was acknowledged, so GitHub's redelivery is the first the ledger knows of it.
  const again = await deliver(server.url, 'issue_comment.created.command', { id: sent.id });
  expect(again.status).toBe(200);
  expect(await stored(sent.id)).toEqual({ deliveries: 1, todos: 1 });
});

test('a missing table: 500 with the same clean sentence', async () => {
  await server.sql`alter table deliveries rename to deliveries_away`;
  let sent;
  try {
    sent = await deliver(server.url, 'ping');
  } finally {
    await server.sql`alter table deliveries_away rename to deliveries`;
  }
  expect(sent.status).toBe(500);
  expect(JSON.parse(sent.body).error).toMatch(/^the delivery could not be recorded;/);
  expect(JSON.parse(sent.body).error).not.toMatch(/relation|deliveries|select|insert/i);
});

test('a database that does not answer in time: 503 before GitHub would be told 202', async () => {
  const blocker = server.sql.reserve();
  const held = await blocker;
  await held`begin`;
  await held`lock table todos in access exclusive mode`;
  let sent;
  const started = performance.now();
  try {
    sent = await deliver(server.url, 'issue_comment.created.command');
  } finally {
    await held`rollback`;
    held.release();
  }
  const elapsed = performance.now() - started;
  expect(sent.status).toBe(503);
  expect(JSON.parse(sent.body)).toMatchObject({
    error: expect.stringMatching(/^the delivery was not recorded in time/),
    code: 'not_recorded',
  });
  expect(elapsed).toBeGreaterThanOrEqual(INGEST_TIMEOUT_MS - 50);
  expect(elapsed).toBeLessThan(INGEST_TIMEOUT_MS + 2000);
  // The transaction gave up too: nothing commits once the lock is gone.
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(await stored(sent.id)).toEqual({ deliveries: 0, todos: 0 });
  const [{ n }] = await server.sql<[{ n: number }]>`
    select count(*)::int as n from deliveries where disposition = 'created'`;
  expect(n).toBe(1);
});

test('regression: a delivery held up by a lock kept its connection waiting past its deadline (the statement timeout was sent after the statement it was for)', async () => {
  const held = await server.sql.reserve();
  try {
    await held`begin`;
    await held`lock table todos in access exclusive mode`;
    const [{ holder }] = await held<[{ holder: number }]>`select pg_backend_pid() as holder`;
    const sent = await deliver(server.url, 'issue_comment.created.command');
    expect(sent.status).toBe(503);
    // Answered 503 at its deadline; the database gives up on it then too, with the lock still
    // held, rather than keep one of the server's connections waiting behind it. (The server's
    // background sweeps wait behind the lock too, as they may: only the delivery's statement counts.)
    const waiting = async () => {
      const [{ n }] = await server.sql<[{ n: number }]>`
        select count(*)::int as n from pg_stat_activity
        where ${holder}::int = any (pg_blocking_pids(pid)) and query like '%with earlier as%'`;
      return n;
    };
    const until = performance.now() + 2000;
    let blocked = await waiting();
    while (blocked > 0 && performance.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      blocked = await waiting();
    }
    expect(blocked).toBe(0);
  } finally {
    await held`rollback`;
    held.release();
  }
});

test('failures are logged without the payload, the signature or the secret', async () => {
  const payload = await readFixture('issue_comment.created.command');
  await deliver(server.url, 'issue_comment.created.command', { secret: 'a-wrong-secret' });
  const written = lines.join('');
  expect(written).toContain('github delivery not recorded');
  expect(written).toMatch(/signature does not match/);
  expect(written).not.toContain('fix the typo');
  expect(written).not.toContain(WEBHOOK_SECRET);
  expect(written).not.toContain('sha256=');
  expect(written).not.toContain(JSON.parse(payload).comment.node_id);
});
