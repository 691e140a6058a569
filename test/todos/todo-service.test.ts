import type postgres from 'postgres';
import { afterAll, beforeAll, beforeEach, expect, test } from 'vitest';
import {
  actorFor,
  createAgent,
  createHuman,
  getTodo,
  setHumanSettings,
  setQueueLimits,
  systemActor,
  todoColumns,
  wakeChannel,
  type Todo,
  type Wake,
} from '../../src/data/index.js';
import { createTodoService, type TodoService } from '../../src/todos/create-todo-service.js';
import { createCast, type Cast } from '../support/principals.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

// The todo service is the one door for changing a todo: each verb fires the side effects bound to
// it once — the hooks the server gives it, and the wakes the database sends with a commit.

let db: TestDatabase;
let listener: postgres.Sql;
let cast: Cast;
let todos: TodoService;
const heard: Wake[] = [];
/** What each hook was called with, in order. */
const calls: Record<string, unknown[]> = {};
const record =
  (hook: string) =>
  (...args: unknown[]) =>
    void (calls[hook] ??= []).push(args);

beforeAll(async () => {
  db = await createTestDatabase();
  cast = await createCast(db.sql);
  listener = db.connect(1);
  await listener.listen(wakeChannel(db.schema), (payload) => heard.push(JSON.parse(payload)));
  todos = createTodoService(db.sql, {
    announce: (made, wakeId) =>
      record('announce')(
        made.map((todo) => todo.id),
        wakeId,
      ),
    afterComplete: {
      sources: ['github'],
      run: (_tx, todo, actor) => Promise.resolve(record('afterComplete')(todo.id, actor.name)),
    },
    afterReply: (_tx, todo, text, actor) =>
      Promise.resolve(record('afterReply')(todo.id, text, actor.name)),
    heldBack: (heldBack) => record('heldBack')(heldBack.queue),
    revoked: record('revoked'),
  });
});
beforeEach(() => {
  for (const hook of Object.keys(calls)) delete calls[hook];
});
afterAll(() => db.drop());

let markers = 0;
/** The wakes heard for a todo, once a marker sent now proves every earlier one has arrived. */
async function wakesFor(id: number): Promise<Wake[]> {
  const marker = -++markers;
  await db.sql`select pg_notify(${wakeChannel(db.schema)}, ${JSON.stringify({ todo_id: marker })})`;
  await expect.poll(() => heard.some((wake) => wake.todo_id === marker)).toBe(true);
  return heard.filter((wake) => wake.todo_id === id);
}

const github = systemActor('github');
const fromGitHub = (title: string) => ({
  queue: 'reviews',
  title,
  source: 'github' as const,
  attributed_to: 'bob',
});

test('create announces a new todo once, after its commit and named by it; a live key announces nothing', async () => {
  const { todo, created } = await todos.create(cast.bob, {
    queue: 'reviews',
    title: 'a',
    key: 'k',
  });
  expect(created).toBe(true);
  expect(calls.announce).toEqual([[[todo.id], expect.stringMatching(/^[1-9][0-9]*$/)]]);
  // Its own commit sent nothing: the announcement is the wake.
  expect(await wakesFor(todo.id)).toEqual([]);

  const again = await todos.create(cast.bob, { queue: 'reviews', title: 'a', key: 'k' });
  expect(again).toMatchObject({ created: false, todo: { id: todo.id } });
  expect(calls.announce).toHaveLength(1);
});

test('claim, heartbeat and release: the release wakes once, with its commit', async () => {
  const { todo } = await todos.create(cast.bob, { queue: 'reviews', title: 'released' });
  const claimed = await todos.claim(cast.bot, todo.id);
  await todos.heartbeat(cast.bot, todo.id, claimed.lease_token, 60);
  expect(await wakesFor(todo.id)).toEqual([]);
  await todos.release(cast.bot, todo.id, claimed.lease_token);
  expect(await wakesFor(todo.id)).toEqual([
    expect.objectContaining({ todo_id: todo.id, event: 'claimable' }),
  ]);
});

test('a claim at the limit is counted held back once; a failure frees the slot and wakes what waits once', async () => {
  await setQueueLimits(db.sql, cast.ada, 'ci', { max_in_flight: 1 });
  const first = (await todos.create(cast.bob, { queue: 'ci', title: 'first' })).todo;
  const second = (await todos.create(cast.bob, { queue: 'ci', title: 'second' })).todo;
  const { todo: claimed } = await todos.claimNext(cast.bot, 'ci');
  expect(claimed?.id).toBe(first.id);
  expect(await todos.claimNext(cast.bot, 'ci')).toMatchObject({ todo: null, held_back: {} });
  expect(calls.heldBack).toEqual([['ci']]);

  await todos.fail(cast.bot, first.id, claimed!.lease_token, 'flaky');
  expect(await wakesFor(second.id)).toEqual([
    expect.objectContaining({ todo_id: second.id, event: 'claimable' }),
  ]);
  await setQueueLimits(db.sql, cast.ada, 'ci', { max_in_flight: null });
});

