import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type postgres from 'postgres';
import { afterAll, beforeAll, beforeEach, expect, test } from 'vitest';
import { takeRing, type Ring } from '../../src/delivery/take-ring.js';
import { createTodo } from '../../src/ledger/index.js';
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

/** Runs `work` in a transaction of another connection that holds `lock` on the todo's ring. */
async function holdingTheRing(lock: (tx: postgres.ReservedSql) => Promise<unknown>) {
  const other = db.connect(1);
  const held = await other.reserve();
  await held`begin`;
  await lock(held);
  const [{ holder }] = await held<[{ holder: number }]>`select pg_backend_pid() as holder`;
  const waitingOn = async () =>
    (
      await db.sql`select pid from pg_stat_activity where ${holder}::int = any(pg_blocking_pids(pid))`
    ).length;
  return {
    waitingOn,
    async release() {
      await held`commit`;
      held.release();
      await other.end();
    },
  };
}

// Found by a rare failure of "each todo is rung exactly once, round-robin across them"
// (many-processes.test.ts: 4 rings to one session and 2 to the other). Every process hears every
// wake; each one's statement locked the session it would ring before its upsert of the ring
// learned that another process had taken it. The process that did ring, finding that session
// locked, passed it over for the other one.
test('a process that hears a wake another is ringing stops before it picks: the round-robin holds', async () => {
  const todo = await newTodo();
  const wake = randomUUID();
  // The first process to hear the wake has picked `first` and waits at the ring's row, held by a
  // transaction that is inserting it.
  const ring = await holdingTheRing(
    (tx) => tx`
      insert into todo_rings (todo_id, rings, next_ring_at, wake_id)
      values (${todo}, 1, now() + interval '1 hour', 'an earlier wake')`,
  );
  const ringing = ringFromAProcess(todo, wake);
  try {
    await expect.poll(ring.waitingOn).toBe(1);
    // The second process to hear it does not wait for it, nor lock the other session: a ring of
    // another todo meanwhile goes to it at once.
    expect(await within(ringFromAProcess(todo, wake))).toBeNull();
    expect(await within(ringFromAProcess(await newTodo(), randomUUID()))).toBe(second);
  } finally {
    await ring.release();
  }
  expect(await within(ringing)).toBe(first);
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
