import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  claimTodo,
  createTodo,
  decideApproval,
  failTodo,
  releaseQuarantinedTodo,
  releaseTodo,
  requestApproval,
  sweepTodos,
  wakeChannel,
  type Wake,
} from '../../src/data/index.js';
import { createCast, type Cast } from '../support/principals.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let db: TestDatabase;
let other: TestDatabase;
let cast: Cast;
/** Wakes as heard, minus their wake_id (checked on arrival: a transaction id). */
const heard: Omit<Wake, 'wake_id'>[] = [];
const heardByOther: unknown[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  other = await createTestDatabase();
  cast = await createCast(db.sql);
  await db.connect(1).listen(wakeChannel(db.schema), (payload) => {
    const { wake_id, ...wake } = JSON.parse(payload) as Wake;
    if (wake.todo_id !== 0) expect(wake_id).toMatch(/^\d+$/);
    heard.push(wake);
  });
  await other.connect(1).listen(wakeChannel(other.schema), (payload) => heardByOther.push(payload));
});
afterAll(async () => {
  await db.drop();
  await other.drop();
});

/** Waits until the listener has heard `count` wakes in all, or a little while has passed. */
async function heardAfter(count: number): Promise<Omit<Wake, 'wake_id'>[]> {
  for (let waited = 0; heard.length < count && waited < 2000; waited += 20) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return heard.slice();
}

/**
 * Proves that nothing more is on its way: PostgreSQL delivers notifications in commit order, so
 * once a marker sent now has arrived, every earlier wake has too.
 */
async function settle(): Promise<void> {
  await db.sql`select pg_notify(${wakeChannel(db.schema)}, ${JSON.stringify({ todo_id: 0, queue: '-', event: 'claimable' })})`;
  for (let waited = 0; !heard.some((w) => w.todo_id === 0); waited += 20) {
    if (waited > 5000) throw new Error('the marker never arrived');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(heard.pop()).toMatchObject({ todo_id: 0 });
}

test('a create wakes on commit; a rolled-back create sends nothing', async () => {
  heard.length = 0;
  await db.sql
    .begin(async (tx) => {
      await createTodo(tx, cast.bob, { queue: 'reviews', title: 'never happened', source: 'cli' });
      throw new Error('roll back');
    })
    .catch(() => {});
  await settle();
  expect(heard).toEqual([]);

  let createdId = 0;
  await db.sql.begin(async (tx) => {
    createdId = (await createTodo(tx, cast.bob, { queue: 'reviews', title: 'real', source: 'cli' }))
      .todo.id;
    await new Promise((resolve) => setTimeout(resolve, 100));
    // Not before commit.
    expect(heard).toEqual([]);
  });
  expect(await heardAfter(1)).toEqual([
    {
      todo_id: createdId,
      queue: 'reviews',
      assignee: null,
      requested_by: null,
      event: 'claimable',
    },
  ]);
});

test('every change that makes a todo claimable wakes, and every verdict', async () => {
  heard.length = 0;
  const expected: Omit<Wake, 'wake_id'>[] = [];
  const { todo } = await createTodo(db.sql, cast.bob, {
    queue: 'ci',
    title: 'build',
    source: 'cli',
  });
  expected.push({
    todo_id: todo.id,
    queue: 'ci',
    assignee: null,
    requested_by: null,
    event: 'claimable',
  });

  const first = await claimTodo(db.sql, cast.bot, todo.id);
  await releaseTodo(db.sql, cast.bot, todo.id, first.lease_token);
  expected.push({
    todo_id: todo.id,
    queue: 'ci',
    assignee: null,
    requested_by: null,
    event: 'claimable',
  });

  const second = await claimTodo(db.sql, cast.bot, todo.id);
  await db.sql`update todos set available_at = now() - interval '1 second' where id = ${todo.id}`;
  await sweepTodos(db.sql); // lease expiry noticed
  expected.push({
    todo_id: todo.id,
    queue: 'ci',
    assignee: null,
    requested_by: null,
    event: 'claimable',
  });

  const third = await claimTodo(db.sql, cast.bot, todo.id);
  expect(third.lease_token).not.toBe(second.lease_token);
  await failTodo(db.sql, cast.bot, todo.id, third.lease_token, 'flaky');
  await db.sql`update todos set available_at = now() - interval '1 second' where id = ${todo.id}`;
  await sweepTodos(db.sql); // retry due
  expected.push({
    todo_id: todo.id,
    queue: 'ci',
    assignee: null,
    requested_by: null,
    event: 'claimable',
  });

  const held = await createTodo(db.sql, cast.github, {
    queue: 'ci',
    title: 'untrusted',
    source: 'github',
    attributed_to: 'stranger',
    quarantined: true,
  });
  await releaseQuarantinedTodo(db.sql, cast.bob, held.todo.id);
  expected.push({
    todo_id: held.todo.id,
    queue: 'ci',
    assignee: null,
    requested_by: null,
    event: 'claimable',
  });

  const approval = await requestApproval(db.sql, cast.bot, { question: 'ok?', source: 'mcp' });
  expected.push({
    todo_id: approval.id,
    queue: 'approvals',
    assignee: 'bob',
    requested_by: 'bot',
    event: 'approval',
  });
  await decideApproval(db.sql, cast.bob, approval.id, 'allow');
  expected.push({
    todo_id: approval.id,
    queue: 'approvals',
    assignee: 'bob',
    requested_by: 'bot',
    event: 'verdict',
  });

  await settle();
  expect(heard).toEqual(expected);
});

test("a schema's wakes are heard on its own channel only", async () => {
  await createTodo(db.sql, cast.bob, { queue: 'reviews', title: 'x', source: 'cli' });
  await settle();
  expect(heardByOther).toEqual([]);
});
