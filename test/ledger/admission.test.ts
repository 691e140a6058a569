import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  claimNextOrHeldBack,
  claimNextTodo,
  claimTodo,
  completeTodo,
  createTodo,
  failTodo,
  getTodoWithHistory,
  listQueues,
  readQueues,
  releaseTodo,
  setQueueLimits,
  showQueue,
  wakeChannel,
  type ClaimedTodo,
  type Wake,
} from '../../src/data/index.js';
import { createCast, type Cast } from '../support/principals.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

// Per-queue admission control (issue 25): limits checked inside the claim's own transaction.

let db: TestDatabase;
let cast: Cast;
beforeAll(async () => {
  db = await createTestDatabase({ max: 10 });
  cast = await createCast(db.sql);
});
afterAll(() => db.drop());

let queueNumber = 0;
/** A queue nobody else uses, worked by `bot`, with `count` pending todos on it. */
async function freshQueue(count = 0): Promise<{ queue: string; ids: number[] }> {
  const queue = `limited-${++queueNumber}`;
  await db.sql`update principals set queues = queues || ${queue}::text where name = 'bot'`;
  cast.bot.principal!.queues!.push(queue);
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    ids.push(
      (await createTodo(db.sql, cast.bob, { queue, title: `todo ${i}`, source: 'cli' })).todo.id,
    );
  }
  return { queue, ids };
}

const claimedCount = async (queue: string) =>
  (
    await db.sql<{ n: number }[]>`
      select count(*)::int as n from todos where queue = ${queue} and state = 'claimed' and available_at > now()`
  )[0]!.n;

test('a queue at its in-flight limit holds its todos back, says until when, and admits again when a slot frees', async () => {
  const { queue, ids } = await freshQueue(5);
  await setQueueLimits(db.sql, cast.ada, queue, { max_in_flight: 2 });

  const first = await claimNextTodo(db.sql, cast.bot, queue, 600);
  const second = await claimNextTodo(db.sql, cast.bot, queue, 900);
  expect([first?.id, second?.id]).toEqual([ids[0], ids[1]]);

  const third = await claimNextOrHeldBack(db.sql, cast.bot, queue);
  expect(third.todo).toBeNull();
  // The next slot frees at the earliest lease end at the latest: the 600 s one.
  expect(third.held_back).toEqual({
    queue,
    reason: 'max_in_flight',
    next_at: first!.lease_expires_at,
    message: `at its limit of 2 in flight — next at ${first!.lease_expires_at!.toISOString()}`,
  });
  // Held back, the todo stays pending and says why.
  const shown = await getTodoWithHistory(db.sql, cast.bob, ids[2]!);
  expect(shown.todo.state).toBe('pending');
  expect(shown.held_back).toEqual(third.held_back);
  // By id too: refused, with the reason and the time.
  await expect(claimTodo(db.sql, cast.bot, ids[3]!)).rejects.toMatchObject({
    code: 'conflict',
    message: `todo #${ids[3]} is held back: queue ${queue} is ${third.held_back!.message}`,
  });

  await completeTodo(db.sql, cast.bot, first!.id, first!.lease_token, { summary: 'ok' });
  expect((await getTodoWithHistory(db.sql, cast.bob, ids[2]!)).held_back).toBeNull();
  const fourth = await claimTodo(db.sql, cast.bot, ids[3]!);
  expect(fourth.id).toBe(ids[3]);
  expect(await claimedCount(queue)).toBe(2);
});

