import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  createTodo,
  decideApproval,
  getTodoWithHistory,
  requestApproval,
  showSecret,
} from '../../src/data/index.js';
import { createSecretBox } from '../../src/platform/secrets/secret-box.js';
import { FAKE, fakePrivateKey } from '../support/fake-credentials.js';
import { createCast, type Cast } from '../support/principals.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let db: TestDatabase;
let cast: Cast;
const box = createSecretBox(randomBytes(32));
const seal = (value: string) => box.seal(value);
const unseal = (sealed: Buffer) => box.open(sealed);
const REFERENCE = /\[secret:([a-z2-9]{12})\]/g;
const referencesIn = (text: string | null) =>
  [...(text ?? '').matchAll(REFERENCE)].map((m) => m[1]!);

beforeAll(async () => {
  db = await createTestDatabase();
  cast = await createCast(db.sql);
});
afterAll(() => db.drop());

test('a provider todo keeps no credential in its text, only references, and its values sealed', async () => {
  const token = FAKE.githubClassic();
  const key = fakePrivateKey();
  const { todo } = await createTodo(
    db.sql,
    cast.github,
    {
      queue: 'reviews',
      title: `Deploy fails with ${token}`,
      body: `The token ${token} and the key:\n${key}\nare in the log.`,
      source: 'github',
      attributed_to: 'octocat',
    },
    { seal },
  );
  expect(todo.title).not.toContain(token);
  expect(todo.body).not.toContain(token);
  expect(todo.body).not.toContain(key.split('\n')[1]);
  const [tokenId] = referencesIn(todo.title);
  const ids = referencesIn(todo.body);
  expect(ids).toEqual([tokenId, expect.any(String)]);
  expect(todo.body).toBe(
    `The token [secret:${ids[0]}] and the key:\n[secret:${ids[1]}]\nare in the log.`,
  );

  // Sealed at rest: the value is nowhere in the row.
  const rows = await db.sql<{ id: string; rule: string; sealed: Buffer }[]>`
    select id, rule, sealed from todo_secrets where todo_id = ${todo.id} order by rule`;
  expect(rows.map((row) => [row.id, row.rule]).sort()).toEqual(
    [
      [ids[0], 'github'],
      [ids[1], 'privatekey'],
    ].sort(),
  );
  for (const row of rows) expect(row.sealed.toString('latin1')).not.toContain(token.slice(4, 20));

  // The history says what was withheld, never the value.
  const { history } = await getTodoWithHistory(db.sql, cast.ada, todo.id);
  expect(history[0]).toMatchObject({ action: 'created', data: { withheld: 3 } });
  expect(JSON.stringify(history)).not.toContain(token);

  // Whoever may read the todo may fetch a value; the fetch is recorded, the value is not.
  const shown = await showSecret(db.sql, cast.bot, ids[0]!, unseal);
  expect(shown).toMatchObject({ id: ids[0], todo_id: todo.id, rule: 'github', value: token });
  expect((await showSecret(db.sql, cast.bob, ids[1]!, unseal)).value).toBe(key);
  const after = await getTodoWithHistory(db.sql, cast.ada, todo.id);
  expect(after.history.slice(1)).toMatchObject([
    {
      action: 'secret_shown',
      actor: 'bot',
      actor_kind: 'agent',
      data: { secret: ids[0], rule: 'github' },
    },
    {
      action: 'secret_shown',
      actor: 'bob',
      actor_kind: 'human',
      data: { secret: ids[1], rule: 'privatekey' },
    },
  ]);
  expect(JSON.stringify(after.history)).not.toContain(token);
});

test('a secret is fetched only by who may read its todo; to anyone else it does not exist', async () => {
  const { todo } = await createTodo(
    db.sql,
    cast.github,
    {
      queue: 'reviews',
      title: `see ${FAKE.slackBot()}`,
      source: 'github',
      attributed_to: 'octocat',
    },
    { seal },
  );
  const [id] = referencesIn(todo.title);
  // `other` works only `issues`: the todo is not its to see.
  await expect(showSecret(db.sql, cast.other, id!, unseal)).rejects.toMatchObject({
    code: 'not_found',
    message: `secret ${id} not found`,
  });
  await expect(showSecret(db.sql, cast.bot, 'abcdefghijkm', unseal)).rejects.toMatchObject({
    code: 'not_found',
  });
  const { history } = await getTodoWithHistory(db.sql, cast.ada, todo.id);
  expect(history.map((event) => event.action)).toEqual(['created']);
});

