import type postgres from 'postgres';
import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  claimNextTodo,
  completeTodo,
  createTodo,
  LedgerError,
  type ClaimedTodo,
} from '../../src/data/index.js';
import { createCast, type Cast } from '../support/principals.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

// Concurrent claims and completions of one actor share one statement (src/data/todos/batched.ts):
// these tests hold the promises each caller relies on when its call is one of many in a batch.

let db: TestDatabase;
let cast: Cast;
let queueNumber = 0;
beforeAll(async () => {
  db = await createTestDatabase({ max: 10 });
  cast = await createCast(db.sql);
});
afterAll(() => db.drop());

/** `count` pending todos on a fresh queue the `bot` agent may work (it works `reviews` and `ci`). */
async function seed(count: number): Promise<string> {
  const queue = ++queueNumber % 2 ? 'reviews' : 'ci';
  await db.sql`update todos set state = 'canceled', available_at = null where queue = ${queue} and state = 'pending'`;
  for (let i = 0; i < count; i++)
    await createTodo(db.sql, cast.bob, { queue, title: `todo ${i}`, source: 'cli' });
  return queue;
}

const claimedEvents = async (ids: number[]) =>
  (
    await db.sql<{ n: number }[]>`
      select count(*)::int as n from todo_events where action = 'claimed' and todo_id = any(${ids}::bigint[])`
  )[0]!.n;

test('more claims at once than todos: each todo goes to one caller, the rest get null', async () => {
  const queue = await seed(5);
  const claims = await Promise.all(
    Array.from({ length: 12 }, () => claimNextTodo(db.sql, cast.bot, queue)),
  );
  const won = claims.filter((todo): todo is ClaimedTodo => todo !== null);
  expect(won).toHaveLength(5);
  expect(new Set(won.map((todo) => todo.id)).size).toBe(5);
  expect(new Set(won.map((todo) => todo.lease_token)).size).toBe(5);
  expect(await claimedEvents(won.map((todo) => todo.id))).toBe(5);
  expect(await claimNextTodo(db.sql, cast.bot, queue)).toBeNull();
});

test('completions at once: each fenced by its own token, one history row each, a stale token refused alone', async () => {
  const queue = await seed(6);
  const claims = (await Promise.all(
    Array.from({ length: 6 }, () => claimNextTodo(db.sql, cast.bot, queue)),
  )) as ClaimedTodo[];
  const [stale, ...rest] = claims;
  const outcomes = await Promise.allSettled([
    // A token that is not this todo's lease, sent in the same moment as five good ones.
    completeTodo(db.sql, cast.bot, stale!.id, rest[0]!.lease_token, { summary: 'wrong token' }),
    ...rest.map((todo, i) =>
      completeTodo(db.sql, cast.bot, todo.id, todo.lease_token, { summary: `done ${i}` }),
    ),
  ]);
  const [refused, ...done] = outcomes;
  expect(refused).toMatchObject({ status: 'rejected' });
  expect((refused as PromiseRejectedResult).reason).toBeInstanceOf(LedgerError);
  expect((refused as PromiseRejectedResult).reason.code).toBe('lease_lost');
  expect(done.map((o) => (o as PromiseFulfilledResult<{ summary: string }>).value.summary)).toEqual(
    rest.map((_, i) => `done ${i}`),
  );
  const events = await db.sql<{ todo_id: number; data: { summary: string } }[]>`
    select todo_id, data from todo_events
    where action = 'completed' and todo_id = any(${claims.map((t) => t.id)}::bigint[])
    order by todo_id`;
  expect(events.map((e) => e.todo_id)).toEqual(rest.map((t) => t.id).sort((a, b) => a - b));
  // The stale caller's todo is still claimed, with its real lease.
  const [still] = await db.sql`select state from todos where id = ${stale!.id}`;
  expect(still!.state).toBe('claimed');
});

test('the same completion twice at once: one wins, the other is told the lease is gone', async () => {
  const queue = await seed(1);
  const todo = (await claimNextTodo(db.sql, cast.bot, queue))!;
  const outcomes = await Promise.allSettled([
    completeTodo(db.sql, cast.bot, todo.id, todo.lease_token, { summary: 'first' }),
    completeTodo(db.sql, cast.bot, todo.id, todo.lease_token, { summary: 'second' }),
  ]);
  expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
  const rejected = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult;
  expect(rejected.reason.code).toBe('lease_lost');
  const [{ n }] = await db.sql<[{ n: number }]>`
    select count(*)::int as n from todo_events where action = 'completed' and todo_id = ${todo.id}`;
  expect(n).toBe(1);
});