test('fail, release and an ended lease each free a slot; an ended lease claimed again is one more claim', async () => {
  const { queue } = await freshQueue(6);
  await setQueueLimits(db.sql, cast.ada, queue, {
    max_in_flight: 1,
    max_claims: 10,
    claims_window: 'hour',
  });
  const claimOne = async () => {
    const { todo, held_back } = await claimNextOrHeldBack(db.sql, cast.bot, queue);
    expect(held_back).toBeNull();
    expect((await claimNextOrHeldBack(db.sql, cast.bot, queue)).held_back?.reason).toBe(
      'max_in_flight',
    );
    return todo!;
  };
  const failed = await claimOne();
  await failTodo(db.sql, cast.bot, failed.id, failed.lease_token);
  const released = await claimOne();
  await releaseTodo(db.sql, cast.bot, released.id, released.lease_token);
  const expiring = await claimOne();
  await db.sql`update todos set available_at = now() - interval '1 second' where id = ${expiring.id}`;
  // No sweeper ran: the ended lease frees the slot by itself, and the todo may be taken over.
  const takenOver = await claimTodo(db.sql, cast.bot, expiring.id);
  expect(takenOver.attempt).toBe(2);

  const [usage] = await readQueues(db.sql, [queue]);
  expect(usage).toMatchObject({ in_flight: 1, claims_in_window: 4, max_claims: 10 });
});

test('a window counts a claim for exactly one window: at its edge the claim has left it', async () => {
  const { queue } = await freshQueue(3);
  await setQueueLimits(db.sql, cast.ada, queue, { max_claims: 2, claims_window: 'hour' });
  const t0 = new Date('2030-01-01T00:00:00.000Z');
  await db.sql`
    insert into queue_claims (event_id, queue, claimed_at)
    values (-1, ${queue}, ${t0}), (-2, ${queue}, ${new Date(t0.getTime() + 1000)})`;
  const at = (ms: number) => new Date(t0.getTime() + ms);
  const usage = async (ms: number) => (await readQueues(db.sql, [queue], { at: at(ms) }))[0]!;

  expect(await usage(1000)).toMatchObject({
    claims_in_window: 2,
    held_back: { reason: 'max_claims', next_at: at(3_600_000) },
  });
  // One millisecond before the edge the first claim still counts; at the edge it does not.
  expect((await usage(3_599_999)).claims_in_window).toBe(2);
  expect((await usage(3_600_000)).claims_in_window).toBe(1);
  expect((await usage(3_600_000)).held_back).toBeNull();
  expect((await usage(3_601_000)).claims_in_window).toBe(0);
});

test('claims made within the window hold the queue back; once they are older than it, they do not', async () => {
  const { queue, ids } = await freshQueue(2);
  await setQueueLimits(db.sql, cast.ada, queue, { max_claims: 2, claims_window: 'hour' });
  // Two claims an hour ago less five seconds: still in the window.
  await db.sql`
    insert into queue_claims (event_id, queue, claimed_at)
    values (-11, ${queue}, now() - interval '3595 seconds'),
           (-12, ${queue}, now() - interval '3590 seconds')`;
  const held = await claimNextOrHeldBack(db.sql, cast.bot, queue);
  expect(held.todo).toBeNull();
  expect(held.held_back?.reason).toBe('max_claims');
  const [{ edge }] = await db.sql<[{ edge: Date }]>`
    select claimed_at + interval '1 hour' as edge from queue_claims where event_id = -11`;
  expect(held.held_back?.next_at).toEqual(edge);

  // The older one leaves the window: one claim is admitted, then the queue is held back again.
  await db.sql`update queue_claims set claimed_at = now() - interval '3601 seconds' where event_id = -11`;
  expect((await claimNextTodo(db.sql, cast.bot, queue))?.id).toBe(ids[0]);
  expect((await claimNextOrHeldBack(db.sql, cast.bot, queue)).held_back?.reason).toBe('max_claims');
});

test('claims older than a day, the longest window, are dropped by the next claim of their queue', async () => {
  const { queue } = await freshQueue(1);
  await setQueueLimits(db.sql, cast.ada, queue, { max_claims: 5, claims_window: 'day' });
  await db.sql`
    insert into queue_claims (event_id, queue, claimed_at)
    values (-21, ${queue}, now() - interval '1 day 1 second'),
           (-22, ${queue}, now() - interval '1 day' + interval '1 minute')`;
  expect(await claimNextTodo(db.sql, cast.bot, queue)).not.toBeNull();
  const kept = await db.sql<{ event_id: number }[]>`
    select event_id from queue_claims where queue = ${queue} order by claimed_at`;
  expect(kept.map((row) => Number(row.event_id))).toEqual([-22, expect.any(Number)]);
});

