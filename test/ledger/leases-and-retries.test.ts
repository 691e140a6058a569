import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  claimNextTodo,
  claimTodo,
  completeTodo,
  createTodo,
  failTodo,
  getTodoWithHistory,
  heartbeatTodo,
  releaseTodo,
  sweepTodos,
} from '../../src/data/index.js';
import { createCast, type Cast } from '../support/principals.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let db: TestDatabase;
let cast: Cast;
beforeAll(async () => {
  db = await createTestDatabase();
  cast = await createCast(db.sql);
});
afterAll(() => db.drop());

/** Moves a todo's clock: its lease or retry time is now `seconds` in the past. */
const timeTravel = (id: number, seconds = 1) =>
  db.sql`update todos set available_at = now() - make_interval(secs => ${seconds}) where id = ${id}`;

let queueNumber = 0;
const freshQueue = async () => {
  // Each test works a queue nobody else uses, so claim-next sees only its own todos.
  const queue = `q${++queueNumber}`;
  await db.sql`update principals set queues = queues || ${queue}::text where name = 'bot'`;
  cast.bot.principal!.queues!.push(queue);
  return queue;
};

test('a lease that runs out makes the todo claimable again, and the old holder is refused', async () => {
  const queue = await freshQueue();
  const { todo } = await createTodo(db.sql, cast.bob, { queue, title: 'slow work', source: 'cli' });
  const first = await claimNextTodo(db.sql, cast.bot, queue, 1);
  expect(first?.id).toBe(todo.id);
  expect(await claimNextTodo(db.sql, cast.bot, queue)).toBeNull();

  await sleep(1100); // a real one-second lease, really running out; no sweeper runs
  const second = await claimNextTodo(db.sql, cast.bob, queue);
  expect(second).toMatchObject({ id: todo.id, claimed_by: 'bob', attempt: 2 });
  expect(second!.lease_token).not.toBe(first!.lease_token);

  for (const stale of [
    () => completeTodo(db.sql, cast.bot, todo.id, first!.lease_token, { summary: 'late' }),
    () => heartbeatTodo(db.sql, cast.bot, todo.id, first!.lease_token),
    () => failTodo(db.sql, cast.bot, todo.id, first!.lease_token),
    () => releaseTodo(db.sql, cast.bot, todo.id, first!.lease_token),
  ]) {
    await expect(stale()).rejects.toMatchObject({
      code: 'lease_lost',
      message: expect.stringContaining('claimed by bob'),
    });
  }
  const done = await completeTodo(db.sql, cast.bob, todo.id, second!.lease_token, {
    summary: 'on time',
  });
  expect(done).toMatchObject({ state: 'done', summary: 'on time', claimed_by: 'bob' });
  const { history } = await getTodoWithHistory(db.sql, cast.ada, todo.id);
  expect(history.map((e) => e.action)).toEqual(['created', 'claimed', 'claimed', 'completed']);
  expect(history[2]!.data).toMatchObject({ lease_expired_for: 'bot', attempt: 2 });
});

test('a holder whose lease ran out is refused even when nobody took the todo over', async () => {
  const queue = await freshQueue();
  const { todo } = await createTodo(db.sql, cast.bob, { queue, title: 'x', source: 'cli' });
  const claimed = await claimTodo(db.sql, cast.bot, todo.id);
  await timeTravel(todo.id);
  await expect(completeTodo(db.sql, cast.bot, todo.id, claimed.lease_token)).rejects.toMatchObject({
    code: 'lease_lost',
    message: expect.stringContaining('ran out'),
  });
});

test('a heartbeat extends the lease', async () => {
  const queue = await freshQueue();
  const { todo } = await createTodo(db.sql, cast.bob, { queue, title: 'x', source: 'cli' });
  const claimed = await claimTodo(db.sql, cast.bot, todo.id, 5);
  const beaten = await heartbeatTodo(db.sql, cast.bot, todo.id, claimed.lease_token, 3600);
  expect(beaten.lease_expires_at!.getTime() - claimed.lease_expires_at!.getTime()).toBeGreaterThan(
    3500_000,
  );
  expect(await claimNextTodo(db.sql, cast.bob, queue)).toBeNull();
});

test('claim-next takes the oldest available todo first and honours assignees', async () => {
  const queue = await freshQueue();
  const mk = (title: string, assignee?: string) =>
    createTodo(db.sql, cast.bob, { queue, title, source: 'cli', assignee }).then((c) => c.todo.id);
  const forBob = await mk('for bob', 'bob');
  const a = await mk('a');
  const b = await mk('b');
  const forBot = await mk('for bot', 'bot');
  expect((await claimNextTodo(db.sql, cast.bot, queue))!.id).toBe(a);
  expect((await claimNextTodo(db.sql, cast.bot, queue))!.id).toBe(b);
  expect((await claimNextTodo(db.sql, cast.bot, queue))!.id).toBe(forBot);
  expect(await claimNextTodo(db.sql, cast.bot, queue)).toBeNull();
  await expect(claimTodo(db.sql, cast.bot, forBob)).rejects.toMatchObject({ code: 'forbidden' });
  expect((await claimNextTodo(db.sql, cast.bob, queue))!.id).toBe(forBob);
});

