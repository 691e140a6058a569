import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  claimTodo,
  createTodo,
  decideApproval,
  getTodo,
  getTodoWithHistory,
  listTodos,
  requestApproval,
  sweepTodos,
} from '../../src/data/index.js';
import { createCast, type Cast } from '../support/principals.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let db: TestDatabase;
let cast: Cast;
beforeAll(async () => {
  db = await createTestDatabase();
  cast = await createCast(db.sql);
});
afterAll(() => db.drop());

test("an agent's question becomes an approval owned by the agent's human", async () => {
  const { todo: work } = await createTodo(db.sql, cast.bob, {
    queue: 'reviews',
    title: 'review PR',
    source: 'cli',
  });
  const approval = await requestApproval(db.sql, cast.bot, {
    question: 'Bash: rm -rf build/',
    body: 'input preview\nsecond line',
    request_id: 'abcde',
    about_todo_id: work.id,
    source: 'channel',
  });
  expect(approval).toMatchObject({
    queue: 'approvals',
    kind: 'approval',
    state: 'pending',
    assignee: 'bob',
    attributed_to: 'bob',
    requested_by: 'bot',
    request_id: 'abcde',
    about_todo_id: work.id,
    verdict: null,
  });
  const ttl = approval.expires_at!.getTime() - approval.created_at.getTime();
  expect(ttl).toBe(900_000);
  // The asking agent can read its approval although `approvals` is not one of its queues.
  expect((await getTodo(db.sql, cast.bot, approval.id)).id).toBe(approval.id);
  // The owner finds it among what waits for them.
  expect((await listTodos(db.sql, cast.bob, { mine: true })).map((t) => t.id)).toContain(
    approval.id,
  );

  const decided = await decideApproval(db.sql, cast.bob, approval.id, 'deny', 'use make clean');
  expect(decided).toMatchObject({
    state: 'done',
    verdict: 'deny',
    decided_by: 'bob',
    summary: 'use make clean',
  });
  expect(decided.decided_at).toBeInstanceOf(Date);
  // The verdict and the note are readable by the agent that asked.
  expect(await getTodo(db.sql, cast.bot, approval.id)).toMatchObject({
    verdict: 'deny',
    summary: 'use make clean',
  });
  const { history } = await getTodoWithHistory(db.sql, cast.bot, approval.id);
  expect(history.map((e) => [e.actor_kind, e.actor, e.action])).toEqual([
    ['agent', 'bot', 'approval_requested'],
    ['human', 'bob', 'denied'],
  ]);
});

test('an agent can never decide, not even its own question', async () => {
  const approval = await requestApproval(db.sql, cast.bot, {
    question: 'push to main?',
    source: 'mcp',
  });
  await expect(decideApproval(db.sql, cast.bot, approval.id, 'allow')).rejects.toMatchObject({
    code: 'forbidden',
    message: expect.stringContaining('agents never decide'),
  });
  await expect(claimTodo(db.sql, cast.bot, approval.id)).rejects.toMatchObject({
    code: 'conflict',
  });
  expect((await getTodo(db.sql, cast.ada, approval.id)).state).toBe('pending');
});

test('only the assignee or an admin decides; to another human the approval does not exist', async () => {
  const { sql } = db;
  // Ada's agent asks Ada; Bob is neither assignee nor admin.
  const approval = await requestApproval(sql, cast.other, { question: 'merge?', source: 'mcp' });
  expect(approval.assignee).toBe('ada');
  await expect(decideApproval(sql, cast.bob, approval.id, 'allow')).rejects.toMatchObject({
    code: 'not_found',
    message: `todo #${approval.id} not found`,
  });
  await expect(getTodo(sql, cast.bob, approval.id)).rejects.toMatchObject({ code: 'not_found' });
  expect((await listTodos(sql, cast.bob, { state: 'all' })).map((t) => t.id)).not.toContain(
    approval.id,
  );
  // An admin may decide any approval.
  const bobsAgentAsks = await requestApproval(sql, cast.bot, {
    question: 'deploy?',
    source: 'mcp',
  });
  expect((await decideApproval(sql, cast.ada, bobsAgentAsks.id, 'allow')).decided_by).toBe('ada');
});

test('an approval nobody decided in time expires: refused, then canceled by the sweeper', async () => {
  const approval = await requestApproval(db.sql, cast.bot, {
    question: 'late?',
    source: 'mcp',
    ttl_seconds: 60,
  });
  await db.sql`update todos set expires_at = now() - interval '1 second' where id = ${approval.id}`;
  await expect(decideApproval(db.sql, cast.bob, approval.id, 'allow')).rejects.toMatchObject({
    code: 'conflict',
    message: expect.stringContaining('expired'),
  });
  expect((await sweepTodos(db.sql)).approvals_expired).toBe(1);
  const { todo, history } = await getTodoWithHistory(db.sql, cast.bob, approval.id);
  expect(todo).toMatchObject({ state: 'canceled', verdict: null });
  expect(history.at(-1)).toMatchObject({ actor_kind: 'system', action: 'expired' });
});

test('bad approval requests are refused and store nothing', async () => {
  const before = await db.sql`select count(*) from todos`;
  const cases = [
    { question: 'ok?', source: 'mcp' as const, request_id: 'ABCDE' },
    { question: 'ok?', source: 'mcp' as const, request_id: 'abcdl' },
    { question: 'ok?', source: 'mcp' as const, ttl_seconds: 0 },
    { question: '   ', source: 'mcp' as const },
    { question: 'ok?', source: 'mcp' as const, about_todo_id: 999_999 },
  ];
  for (const input of cases) {
    await expect(requestApproval(db.sql, cast.bot, input)).rejects.toMatchObject({
      code: expect.stringMatching(/invalid|not_found/),
    });
  }
  // About a todo the agent cannot see: answered like a missing one.
  const { todo: hidden } = await createTodo(db.sql, cast.ada, {
    queue: 'secret',
    title: 'x',
    source: 'cli',
  });
  await expect(
    requestApproval(db.sql, cast.bot, { question: 'ok?', source: 'mcp', about_todo_id: hidden.id }),
  ).rejects.toMatchObject({ code: 'not_found' });
  const after = await db.sql`select count(*) from todos`;
  expect(after[0]!.count).toBe(before[0]!.count + 1);
});