test('complete runs the write-back once for a todo from its sources, and not for others', async () => {
  const fromProvider = await todos.transaction((_tx, door) =>
    door.create(github, fromGitHub('from github')),
  );
  const manual = (await todos.create(cast.bob, { queue: 'reviews', title: 'manual' })).todo;
  for (const todo of [fromProvider.todo, manual]) {
    const claimed = await todos.claim(cast.bot, todo.id);
    await todos.complete(cast.bot, todo.id, claimed.lease_token, { summary: 'done' });
  }
  expect(calls.afterComplete).toEqual([[fromProvider.todo.id, 'bot']]);
});

test('reply runs its write-back once, in its transaction', async () => {
  const { todo } = await todos.create(cast.bob, { queue: 'reviews', title: 'asked' });
  expect(await todos.reply(cast.bot, todo.id, 'on it')).toMatchObject({ text: 'on it' });
  expect(calls.afterReply).toEqual([[todo.id, 'on it', 'bot']]);
});

test('decide: one verdict wake with its commit, from whichever surface; the first verdict wins', async () => {
  const approval = await todos.requestApproval(cast.bot, { question: 'may I?' });
  expect(approval).toMatchObject({ source: 'mcp', assignee: 'bob' });
  await expect(todos.decide(cast.bot, approval.id, 'allow')).rejects.toMatchObject({
    code: 'forbidden',
  });
  const decided = await todos.decide(actorFor(cast.bob.principal!, 'slack'), approval.id, 'deny');
  expect(decided).toMatchObject({ verdict: 'deny', decided_by: 'bob' });
  await expect(todos.decide(cast.ada, approval.id, 'allow')).rejects.toMatchObject({
    code: 'conflict',
  });
  expect((await wakesFor(approval.id)).map((wake) => wake.event)).toEqual(['approval', 'verdict']);
});

test('cancel, release from quarantine and the sweep, each once', async () => {
  const waiting = (await todos.create(cast.bob, { queue: 'reviews', title: 'moot' })).todo;
  await todos.cancel(cast.bob, waiting.id, 'moot');
  expect(await wakesFor(waiting.id)).toEqual([]);

  const held = await todos.transaction((_tx, door) =>
    door.create(github, { ...fromGitHub('stranger'), quarantined: true }),
  );
  expect(await wakesFor(held.todo.id)).toEqual([]);
  await todos.releaseQuarantined(cast.bob, held.todo.id);
  expect(await wakesFor(held.todo.id)).toEqual([
    expect.objectContaining({ todo_id: held.todo.id, event: 'claimable' }),
  ]);

  const claimed = await todos.claim(cast.bot, held.todo.id, 1);
  await db.sql`update todos set available_at = now() - interval '1 second' where id = ${claimed.id}`;
  expect(await todos.sweep()).toMatchObject({ leases_expired: 1 });
  expect(await wakesFor(held.todo.id)).toHaveLength(2);
  expect(await todos.sweep()).toMatchObject({ leases_expired: 0 });
});

test('the approvals a channel session asked are canceled when it goes', async () => {
  const session = crypto.randomUUID();
  const asked = await todos.requestApproval(cast.bot, {
    question: 'from a session',
    meta: { channel_session: session },
  });
  expect(await todos.cancelSessionApprovals([session])).toEqual([asked.id]);
  expect((await getTodo(db.sql, cast.bob, asked.id)).state).toBe('canceled');
  expect(await todos.cancelSessionApprovals([session])).toEqual([]);
});

test('deactivation forgets tokens once, and announces the approvals moved to the backup once', async () => {
  const system = systemActor('test');
  const carol = actorFor(await createHuman(db.sql, system, { name: 'carol' }), 'cli');
  await setHumanSettings(db.sql, carol, 'carol', { backup: 'bob' });
  const helper = actorFor(
    await createAgent(db.sql, carol, { name: 'carols-bot', queues: ['reviews'] }),
    'mcp',
  );
  const asked = await todos.requestApproval(helper, { question: 'may I, carol?' });
  const ended = await todos.deactivateHuman(cast.ada, 'carol');
  expect(ended.approvals).toEqual([expect.objectContaining({ id: asked.id, assignee: 'bob' })]);
  expect(ended).not.toHaveProperty('wakeId');
  expect(calls.revoked).toEqual([[]]);
  expect(calls.announce).toEqual([[[asked.id], expect.stringMatching(/^[1-9][0-9]*$/)]]);
});

test('a transaction announces what it committed, named by it, and nothing of a round rolled back', async () => {
  await expect(
    todos.transaction(async (_tx, door) => {
      await door.create(github, fromGitHub('rolled back'));
      throw new Error('roll back');
    }),
  ).rejects.toThrow('roll back');
  expect(calls.announce).toBeUndefined();

  // A todo the caller's own statement inserts, as the intake's arrival does.
  const { todo, wakeId } = await todos.transaction(async (tx, door) => {
    const prepared = await door.prepare(github, fromGitHub('inserted by the caller'));
    const [inserted] = await tx<Todo[]>`with ${prepared.insert()} select ${todoColumns(tx)} from t`;
    door.inserted(inserted!);
    const [{ id }] = await tx<[{ id: string }]>`select pg_current_xact_id()::text as id`;
    return { todo: inserted!, wakeId: id };
  });
  expect(calls.announce).toEqual([[[todo.id], wakeId]]);
  expect(await wakesFor(todo.id)).toEqual([]);
});