test('work that must commit with a completion: a failing one undoes only its own completion', async () => {
  const queue = await seed(4);
  const claims = (await Promise.all(
    Array.from({ length: 4 }, () => claimNextTodo(db.sql, cast.bot, queue)),
  )) as ClaimedTodo[];
  const doomed = claims[1]!.id;
  const outcomes = await Promise.allSettled(
    claims.map((todo) =>
      completeTodo(
        db.sql,
        cast.bot,
        todo.id,
        todo.lease_token,
        {},
        {
          sources: ['cli'],
          run: async (tx, done) => {
            await tx`insert into todo_events (todo_id, actor_kind, actor, via, action)
                   values (${done.id}, 'system', 'test', 'test', 'hooked')`;
            if (done.id === doomed) throw new Error('the write-back could not be queued');
          },
        },
      ),
    ),
  );
  expect(outcomes.map((o) => o.status)).toEqual([
    'fulfilled',
    'rejected',
    'fulfilled',
    'fulfilled',
  ]);
  const rows = await db.sql<{ id: number; state: string; hooked: number }[]>`
    select t.id, t.state,
           (select count(*)::int from todo_events e where e.todo_id = t.id and e.action = 'hooked') as hooked
    from todos t where t.id = any(${claims.map((t) => t.id)}::bigint[]) order by t.id`;
  for (const row of rows) {
    expect(row).toEqual(
      row.id === doomed
        ? { id: doomed, state: 'claimed', hooked: 0 }
        : { id: row.id, state: 'done', hooked: 1 },
    );
  }
});

test('work that must commit with a completion runs for its sources only: the others complete without it', async () => {
  const queue = await seed(3);
  const claims = (await Promise.all(
    Array.from({ length: 3 }, () => claimNextTodo(db.sql, cast.bot, queue)),
  )) as ClaimedTodo[];
  const hooked: number[] = [];
  const done = await Promise.all(
    claims.map((todo) =>
      completeTodo(
        db.sql,
        cast.bot,
        todo.id,
        todo.lease_token,
        { summary: 'ok' },
        {
          sources: ['github'],
          run: (_tx, todo) => {
            hooked.push(todo.id);
            return Promise.resolve();
          },
        },
      ),
    ),
  );
  expect(done.map((todo) => todo.state)).toEqual(['done', 'done', 'done']);
  expect(hooked).toEqual([]);
  const [{ n }] = await db.sql<[{ n: number }]>`
    select count(*)::int as n from todo_events
    where action = 'completed' and todo_id = any(${claims.map((t) => t.id)}::bigint[])`;
  expect(n).toBe(3);
});

test('inside a caller transaction, nothing is batched: a rollback undoes the claim', async () => {
  const queue = await seed(1);
  await expect(
    db.sql.begin(async (tx) => {
      const todo = await claimNextTodo(tx, cast.bot, queue);
      expect(todo).not.toBeNull();
      throw new Error('changed my mind');
    }),
  ).rejects.toThrow('changed my mind');
  expect(await claimNextTodo(db.sql, cast.bot, queue)).not.toBeNull();
});

test('regression: with statistics from before todos went in flight, a completion read every one of them', async () => {
  // Statistics taken while nothing was in flight, then 5,000 todos claimed (a fleet at work) with
  // no ANALYZE since: PostgreSQL thinks a running lease is rare.
  const queue = await seed(1);
  await db.sql`alter table todos set (autovacuum_enabled = false)`;
  await db.sql`analyze todos`;
  await db.sql`
    insert into todos (queue, kind, title, state, source, attributed_to, claimed_by, lease_token,
                       available_at, attempt)
    select 'ci', 'manual', 'busy ' || g, 'claimed', 'cli', ${cast.bob.name}, ${cast.bot.name},
           gen_random_uuid(), now() + interval '1 hour', 1
    from generate_series(1, 5000) g`;
  try {
    const todo = (await claimNextTodo(db.sql, cast.bot, queue))!;
    // Index entries read from the todos' indexes, by index, by this connection so far.
    const entriesRead = async (tx: postgres.TransactionSql) =>
      Object.fromEntries(
        (
          await tx<{ index: string; entries: number }[]>`
            select indexrelname as index, pg_stat_get_xact_tuples_returned(indexrelid)::int as entries
            from pg_stat_user_indexes where relid = 'todos'::regclass`
        ).map((row) => [row.index, row.entries]),
      );
    const read = await db.sql.begin(async (tx) => {
      const before = await entriesRead(tx);
      const done = await completeTodo(tx, cast.bot, todo.id, todo.lease_token, { summary: 'ok' });
      expect(done.state).toBe('done');
      const after = await entriesRead(tx);
      return Object.fromEntries(
        Object.entries(after).map(([index, n]) => [index, n - before[index]!]),
      );
    });
    // The completion found its todo by its id, not among the 5,000 running leases.
    expect(read.todos_claimable_idx).toBe(0);
    expect(read.todos_pkey).toBeLessThan(10);
  } finally {
    await db.sql`
      update todos set state = 'canceled', available_at = null, lease_token = null
      where title like 'busy %'`;
    await db.sql`alter table todos reset (autovacuum_enabled)`;
  }
});
