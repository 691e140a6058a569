import type postgres from 'postgres';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createWakeNotifier } from '../../src/wakes/wake-notifier.js';
import {
  createTodo,
  releaseTodo,
  claimTodo,
  wakeChannel,
  type Wake,
} from '../../src/data/index.js';
import { silentLogger } from '../../src/platform/logger.js';
import { openEventStream } from '../support/event-stream.js';
import { createCast, type Cast } from '../support/principals.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

// A new todo's wake may be announced by its writer after the commit (src/wakes/
// wake-notifier.ts) instead of NOTIFYing inside it (migrations/0012): what that may and may
// not change.

let db: TestDatabase;
let listener: postgres.Sql;
let cast: Cast;
const heard: Wake[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  cast = await createCast(db.sql);
  listener = db.connect(1);
  await listener.listen(wakeChannel(db.schema), (payload) => heard.push(JSON.parse(payload)));
});
afterAll(() => db.drop());

const heardFor = (id: number) => heard.filter((wake) => wake.todo_id === id);

test('a todo created to be announced does not notify in its commit; the notifier sends its wake', async () => {
  const { todo, wakeId } = await createTodo(
    db.sql,
    cast.bob,
    { queue: 'reviews', title: 'announced', source: 'cli' },
    { announceWake: true },
  );
  // A marker proves the commit's own notifications, had there been any, have arrived.
  await db.sql`select pg_notify(${wakeChannel(db.schema)}, ${JSON.stringify({ todo_id: 0 })})`;
  await expect.poll(() => heard.some((wake) => wake.todo_id === 0)).toBe(true);
  expect(heardFor(todo.id)).toEqual([]);

  const notifier = createWakeNotifier(db.sql, db.schema, silentLogger);
  notifier.announce([todo], wakeId!);
  await notifier.flush();
  await expect.poll(() => heardFor(todo.id)).toHaveLength(1);
  expect(heardFor(todo.id)[0]).toEqual({
    todo_id: todo.id,
    queue: 'reviews',
    assignee: null,
    requested_by: null,
    // The writing transaction's id, as the trigger's wake would have said (src/contract/wake.ts).
    wake_id: expect.stringMatching(/^[1-9][0-9]*$/),
    event: 'claimable',
  });
  expect(heardFor(todo.id)[0]!.wake_id).toBe(wakeId);
});

test('only the insert is left to the writer: a later change in the same transaction still notifies', async () => {
  const { todo } = await createTodo(db.sql, cast.bob, {
    queue: 'reviews',
    title: 'released in an announcing transaction',
    source: 'cli',
  });
  const claimed = await claimTodo(db.sql, cast.bot, todo.id);
  const before = heardFor(todo.id).length;
  await db.sql.begin(async (tx) => {
    await createTodo(
      tx,
      cast.bob,
      { queue: 'reviews', title: 'announced later', source: 'cli' },
      { announceWake: true },
    );
    await releaseTodo(tx, cast.bot, todo.id, claimed.lease_token);
  });
  await expect.poll(() => heardFor(todo.id).length).toBe(before + 1);
});

test('the notifier sends nothing for todos that are not waiting (quarantined, say)', async () => {
  const { todo, wakeId } = await createTodo(db.sql, cast.github, {
    queue: 'reviews',
    title: 'held',
    source: 'github',
    attributed_to: 'stranger',
    quarantined: true,
  });
  const notifier = createWakeNotifier(db.sql, db.schema, silentLogger);
  notifier.announce([todo], wakeId!);
  await notifier.flush();
  await db.sql`select pg_notify(${wakeChannel(db.schema)}, ${JSON.stringify({ todo_id: -1 })})`;
  await expect.poll(() => heard.some((wake) => wake.todo_id === -1)).toBe(true);
  expect(heardFor(todo.id)).toEqual([]);
});

test('a wake the writer never announced (it died after its commit) is rung by the catch-up', async () => {
  const server: TestServer = await startTestServer({ deliveryTiming: { catchUpMs: 300 } });
  try {
    const human = (await server.api(server.adminToken, 'POST', '/humans', { name: 'bea' })).body
      .token;
    const agent = (await server.api(human, 'POST', '/agents', { name: 'w', queues: ['late'] })).body
      .token;
    const stream = await openEventStream(server.url, agent);
    try {
      // Written as the API writes it, announced by nobody.
      const [todo] = await server.sql<{ id: number }[]>`
        insert into todos (queue, kind, title, source, attributed_to, available_at)
        select 'late', 'manual', 'never announced', 'api', 'bea', now()
        from (select set_config('switchboard.announce_new_todos', 'on', true)) announce
        returning id`;
      await stream.waitFor((e) => e.event === 'wake' && e.data.todo_id === todo!.id, 10_000);
    } finally {
      stream.close();
    }
  } finally {
    await server.stop();
  }
});
