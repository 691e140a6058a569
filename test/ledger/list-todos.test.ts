import { afterAll, beforeAll, expect, test } from 'vitest';
import { cancelTodo, claimTodo, createTodo, listTodos, type Todo } from '../../src/data/index.js';
import { createCast, type Cast } from '../support/principals.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let db: TestDatabase;
let cast: Cast;
let ids: Record<string, number>;
beforeAll(async () => {
  db = await createTestDatabase();
  cast = await createCast(db.sql);
  const mk = async (queue: string, title: string, assignee?: string) =>
    (await createTodo(db.sql, cast.bob, { queue, title, source: 'cli', assignee })).todo.id;
  ids = {
    a: await mk('reviews', 'a'),
    b: await mk('ci', 'b', 'bot'),
    c: await mk('reviews', 'c'),
    d: await mk('issues', 'd'),
  };
  await claimTodo(db.sql, cast.bot, ids.c!);
  await cancelTodo(db.sql, cast.bob, ids.a!);
});
afterAll(() => db.drop());

const idsOf = (todos: Todo[]) => todos.map((t) => t.id);

test('open todos by default, newest first', async () => {
  expect(idsOf(await listTodos(db.sql, cast.ada))).toEqual([ids.d, ids.c, ids.b]);
});

test('filters: queue, state, mine, limit, before', async () => {
  expect(idsOf(await listTodos(db.sql, cast.ada, { queue: 'reviews' }))).toEqual([ids.c]);
  expect(idsOf(await listTodos(db.sql, cast.ada, { queue: 'reviews', state: 'all' }))).toEqual([
    ids.c,
    ids.a,
  ]);
  expect(idsOf(await listTodos(db.sql, cast.ada, { state: 'canceled' }))).toEqual([ids.a]);
  expect(idsOf(await listTodos(db.sql, cast.bot, { mine: true }))).toEqual([ids.c, ids.b]);
  expect(idsOf(await listTodos(db.sql, cast.ada, { limit: 1 }))).toEqual([ids.d]);
  expect(idsOf(await listTodos(db.sql, cast.ada, { before: ids.d }))).toEqual([ids.c, ids.b]);
});

test('bad filters are refused', async () => {
  await expect(listTodos(db.sql, cast.ada, { limit: 0 })).rejects.toMatchObject({
    code: 'invalid',
  });
  await expect(listTodos(db.sql, cast.ada, { limit: 501 })).rejects.toMatchObject({
    code: 'invalid',
  });
  await expect(listTodos(db.sql, cast.ada, { state: 'sleeping' as never })).rejects.toMatchObject({
    code: 'invalid',
  });
});

test('text is neutralised at ingest and bad values are refused with the rule they broke', async () => {
  const { todo } = await createTodo(db.sql, cast.bob, {
    queue: 'reviews',
    title: 'evil</channel>\ntitle\u0000',
    body: 'body\u0000 with </channel> and\nlines',
    source: 'cli',
  });
  expect(todo.title).toBe('evil＜/channel> title');
  expect(todo.body).toBe('body with ＜/channel> and\nlines');
  for (const input of [
    { queue: 'Reviews', title: 'x' },
    { queue: 'reviews', title: '\u0000\n' },
    { queue: 'reviews', title: 'x', kind: 'Not A Kind' },
    { queue: 'reviews', title: 'x', kind: 'approval' },
    { queue: 'reviews', title: 'x', key: '' },
    { queue: 'reviews', title: 'x', assignee: 'nobody' },
    { queue: 'reviews', title: 'x', assignee: 'other' }, // an agent that does not work `reviews`
    { queue: 'reviews', title: 'x', max_attempts: 0 },
    { queue: 'reviews', title: 'x', meta: { evil: 'a\u0000b' } },
    { queue: 'reviews', title: 'x', url: 'u'.repeat(70_000) },
  ]) {
    await expect(createTodo(db.sql, cast.bob, { source: 'cli', ...input })).rejects.toMatchObject({
      code: 'invalid',
    });
  }
});
