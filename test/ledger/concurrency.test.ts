import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  claimNextTodo,
  claimTodo,
  completeTodo,
  createTodo,
  decideApproval,
  requestApproval,
  type Todo,
} from '../../src/data/index.js';
import { createCast, type Cast } from '../support/principals.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let db: TestDatabase;
let cast: Cast;
beforeAll(async () => {
  db = await createTestDatabase({ max: 20 });
  cast = await createCast(db.sql);
});
afterAll(() => db.drop());

test('50 concurrent claimers on 2,000 todos complete each exactly once', async () => {
  await db.sql`
    insert into todos (queue, kind, title, source, attributed_to, available_at)
    select 'ci', 'manual', 'todo ' || n, 'cli', 'bob', now() from generate_series(1, 2000) n`;
  const completedBy = new Map<number, number>();
  const claimer = async (worker: number) => {
    for (;;) {
      const todo = await claimNextTodo(db.sql, cast.bot, 'ci', 60);
      if (!todo) return;
      await completeTodo(db.sql, cast.bot, todo.id, todo.lease_token, {
        summary: `worker ${worker}`,
      });
      expect(completedBy.has(todo.id)).toBe(false);
      completedBy.set(todo.id, worker);
    }
  };
  await Promise.all(Array.from({ length: 50 }, (_, worker) => claimer(worker)));

  expect(completedBy.size).toBe(2000);
  const [counts] = await db.sql<[{ done: number; claims: number; completions: number }]>`
    select count(*) filter (where t.state = 'done') as done,
           (select count(*) from todo_events e join todos x on x.id = e.todo_id where x.queue = 'ci' and action = 'claimed') as claims,
           (select count(*) from todo_events e join todos x on x.id = e.todo_id where x.queue = 'ci' and action = 'completed') as completions
    from todos t where t.queue = 'ci'`;
  expect(counts).toEqual({ done: 2000, claims: 2000, completions: 2000 });
  // Many workers really did take part: the claim is shared, not serialised onto one.
  expect(new Set(completedBy.values()).size).toBeGreaterThan(10);
});

test('of many claimers racing for one todo by id, exactly one wins', async () => {
  const { todo } = await createTodo(db.sql, cast.bob, {
    queue: 'reviews',
    title: 'contested',
    source: 'cli',
  });
  const results = await Promise.allSettled(
    Array.from({ length: 20 }, () => claimTodo(db.sql, cast.bot, todo.id)),
  );
  const won = results.filter((r) => r.status === 'fulfilled');
  expect(won).toHaveLength(1);
  for (const lost of results.filter((r) => r.status === 'rejected')) {
    expect(lost.reason).toMatchObject({
      code: 'conflict',
      message: expect.stringMatching(/is claimed by bot until/),
    });
  }
});

test('concurrent creates with one idempotency key make one todo and all return it', async () => {
  const creates = await Promise.all(
    Array.from({ length: 25 }, (_, n) =>
      createTodo(db.sql, cast.bob, {
        queue: 'reviews',
        title: `attempt ${n}`,
        source: 'cli',
        key: 'delivery-123',
      }),
    ),
  );
  const ids = new Set(creates.map((c) => c.todo.id));
  expect(ids.size).toBe(1);
  expect(creates.filter((c) => c.created)).toHaveLength(1);
  const [{ count }] = await db.sql<
    [{ count: number }]
  >`select count(*) from todos where idempotency_key = 'delivery-123'`;
  expect(count).toBe(1);
});

test('an idempotency key holds while its todo is live and frees up once it is done', async () => {
  const first = await createTodo(db.sql, cast.bob, {
    queue: 'ci',
    title: 'build',
    source: 'cli',
    key: 'k-1',
  });
  const again = await createTodo(db.sql, cast.bob, {
    queue: 'ci',
    title: 'build again',
    source: 'cli',
    key: 'k-1',
  });
  expect(again).toEqual({ todo: first.todo, created: false });
  // Another queue is another namespace.
  const elsewhere = await createTodo(db.sql, cast.bob, {
    queue: 'reviews',
    title: 'build',
    source: 'cli',
    key: 'k-1',
  });
  expect(elsewhere.created).toBe(true);

  const claimed = await claimTodo(db.sql, cast.bot, first.todo.id);
  expect(
    (await createTodo(db.sql, cast.bob, { queue: 'ci', title: 'x', source: 'cli', key: 'k-1' }))
      .todo.id,
  ).toBe(first.todo.id);
  await completeTodo(db.sql, cast.bot, first.todo.id, claimed.lease_token);
  const next = await createTodo(db.sql, cast.bob, {
    queue: 'ci',
    title: 'next build',
    source: 'cli',
    key: 'k-1',
  });
  expect(next.created).toBe(true);
  expect(next.todo.id).not.toBe(first.todo.id);
});

test('of concurrent deciders on one approval, the first verdict wins and the rest are told', async () => {
  const approval = await requestApproval(db.sql, cast.bot, { question: 'deploy?', source: 'mcp' });
  // Bob owns the agent; Ada is an admin: both may decide, with opposite verdicts.
  const attempts = await Promise.allSettled([
    ...Array.from({ length: 5 }, () => decideApproval(db.sql, cast.bob, approval.id, 'allow')),
    ...Array.from({ length: 5 }, () =>
      decideApproval(db.sql, cast.ada, approval.id, 'deny', 'not today'),
    ),
  ]);
  const won = attempts.filter((a): a is PromiseFulfilledResult<Todo> => a.status === 'fulfilled');
  expect(won).toHaveLength(1);
  const winner = won[0]!.value;
  for (const lost of attempts.filter((a) => a.status === 'rejected')) {
    expect(lost.reason).toMatchObject({
      code: 'conflict',
      message: expect.stringContaining(
        `already decided: ${winner.verdict} by ${winner.decided_by}`,
      ),
    });
  }
  const [{ verdicts }] = await db.sql<[{ verdicts: number }]>`
    select count(*) as verdicts from todo_events where todo_id = ${approval.id} and action in ('approved', 'denied')`;
  expect(verdicts).toBe(1);
});

test('regression: a claim does not pass by a todo while something else records an event for it', async () => {
  // Recording an event (or a delivery ring) for a todo takes a key-share lock on its row through
  // the foreign key. A claim that locked FOR UPDATE SKIP LOCKED skipped such a todo and said the
  // queue was empty.
  const { todo } = await createTodo(db.sql, cast.bob, {
    queue: 'lock-test',
    title: 'being rung',
    source: 'cli',
  });
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let locked!: () => void;
  const isLocked = new Promise<void>((resolve) => (locked = resolve));
  const recorder = db.sql.begin(async (tx) => {
    await tx`insert into todo_events (todo_id, actor_kind, actor, via, action) values (${todo.id}, 'system', 'test', 'test', 'noted')`;
    locked();
    await held;
  });
  await isLocked;
  try {
    const claimed = await claimNextTodo(db.sql, cast.bob, 'lock-test');
    expect(claimed?.id).toBe(todo.id);
  } finally {
    release();
    await recorder;
  }
});
