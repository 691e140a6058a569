import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type postgres from 'postgres';
import { afterAll, beforeAll, beforeEach, expect, test } from 'vitest';
import { takeRing, type Ring } from '../../src/wakes/take-ring.js';
import { createTodo } from '../../src/data/index.js';
import { createCast, type Cast } from '../support/principals.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let db: TestDatabase;
let cast: Cast;
/** The bot's two sessions: `first` is the least recently rung. */
let first: string;
let second: string;

beforeAll(async () => {
  db = await createTestDatabase();
  cast = await createCast(db.sql);
});
afterAll(() => db.drop());

beforeEach(async () => {
  await db.sql`delete from consumer_processes`;
  [first, second] = [randomUUID(), randomUUID()];
  await db.sql`
    with process as (insert into consumer_processes (id) values (gen_random_uuid()) returning id)
    insert into consumer_sessions (id, principal, process_id, path, last_rung_at)
    select session, 'bot', process.id, 'channel', rung_at
    from process, (values (${first}::uuid, null::timestamptz),
                          (${second}::uuid, now() - interval '1 minute')) as s(session, rung_at)`;
});

const newTodo = async () =>
  (await createTodo(db.sql, cast.bob, { queue: 'reviews', title: 'x', source: 'cli' })).todo.id;

/** One server process's ring, on a connection of its own. */
const ringFromAProcess = (todoId: number, wake: string) => {
  const sql = db.connect(1);
  const request = { todoId, reason: { wake }, schedule: [60_000], sessionTtlMs: 60_000 };
  return takeRing(sql, request).finally(() => sql.end());
};

/** What a ring came to within a second: null, its session, or 'still waiting'. */
const within = async (ringing: Promise<Ring | null>) => {
  const ring = await Promise.race([ringing, sleep(1000).then(() => 'still waiting' as const)]);
  if (ring === null || ring === 'still waiting') return ring;
  return ring.target?.kind === 'session' ? ring.target.session_id : ring.target;
};

/** Holds `lock` on a todo's ring in a transaction of another connection, until released. */
async function holdingTheRing(lock: (tx: postgres.ReservedSql) => Promise<unknown>) {
  const other = db.connect(1);
  const held = await other.reserve();
  await held`begin`;
  await lock(held);
  const [{ holder }] = await held<[{ holder: number }]>`select pg_backend_pid() as holder`;
  /** The connections waiting for it. */
  const waiting = async () =>
    (
      await db.sql<{ pid: number }[]>`
        select pid from pg_stat_activity where ${holder}::int = any(pg_blocking_pids(pid))`
    ).map((row) => row.pid);
  return {
    holder,
    waiting,
    async release() {
      await held`commit`;
      held.release();
      await other.end();
    },
  };
}

/** The connections waiting for a lock one of `holders` holds. */
const blockedBy = async (holders: number[]) =>
  (
    await db.sql<{ pid: number }[]>`
      select pid from pg_stat_activity
      where pg_blocking_pids(pid) && ${holders}::int[] and not pid = any(${holders}::int[])`
  ).map((row) => row.pid);

/** Until `ringing` has answered, or waits for a lock one of `holders` holds. */
async function untilAnsweredOrWaiting(ringing: Promise<unknown>, holders: number[]) {
  let answered = false;
  void ringing.then(
    () => (answered = true),
    () => (answered = true),
  );
  await expect.poll(async () => answered || (await blockedBy(holders)).length > 0).toBe(true);
}

/** A transaction inserting the todo's ring for an earlier wake: a ring for a new one waits at it. */
const insertingTheRing = (todo: number) =>
  holdingTheRing(
    (tx) => tx`
      insert into todo_rings (todo_id, rings, next_ring_at, wake_id)
      values (${todo}, 1, now() + interval '1 hour', 'an earlier wake')`,
  );

/**
 * Two processes hear one wake. The first has picked `first` and waits at the ring's row (a
 * transaction is inserting it for an earlier wake, until `ring.release()`); the second, which heard
 * it later, has answered or waits too.
 */
async function twoProcessesHear(todo: number, wake: string) {
  const ring = await insertingTheRing(todo);
  try {
    const ringing = ringFromAProcess(todo, wake);
    await expect.poll(async () => (await ring.waiting()).length).toBe(1);
    const [ringer] = await ring.waiting();
    const heardLater = ringFromAProcess(todo, wake);
    await untilAnsweredOrWaiting(heardLater, [ring.holder, ringer!]);
    return { ring, ringing, ringer: ringer!, heardLater };
  } catch (error) {
    await ring.release();
    throw error;
  }
}

// Found by a rare failure of "each todo is rung exactly once, round-robin across them"
// (many-processes.test.ts: 4 rings to one session and 2 to the other). Every process hears every
// wake; each one's statement locked the session it would ring, then waited at the ring for the
// process that took it. The rings of other todos meanwhile passed that session over.
test('a process that hears a wake another is ringing waits for it holding no session: the round-robin holds', async () => {
  const todo = await newTodo();
  const wake = randomUUID();
  const { ring, ringing, heardLater } = await twoProcessesHear(todo, wake);
  try {
    // The second process waits for the first, and the ring of another todo meanwhile goes to the
    // other session at once.
    expect(await within(ringFromAProcess(await newTodo(), randomUUID()))).toBe(second);
  } finally {
    await ring.release();
  }
  expect(await within(ringing)).toBe(first);
  expect(await within(heardLater)).toBeNull();
});

test('a process that hears a wake already rung stops before it picks', async () => {
  const todo = await newTodo();
  const wake = randomUUID();
  expect(await within(ringFromAProcess(todo, wake))).toBe(first);
  // The ring's row is busy (another wake being taken, its re-ring due) while a slow process hears
  // the wake that was rung: it stops at once, leaving `second` to the next todo's ring.
  const ring = await holdingTheRing(
    (tx) => tx`select from todo_rings where todo_id = ${todo} for update`,
  );
  try {
    expect(await within(ringFromAProcess(todo, wake))).toBeNull();
    expect(await within(ringFromAProcess(await newTodo(), randomUUID()))).toBe(second);
  } finally {
    await ring.release();
  }
});

test('when the process ringing a wake dies before its commit, another that heard it rings it', async () => {
  const todo = await newTodo();
  const wake = randomUUID();
  const { ring, ringing, ringer, heardLater } = await twoProcessesHear(todo, wake);
  try {
    // The first one's process dies (its connection cut, as by a SIGKILL of the server): nothing
    // it did stays.
    const dying = ringing.then(
      () => 'rang',
      (error: unknown) => error,
    );
    await db.sql`select pg_terminate_backend(${ringer}::int)`;
    expect(await dying).toBeInstanceOf(Error);
  } finally {
    await ring.release();
  }
  expect(await within(heardLater)).toBe(first);
});