test('concurrent claims of one actor, batched into one statement, take exactly the room left', async () => {
  const { queue } = await freshQueue(12);
  await setQueueLimits(db.sql, cast.ada, queue, { max_in_flight: 3 });
  const answers = await Promise.all(
    Array.from({ length: 12 }, () => claimNextOrHeldBack(db.sql, cast.bot, queue)),
  );
  const won = answers.map((a) => a.todo).filter((t): t is ClaimedTodo => t !== null);
  expect(won).toHaveLength(3);
  expect(answers.filter((a) => a.held_back?.reason === 'max_in_flight')).toHaveLength(9);
  expect(await claimedCount(queue)).toBe(3);
});

test('claimers on many connections at once never hold more than the limit', async () => {
  const { queue } = await freshQueue(40);
  await setQueueLimits(db.sql, cast.ada, queue, {
    max_in_flight: 3,
    max_claims: 7,
    claims_window: 'day',
  });
  // Sixteen pools: sixteen claimers that share nothing but the database.
  const pools = Array.from({ length: 16 }, () => db.connect(1));
  let held = 0;
  let most = 0;
  await Promise.all(
    pools.map(async (pool) => {
      for (let round = 0; round < 5; round++) {
        const { todo } = await claimNextOrHeldBack(pool, cast.bot, queue, 600);
        if (!todo) continue;
        most = Math.max(most, ++held, await claimedCount(queue));
        held--;
        await completeTodo(pool, cast.bot, todo.id, todo.lease_token, { summary: 'ok' });
      }
    }),
  );
  expect(most).toBeLessThanOrEqual(3);
  const [{ claims }] = await db.sql<[{ claims: number }]>`
    select count(*)::int as claims from todo_events e join todos t on t.id = e.todo_id
    where t.queue = ${queue} and e.action = 'claimed'`;
  expect(claims).toBe(7);
});

test('the first limit counts the claims of the day behind it, from the history', async () => {
  const { queue } = await freshQueue(4);
  for (let i = 0; i < 3; i++) {
    const todo = await claimNextTodo(db.sql, cast.bot, queue);
    await completeTodo(db.sql, cast.bot, todo!.id, todo!.lease_token, {});
  }
  const shown = await setQueueLimits(db.sql, cast.ada, queue, {
    max_claims: 3,
    claims_window: 'day',
  });
  expect(shown).toMatchObject({
    claims_in_window: 3,
    waiting: 1,
    held_back: { reason: 'max_claims' },
  });
  expect((await claimNextOrHeldBack(db.sql, cast.bot, queue)).todo).toBeNull();
  // Set again (a new count, same window): nothing counted twice.
  expect((await setQueueLimits(db.sql, cast.ada, queue, { max_claims: 5 })).claims_in_window).toBe(
    3,
  );
});

test('a completion or a failure that frees a slot wakes the oldest todo held back; elsewhere nothing is sent', async () => {
  const { queue, ids } = await freshQueue(4);
  const { queue: unlimited } = await freshQueue(2);
  await setQueueLimits(db.sql, cast.ada, queue, { max_in_flight: 2 });
  const wakes: Wake[] = [];
  const listening = await db
    .connect(1)
    .listen(wakeChannel(db.schema), (payload) => wakes.push(JSON.parse(payload) as Wake));
  try {
    const [a, b] = [
      await claimTodo(db.sql, cast.bot, ids[0]!),
      await claimTodo(db.sql, cast.bot, ids[1]!),
    ];
    const free = (await claimNextTodo(db.sql, cast.bot, unlimited))!;
    await completeTodo(db.sql, cast.bot, free.id, free.lease_token, {});
    await completeTodo(db.sql, cast.bot, a.id, a.lease_token, {});
    await expect.poll(() => wakes.map((wake) => wake.todo_id)).toEqual([ids[2]]);
    expect(wakes[0]).toMatchObject({ queue, event: 'claimable', assignee: null });
    // Completed alone (with a hook, as GitHub's write-back does), and failed: each wakes too.
    const c = await claimTodo(db.sql, cast.bot, ids[2]!);
    await completeTodo(
      db.sql,
      cast.bot,
      c.id,
      c.lease_token,
      {},
      {
        sources: ['cli'],
        run: async () => {},
      },
    );
    await expect.poll(() => wakes.map((wake) => wake.todo_id)).toEqual([ids[2], ids[3]]);
    await failTodo(db.sql, cast.bot, b.id, b.lease_token, 'flaky');
    await expect.poll(() => wakes.map((wake) => wake.todo_id)).toEqual([ids[2], ids[3], ids[3]]);
  } finally {
    await listening.unlisten();
  }
});

