import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { takeRing } from '../../src/wakes/take-ring.js';
import { createTodo } from '../../src/data/index.js';
import { createCast, type Cast } from '../support/principals.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let db: TestDatabase;
let cast: Cast;

beforeAll(async () => {
  db = await createTestDatabase();
  cast = await createCast(db.sql);
});
afterAll(() => db.drop());

const request = (todoId: number, wake: string) => ({
  todoId,
  reason: { wake },
  schedule: [60_000],
  sessionTtlMs: 60_000,
});

// takeRing took the ring in one statement and committed it before a second statement waited for
// the busy session to pick: when that wait failed (PostgreSQL restarted under load, in
// test/faults/postgres-restarted.test.ts), the ring stayed taken for a wake nobody heard — not
// rung again for the same wake, not caught up as never rung, only re-rung a schedule later.
test('a ring whose wait for a busy session is cut off is not taken: the wake is rung again', async () => {
  const session = randomUUID();
  await db.sql`
    with process as (insert into consumer_processes (id) values (gen_random_uuid()) returning id)
    insert into consumer_sessions (id, principal, process_id, path)
    select ${session}, 'bot', id, 'channel' from process`;
  const { todo } = await createTodo(db.sql, cast.bob, {
    queue: 'reviews',
    title: 'x',
    source: 'cli',
  });
  const wake = randomUUID();

  // The bot's only session is being rung for another todo: its row is locked.
  const other = db.connect(1);
  const held = await other.reserve();
  await held`begin`;
  await held`select 1 from consumer_sessions where id = ${session} for update`;
  const [{ holder }] = await held<[{ holder: number }]>`select pg_backend_pid() as holder`;
  try {
    // A pool of its own: its connection is the one cut.
    const ringer = db.connect(1);
    const ringing = takeRing(ringer, request(todo.id, wake)).finally(() => ringer.end());
    const outcome = ringing.then(
      () => 'rang',
      (error: unknown) => error,
    );
    // Its wait for the session (and only it: other files share this PostgreSQL), cut off as a
    // restart of PostgreSQL would.
    await expect
      .poll(
        async () =>
          (
            await db.sql`
              select pg_terminate_backend(pid) as cut from pg_stat_activity
              where ${holder}::int = any(pg_blocking_pids(pid))`
          ).length,
      )
      .toBe(1);
    expect(await outcome).toBeInstanceOf(Error);
  } finally {
    await held`rollback`;
    held.release();
    await other.end();
  }

  expect(await db.sql`select 1 from todo_rings where todo_id = ${todo.id}`).toEqual([]);
  const again = await takeRing(db.sql, request(todo.id, wake));
  expect(again?.target).toMatchObject({ kind: 'session', session_id: session });
});
