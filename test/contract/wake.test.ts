import type postgres from 'postgres';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { Wake, wakeOf } from '../../src/contract/wake.js';
import {
  claimTodo,
  completeTodo,
  createTodo,
  decideApproval,
  requestApproval,
  setQueueLimits,
  wakeChannel,
} from '../../src/data/index.js';
import { silentLogger } from '../../src/platform/logger.js';
import { createWakeNotifier } from '../../src/wakes/wake-notifier.js';
import { createCast, type Cast } from '../support/principals.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

// The wake's shape is defined once (src/contract/wake.ts). Its writers — the todos' trigger
// inside a commit (todo_wake, migrations/0047), and the wake notifier after one — send it as the
// same JSON, with the same wake id for the same change: the writing transaction's.

let db: TestDatabase;
let listener: postgres.Sql;
let cast: Cast;
/** Every payload heard, as sent. */
const heard: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  cast = await createCast(db.sql);
  listener = db.connect(1);
  await listener.listen(wakeChannel(db.schema), (payload) => heard.push(payload));
});
afterAll(() => db.drop());

/** The `count`-th payload heard for the todo, read with the contract's schema. */
async function nthWake(todoId: number, count: number): Promise<Wake> {
  const of = () => heard.filter((payload) => JSON.parse(payload).todo_id === todoId);
  await expect.poll(() => of().length).toBeGreaterThanOrEqual(count);
  return Wake.parse(JSON.parse(of()[count - 1]!));
}

test("regression: the notifier's wake id was a random UUID, not the writing transaction's; a todo's wake from the trigger and from the notifier is the same JSON", async () => {
  const { todo, wakeId } = await createTodo(db.sql, cast.bob, {
    queue: 'reviews',
    title: 'woken twice over',
    source: 'cli',
  });
  const fromTrigger = await nthWake(todo.id, 1);
  expect(fromTrigger).toEqual({
    todo_id: todo.id,
    queue: 'reviews',
    assignee: null,
    requested_by: null,
    wake_id: wakeId,
    event: 'claimable',
  });

  // The same todo announced by its writer, as a writer that created it to be announced would.
  const notifier = createWakeNotifier(db.sql, db.schema, silentLogger);
  notifier.announce([todo], wakeId!);
  await notifier.flush();
  expect(await nthWake(todo.id, 2)).toEqual(fromTrigger);
  expect(wakeOf(todo, wakeId!)).toEqual(fromTrigger);
});

test("an approval's wake, and its verdict's, from each writer as the contract says", async () => {
  const approval = await requestApproval(db.sql, cast.bot, {
    question: 'May I?',
    source: 'mcp',
  });
  const fromTrigger = await nthWake(approval.id, 1);
  expect(fromTrigger).toMatchObject({
    todo_id: approval.id,
    queue: 'approvals',
    assignee: 'bob',
    requested_by: 'bot',
    event: 'approval',
  });
  const notifier = createWakeNotifier(db.sql, db.schema, silentLogger);
  notifier.announce([approval], fromTrigger.wake_id);
  await notifier.flush();
  expect(await nthWake(approval.id, 2)).toEqual(fromTrigger);

  const decided = await decideApproval(db.sql, cast.bob, approval.id, 'allow', null);
  const verdict = await nthWake(approval.id, 3);
  expect(verdict).toMatchObject({ todo_id: approval.id, event: 'verdict', requested_by: 'bot' });
  expect(verdict.wake_id).not.toBe(fromTrigger.wake_id);
  expect(wakeOf(decided, verdict.wake_id)).toEqual(verdict);
});

test('the wake of a todo a freed slot lets in is the same shape, named by the freeing transaction', async () => {
  await setQueueLimits(db.sql, cast.ada, 'ci', { max_in_flight: 1 });
  const first = await createTodo(db.sql, cast.bob, { queue: 'ci', title: 'first', source: 'cli' });
  const claimed = await claimTodo(db.sql, cast.bot, first.todo.id);
  const second = await createTodo(db.sql, cast.bob, {
    queue: 'ci',
    title: 'second',
    source: 'cli',
  });
  expect(await nthWake(second.todo.id, 1)).toMatchObject({ wake_id: second.wakeId });

  await completeTodo(db.sql, cast.bot, first.todo.id, claimed.lease_token, {});
  const freed = await nthWake(second.todo.id, 2);
  expect(freed).toEqual(wakeOf(second.todo, freed.wake_id));
  expect(freed.wake_id).not.toBe(second.wakeId);
});

test('the schema refuses what is not a wake', () => {
  const wake = { todo_id: 1, queue: 'q', assignee: null, requested_by: null, wake_id: '7' };
  expect(Wake.safeParse({ ...wake, event: 'claimable' }).success).toBe(true);
  expect(Wake.safeParse({ ...wake, event: 'rung' }).success).toBe(false);
  expect(Wake.safeParse({ ...wake, wake_id: 'f47ac10b-58cc-4372-a567-0e02b2c3d479' }).success).toBe(
    false,
  );
  expect(Wake.safeParse({ ...wake, event: 'claimable', extra: 1 }).success).toBe(false);
});
