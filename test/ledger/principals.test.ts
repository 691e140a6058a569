import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  actorFor,
  authenticateToken,
  createAgent,
  createHuman,
  createTodo,
  hashToken,
  issueToken,
  listPrincipals,
  listTodos,
  revokeAgent,
  getTodo,
  claimNextTodo,
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

test('tokens are sbk_ secrets shown once and stored only as their SHA-256', async () => {
  const token = await issueToken(db.sql, cast.bot.principal!.id, 'agent_add');
  expect(token).toMatch(/^sbk_[A-Za-z0-9_-]{43}$/);
  const stored = await db.sql<{ hash: Buffer }[]>`select hash from tokens`;
  const dump = JSON.stringify(await db.sql`select * from tokens`);
  expect(dump).not.toContain(token);
  expect(dump).not.toContain(token.slice(4));
  expect(stored.map((r) => r.hash.toString('hex'))).toContain(hashToken(token).toString('hex'));
  expect((await authenticateToken(db.sql, token))?.name).toBe('bot');
  expect(
    await authenticateToken(db.sql, token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A')),
  ).toBeUndefined();
  expect(await authenticateToken(db.sql, 'not a token')).toBeUndefined();
});

test('revoking an agent takes effect at once, for every token it has', async () => {
  const bob = cast.bob;
  const agent = await createAgent(db.sql, bob, { name: 'temp', queues: ['reviews'] });
  const tokens = [
    await issueToken(db.sql, agent.id, 'agent_add'),
    await issueToken(db.sql, agent.id, 'agent_add'),
  ];
  for (const token of tokens) expect((await authenticateToken(db.sql, token))?.name).toBe('temp');
  await expect(revokeAgent(db.sql, cast.other, 'temp')).rejects.toMatchObject({
    code: 'forbidden',
  });
  const revoked = await revokeAgent(db.sql, bob, 'temp');
  expect(revoked.revoked_at).toBeInstanceOf(Date);
  for (const token of tokens) expect(await authenticateToken(db.sql, token)).toBeUndefined();
});

test('a human may revoke only their own agents; an admin any', async () => {
  const adasAgent = await createAgent(db.sql, cast.ada, { name: 'adas', queues: ['issues'] });
  await expect(revokeAgent(db.sql, cast.bob, adasAgent.name)).rejects.toMatchObject({
    code: 'not_found',
  });
  await createAgent(db.sql, cast.bob, { name: 'bobs', queues: ['ci'] });
  expect((await revokeAgent(db.sql, cast.ada, 'bobs')).owner).toBe('bob');
});

test('agents are owned by humans and need queues; names are unique across humans and agents', async () => {
  await expect(createAgent(db.sql, cast.bot, { name: 'x', queues: ['ci'] })).rejects.toMatchObject({
    code: 'forbidden',
  });
  await expect(createAgent(db.sql, cast.bob, { name: 'x', queues: [] })).rejects.toMatchObject({
    code: 'invalid',
  });
  await expect(
    createAgent(db.sql, cast.bob, { name: 'x', queues: ['Bad Queue'] }),
  ).rejects.toMatchObject({ code: 'invalid' });
  await expect(
    createAgent(db.sql, cast.bob, { name: 'ada', queues: ['ci'] }),
  ).rejects.toMatchObject({
    code: 'conflict',
    message: 'the name ada is taken',
  });
  await expect(
    createAgent(db.sql, cast.bob, { name: 'x', queues: ['ci'], owner: 'ada' }),
  ).rejects.toMatchObject({
    code: 'forbidden',
  });
  await expect(
    createAgent(db.sql, cast.ada, { name: 'x', queues: ['ci'], owner: 'bot' }),
  ).rejects.toMatchObject({
    code: 'invalid',
    message: 'no human named bot',
  });
  await expect(createHuman(db.sql, cast.bob, { name: 'eve' })).rejects.toMatchObject({
    code: 'forbidden',
  });
  await expect(
    createHuman(db.sql, cast.ada, { name: 'eve2', github_login: 'ADA-GH' }),
  ).rejects.toMatchObject({
    code: 'conflict',
  });
});

test('who sees which principals', async () => {
  const names = async (actor: typeof cast.ada) =>
    (await listPrincipals(db.sql, actor)).map((p) => p.name);
  expect(await names(cast.ada)).toEqual(expect.arrayContaining(['ada', 'bob', 'bot', 'other']));
  const bobSees = await names(cast.bob);
  expect(bobSees).toEqual(expect.arrayContaining(['bob', 'bot']));
  expect(bobSees).not.toContain('ada');
  expect(await names(cast.bot)).toEqual(['bot']);
});

test('an agent sees and works only its own queues, and never quarantined work', async () => {
  const mine = await createTodo(db.sql, cast.bob, {
    queue: 'reviews',
    title: 'in scope',
    source: 'cli',
  });
  const theirs = await createTodo(db.sql, cast.ada, {
    queue: 'issues',
    title: 'out of scope',
    source: 'cli',
  });
  const held = await createTodo(db.sql, cast.github, {
    queue: 'reviews',
    title: 'untrusted',
    source: 'github',
    attributed_to: 'stranger',
    quarantined: true,
  });
  const visible = (await listTodos(db.sql, cast.bot, { state: 'all', limit: 500 })).map(
    (t) => t.id,
  );
  expect(visible).toContain(mine.todo.id);
  expect(visible).not.toContain(theirs.todo.id);
  expect(visible).not.toContain(held.todo.id);
  // Out of scope reads exactly like missing.
  const missing = await getTodo(db.sql, cast.bot, 987_654).catch((e: unknown) => e);
  const outOfScope = await getTodo(db.sql, cast.bot, theirs.todo.id).catch((e: unknown) => e);
  expect(String(outOfScope).replace(String(theirs.todo.id), 'N')).toBe(
    String(missing).replace('987654', 'N'),
  );
  await expect(claimNextTodo(db.sql, cast.bot, 'issues')).rejects.toMatchObject({
    code: 'forbidden',
  });
  await expect(
    createTodo(db.sql, cast.bot, { queue: 'issues', title: 'x', source: 'mcp' }),
  ).rejects.toMatchObject({
    code: 'forbidden',
  });
  // A human sees everything, quarantined work included.
  const humanSees = (await listTodos(db.sql, cast.bob, { state: 'all', limit: 500 })).map(
    (t) => t.id,
  );
  expect(humanSees).toEqual(expect.arrayContaining([mine.todo.id, theirs.todo.id, held.todo.id]));
});

test('attribution: to the human behind the actor, or the verified sender for providers', async () => {
  const byAgent = await createTodo(db.sql, cast.bot, {
    queue: 'reviews',
    title: 'x',
    source: 'mcp',
  });
  expect(byAgent.todo.attributed_to).toBe('bob');
  const byHuman = await createTodo(db.sql, cast.ada, {
    queue: 'reviews',
    title: 'x',
    source: 'cli',
  });
  expect(byHuman.todo.attributed_to).toBe('ada');
  const byGithub = await createTodo(db.sql, cast.github, {
    queue: 'reviews',
    title: 'x',
    source: 'github',
    attributed_to: 'octocat',
  });
  expect(byGithub.todo.attributed_to).toBe('octocat');
  await expect(
    createTodo(db.sql, cast.bot, {
      queue: 'reviews',
      title: 'x',
      source: 'mcp',
      attributed_to: 'someone-else',
    }),
  ).rejects.toMatchObject({ code: 'forbidden' });
  await expect(
    createTodo(db.sql, cast.github, { queue: 'reviews', title: 'x', source: 'github' }),
  ).rejects.toMatchObject({
    code: 'invalid',
  });
  const human = actorFor(await createHuman(db.sql, cast.ada, { name: 'carol' }), 'cli');
  expect(
    (await createTodo(db.sql, human, { queue: 'q', title: 'x', source: 'cli' })).todo.attributed_to,
  ).toBe('carol');
});
