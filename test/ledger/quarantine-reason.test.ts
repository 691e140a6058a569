import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTodo, getTodoWithHistory } from '../../src/data/index.js';
import { createCast, type Cast } from '../support/principals.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let db: TestDatabase;
let cast: Cast;
beforeAll(async () => {
  db = await createTestDatabase();
  cast = await createCast(db.sql);
});
afterAll(() => db.drop());

test('a quarantined todo keeps why in its quarantined event, as one clean line', async () => {
  const { todo } = await createTodo(db.sql, cast.github, {
    queue: 'issues',
    title: 'from a stranger',
    source: 'github',
    attributed_to: 'octo-stranger',
    quarantined: true,
    quarantine_reason: 'octo-stranger (author association NONE)\nis not trusted',
  });
  const { history } = await getTodoWithHistory(db.sql, cast.ada, todo.id);
  expect(history).toMatchObject([
    {
      action: 'quarantined',
      data: { reason: 'octo-stranger (author association NONE) is not trusted' },
    },
  ]);
});

test('only switchboard itself gives a quarantine reason; a pending todo keeps none', async () => {
  await expect(
    createTodo(db.sql, cast.bob, {
      queue: 'reviews',
      title: 'mine',
      source: 'cli',
      quarantine_reason: 'says who',
    }),
  ).rejects.toMatchObject({ code: 'forbidden' });
  const { todo } = await createTodo(db.sql, cast.github, {
    queue: 'issues',
    title: 'trusted',
    source: 'github',
    attributed_to: 'octocat',
    quarantine_reason: 'not used',
  });
  const { history } = await getTodoWithHistory(db.sql, cast.ada, todo.id);
  expect(history).toMatchObject([{ action: 'created', data: null }]);
});