test('a todo a person or agent writes is withheld from too', async () => {
  const token = FAKE.switchboard();
  const { todo } = await createTodo(
    db.sql,
    cast.bot,
    { queue: 'reviews', title: 'for the other agent', body: `use ${token}`, source: 'mcp' },
    { seal },
  );
  const [id] = referencesIn(todo.body);
  expect(todo.body).toBe(`use [secret:${id}]`);
  expect((await showSecret(db.sql, cast.bot, id!, unseal)).value).toBe(token);
});

test('without a server key a credential is withheld all the same, and not kept', async () => {
  const { todo } = await createTodo(db.sql, cast.github, {
    queue: 'reviews',
    title: `leak ${FAKE.awsAccessKeyId()}`,
    source: 'github',
    attributed_to: 'octocat',
  });
  expect(todo.title).toBe('leak [secret:withheld]');
  const [{ count }] = await db.sql<[{ count: number }]>`
    select count(*)::int as count from todo_secrets where todo_id = ${todo.id}`;
  expect(count).toBe(0);
  const { history } = await getTodoWithHistory(db.sql, cast.ada, todo.id);
  expect(history[0]).toMatchObject({ data: { secrets: [], withheld: 1 } });
});

test('a quarantined todo’s reason, an approval’s question and body, and a verdict’s note are withheld from', async () => {
  const { todo: held } = await createTodo(
    db.sql,
    cast.github,
    {
      queue: 'issues',
      title: 'from a stranger',
      source: 'github',
      attributed_to: 'stranger',
      quarantined: true,
      quarantine_reason: `stranger pasted ${FAKE.npm()}`,
    },
    { seal },
  );
  const { history } = await getTodoWithHistory(db.sql, cast.ada, held.id);
  expect(history[0]!.data!.reason).toMatch(/^stranger pasted \[secret:[a-z2-9]{12}\]$/);

  const command = `curl -H "Authorization: Bearer ${FAKE.githubClassic()}" https://api.github.com`;
  const approval = await requestApproval(
    db.sql,
    cast.bot,
    { question: `Run ${command}?`, body: command, source: 'mcp' },
    { seal },
  );
  expect(referencesIn(approval.title)).toHaveLength(1);
  expect(approval.body).toBe(
    `curl -H "Authorization: Bearer [secret:${referencesIn(approval.title)[0]}]" https://api.github.com`,
  );
  const gitlab = FAKE.gitlab();
  const note = `no, and revoke ${gitlab}`;
  const decided = await decideApproval(db.sql, cast.bob, approval.id, 'deny', note, { seal });
  const [noteId] = referencesIn(decided.summary);
  expect(decided.summary).toBe(`no, and revoke [secret:${noteId}]`);
  const trail = await getTodoWithHistory(db.sql, cast.bob, approval.id);
  expect(trail.history.at(-1)).toMatchObject({
    action: 'denied',
    data: { note: decided.summary, withheld: 1 },
  });
  expect((await showSecret(db.sql, cast.bob, noteId!, unseal)).value).toBe(gitlab);
});

test('a secret goes with its todo', async () => {
  const { todo } = await createTodo(
    db.sql,
    cast.github,
    { queue: 'ci', title: `ci ${FAKE.npm()}`, source: 'github', attributed_to: 'octocat' },
    { seal },
  );
  const [id] = referencesIn(todo.title);
  await db.sql`delete from todo_events where todo_id = ${todo.id}`;
  await db.sql`delete from todos where id = ${todo.id}`;
  const rows = await db.sql`select from todo_secrets where id = ${id!}`;
  expect(rows).toHaveLength(0);
});