test('a claim under way when the first limit is saved, which could not see it, is waited for and counted', async () => {
  const { queue } = await freshQueue(2);
  let commit!: () => void;
  const committing = new Promise<void>((resolve) => (commit = resolve));
  let claimed!: () => void;
  const claimedInside = new Promise<void>((resolve) => (claimed = resolve));
  // A claim of the unlimited queue, in a transaction that stays open.
  const racing = db.sql.begin(async (tx) => {
    expect(await claimNextTodo(tx, cast.bot, queue)).not.toBeNull();
    claimed();
    await committing;
  });
  await claimedInside;
  const setting = setQueueLimits(db.sql, cast.ada, queue, { max_claims: 1, claims_window: 'hour' });
  // The limit is saved, and `queue set` waits for the claims under way before it answers.
  await expect
    .poll(
      async () =>
        (
          await db.sql`
            select from pg_locks
            where relation = 'todos'::regclass and mode = 'ShareLock' and not granted`
        ).length,
    )
    .toBe(1);
  commit();
  await racing;
  expect(await setting).toMatchObject({ claims_in_window: 1, held_back: { reason: 'max_claims' } });
  expect((await claimNextOrHeldBack(db.sql, cast.bot, queue)).held_back?.reason).toBe('max_claims');
});

test('limits are set by admins only, seen by whoever may work the queue, and cleared with null', async () => {
  const { queue } = await freshQueue();
  for (const actor of [cast.bob, cast.bot]) {
    await expect(setQueueLimits(db.sql, actor, queue, { max_in_flight: 1 })).rejects.toMatchObject({
      code: 'forbidden',
    });
  }
  await setQueueLimits(db.sql, cast.ada, queue, { max_in_flight: 4 });
  expect(await showQueue(db.sql, cast.bot, queue)).toMatchObject({
    name: queue,
    max_in_flight: 4,
    max_claims: null,
    updated_by: 'ada',
  });
  await expect(showQueue(db.sql, cast.other, queue)).rejects.toMatchObject({ code: 'forbidden' });
  expect((await listQueues(db.sql, cast.bob)).map((q) => q.name)).toContain(queue);
  expect((await listQueues(db.sql, cast.other)).map((q) => q.name)).not.toContain(queue);

  await setQueueLimits(db.sql, cast.ada, queue, { max_in_flight: null });
  expect(await db.sql`select from queue_limits where queue = ${queue}`).toHaveLength(0);
});

test('bad limits are refused and change nothing', async () => {
  const { queue } = await freshQueue();
  await setQueueLimits(db.sql, cast.ada, queue, { max_in_flight: 2 });
  const before = await db.sql`select * from queue_limits where queue = ${queue}`;
  for (const change of [
    {},
    { max_in_flight: 0 },
    { max_in_flight: -1 },
    { max_in_flight: 1.5 },
    { max_in_flight: 10_001 },
    { max_claims: 0, claims_window: 'hour' as const },
    { max_claims: 5 },
    { max_claims: 5, claims_window: 'week' as never },
    { max_in_flight: 3, claims_window: 'hour' as const },
  ]) {
    await expect(setQueueLimits(db.sql, cast.ada, queue, change)).rejects.toMatchObject({
      code: 'invalid',
    });
  }
  await expect(
    setQueueLimits(db.sql, cast.ada, 'Not A Queue', { max_in_flight: 1 }),
  ).rejects.toMatchObject({ code: 'invalid' });
  expect(await db.sql`select * from queue_limits where queue = ${queue}`).toEqual(before);
});