test('failures back off exponentially, then the todo is dead', async () => {
  const queue = await freshQueue();
  const { todo } = await createTodo(db.sql, cast.bob, {
    queue,
    title: 'flaky',
    source: 'cli',
    max_attempts: 4,
  });
  const delays: number[] = [];
  for (let attempt = 1; attempt <= 4; attempt++) {
    const claimed = await claimNextTodo(db.sql, cast.bot, queue);
    expect(claimed).toMatchObject({ id: todo.id, attempt });
    const failed = await failTodo(
      db.sql,
      cast.bot,
      todo.id,
      claimed!.lease_token,
      `boom ${attempt}`,
    );
    expect(failed).toMatchObject({
      state: 'failed',
      summary: `boom ${attempt}`,
      lease_expires_at: null,
    });
    if (failed.retry_at) {
      delays.push(Math.round((failed.retry_at.getTime() - failed.updated_at.getTime()) / 1000));
      // Not claimable before the retry is due…
      expect(await claimNextTodo(db.sql, cast.bot, queue)).toBeNull();
      // …and claimable once it is, sweeper or not.
      await timeTravel(todo.id);
    } else {
      delays.push(-1);
    }
  }
  expect(delays).toEqual([10, 20, 40, -1]);
  expect(await claimNextTodo(db.sql, cast.bot, queue)).toBeNull();
  const { todo: dead, history } = await getTodoWithHistory(db.sql, cast.ada, todo.id);
  expect(dead).toMatchObject({ state: 'failed', retry_at: null, attempt: 4, summary: 'boom 4' });
  expect(history.filter((e) => e.action === 'failed')).toHaveLength(4);
});

test('a voluntary release does not use up an attempt', async () => {
  const queue = await freshQueue();
  const { todo } = await createTodo(db.sql, cast.bob, {
    queue,
    title: 'x',
    source: 'cli',
    max_attempts: 1,
  });
  for (let round = 0; round < 3; round++) {
    const claimed = await claimTodo(db.sql, cast.bot, todo.id);
    await releaseTodo(db.sql, cast.bot, todo.id, claimed.lease_token);
  }
  expect((await claimTodo(db.sql, cast.bot, todo.id)).attempt).toBe(1);
});

test('the sweeper returns ended leases, revives due retries, buries last attempts, and says so', async () => {
  await sweepTodos(db.sql); // what earlier tests left behind
  const queue = await freshQueue();
  const mk = (max_attempts = 5) =>
    createTodo(db.sql, cast.bob, { queue, title: 'x', source: 'cli', max_attempts }).then(
      (c) => c.todo.id,
    );
  const expired = await mk();
  const lastAttempt = await mk(1);
  const retrying = await mk();
  const live = await mk();
  await claimTodo(db.sql, cast.bot, expired);
  await claimTodo(db.sql, cast.bot, lastAttempt);
  await claimTodo(db.sql, cast.bot, live);
  const r = await claimTodo(db.sql, cast.bot, retrying);
  await failTodo(db.sql, cast.bot, retrying, r.lease_token);
  await Promise.all([expired, lastAttempt, retrying].map((id) => timeTravel(id)));

  const counts = await sweepTodos(db.sql);
  expect(counts).toMatchObject({ leases_expired: 1, dead: 1, retries_due: 1 });
  const state = async (id: number) => (await getTodoWithHistory(db.sql, cast.ada, id)).todo;
  expect(await state(expired)).toMatchObject({ state: 'pending', claimed_by: null, attempt: 1 });
  expect(await state(lastAttempt)).toMatchObject({
    state: 'failed',
    retry_at: null,
    summary: 'lease expired on the last attempt',
  });
  expect(await state(retrying)).toMatchObject({ state: 'pending' });
  expect(await state(live)).toMatchObject({ state: 'claimed' });
  const { history } = await getTodoWithHistory(db.sql, cast.ada, expired);
  expect(history.at(-1)).toMatchObject({
    actor_kind: 'system',
    actor: 'sweeper',
    action: 'lease_expired',
  });
  expect(await sweepTodos(db.sql)).toEqual({
    leases_expired: 0,
    dead: 0,
    retries_due: 0,
    approvals_expired: 0,
  });
});

test('regression: every sweep read the whole todos table, however few were in flight', async () => {
  // 5,000 todos waiting, none of them the sweeper's business.
  await db.sql`
    insert into todos (queue, kind, title, state, source, attributed_to, available_at)
    select 'archive', 'manual', 'waiting ' || g, 'pending', 'cli', ${cast.bob.name},
           now() - interval '1 day'
    from generate_series(1, 5000) g`;
  await db.sql`analyze todos`;
  const read = await db.sql.begin(async (tx) => {
    // Rows read from the todos table by sequential scans in this transaction.
    const scanned = async () =>
      (
        await tx<[{ rows: number }]>`
          select pg_stat_get_xact_tuples_returned('todos'::regclass)::int as rows`
      )[0].rows;
    const before = await scanned();
    await sweepTodos(tx);
    return (await scanned()) - before;
  });
  expect(read).toBe(0);
});
