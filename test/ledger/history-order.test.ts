import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTodo, getTodoWithHistory, replyToTodo } from '../../src/data/index.js';
import { createCast, type Cast } from '../support/principals.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let db: TestDatabase;
let cast: Cast;
beforeAll(async () => {
  db = await createTestDatabase();
  cast = await createCast(db.sql);
});
afterAll(() => db.drop());

test('regression: history is not in time order when a transaction that began earlier writes later', async () => {
  const { todo } = await createTodo(db.sql, cast.bob, {
    queue: 'reviews',
    title: 'two changes',
    source: 'cli',
  });
  // A transaction begins (its now() is fixed here), another change commits meanwhile, and only
  // then does the first transaction write its event: it happened last, and must be shown last.
  await db.sql.begin(async (tx) => {
    await tx`select now()`;
    await new Promise((resolve) => setTimeout(resolve, 20));
    await replyToTodo(db.sql, cast.bob, todo.id, 'written second');
    await new Promise((resolve) => setTimeout(resolve, 20));
    await replyToTodo(tx, cast.bob, todo.id, 'written third, begun earlier');
  });

  const { history } = await getTodoWithHistory(db.sql, cast.bob, todo.id);
  expect(history.map((event) => event.data?.text ?? event.action)).toEqual([
    'created',
    'written second',
    'written third, begun earlier',
  ]);
  const times = history.map((event) => event.at.getTime());
  expect(times).toEqual([...times].sort((a, b) => a - b));
  expect(times[2]).toBeGreaterThan(times[1]!);
});
