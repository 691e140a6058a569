import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { migrate } from '../../src/platform/db/migrate.js';
import { connect } from '../../src/platform/db/open-database.js';
import { silentLogger } from '../../src/platform/logger.js';

// Migration 0030 moves GitHub's deliveries and every source's into one table, and both outboxes
// into one, on a database that holds both kinds: every delivery keeps its id (the API's), every
// row its contents, and the rules the old tables held hold on the new ones.

const url = inject('databaseUrl');
const schema = `m_${randomBytes(6).toString('hex')}`;
const sql = connect(url, { schema, max: 2, log: silentLogger });
afterAll(async () => {
  await sql.unsafe(`drop schema if exists ${schema} cascade`);
  await sql.end();
});

const sha = (text: string) => createHash('sha256').update(text).digest();
const ids = {} as Record<
  | 'githubTodo'
  | 'giteaTodo'
  | 'githubMade'
  | 'giteaMade'
  | 'githubOld'
  | 'giteaDuplicate'
  | 'githubShared'
  | 'giteaShared'
  | 'reaction'
  | 'comment',
  number
>;

beforeAll(async () => {
  await migrate(sql, schema, { before: 30 });
  await sql`insert into principals (name, kind, is_admin) values ('ada', 'human', true)`;
  await sql`
    insert into sources (name, kind, owner, queues, secret, api_url, api_token)
    values ('code', 'gitea', 'ada', '{issues}', '\\x00', 'https://gitea.example', '\\x01')`;
  const todo = async (source: string, title: string) => {
    const [row] = await sql<[{ id: number }]>`
      insert into todos (queue, kind, title, source, attributed_to)
      values ('issues', 'manual', ${title}, ${source}, 'ada') returning id`;
    return Number(row.id);
  };
  ids.githubTodo = await todo('github', 'from GitHub');
  ids.giteaTodo = await todo('gitea', 'from Gitea');

  // Interleaved, as the shared sequence hands them out.
  const github = async (deliveryId: string, extra: Record<string, unknown> = {}) => {
    const [row] = await sql<[{ id: number }]>`
      insert into github_deliveries ${sql({
        delivery_id: deliveryId,
        event: 'issues',
        action: 'labeled',
        repository: 'acme/api',
        sender: 'ada',
        installation_id: 7,
        disposition: 'created',
        todo_id: null,
        note: null,
        facts: sql.json({ event: 'issues', fields: { label: { name: 'switchboard' } } }),
        body_sha256: sha(deliveryId),
        ...extra,
      } as never)} returning id`;
    return Number(row.id);
  };
  const gitea = async (deliveryId: string, extra: Record<string, unknown> = {}) => {
    const [row] = await sql<[{ id: number }]>`
      insert into source_deliveries ${sql({
        source: 'code',
        kind: 'gitea',
        delivery_id: deliveryId,
        event: 'issue_comment',
        action: 'created',
        subject: 'acme/web',
        actor: 'grace',
        disposition: 'quarantined',
        todo_id: null,
        note: 'grace is not on trust.logins',
        facts: sql.json({ event: 'issue_comment', subject: 'acme/web' }),
        body_sha256: sha(deliveryId),
        ...extra,
      } as never)} returning id`;
    return Number(row.id);
  };
  ids.githubMade = await github('gh-1', { todo_id: ids.githubTodo });
  ids.giteaMade = await gitea('g-1', { todo_id: ids.giteaTodo });
  ids.githubOld = await github('gh-0', { facts: null, body_sha256: null, disposition: 'no_rule' });
  ids.giteaDuplicate = await gitea('g-1', { disposition: 'duplicate', note: null });
  // A delivery id both providers happen to use: each source keeps its own.
  ids.githubShared = await github('same-id', { disposition: 'no_rule' });
  ids.giteaShared = await gitea('same-id', { disposition: 'no_rule', note: null });
  // An id handed out and never kept (a rolled-back delivery): not to be handed out again.
  await sql`select nextval('github_deliveries_id_seq')`;

  const [reaction] = await sql<[{ id: number }]>`
    insert into github_outbox (todo_id, kind, installation_id, owner, repo, issue_number, comment_id, body)
    values (${ids.githubTodo}, 'comment_reaction', 7, 'acme', 'api', 12, 99, 'eyes') returning id`;
  ids.reaction = Number(reaction.id);
  const [comment] = await sql<[{ id: number }]>`
    insert into github_outbox (todo_id, kind, installation_id, owner, repo, issue_number, body,
                               state, attempts, last_error, sent_at)
    values (${ids.githubTodo}, 'issue_comment', 7, 'acme', 'api', 12, 'done: see the PR',
            'sent', 2, null, now()) returning id`;
  ids.comment = Number(comment.id);
  await sql`
    insert into source_outbox (todo_id, source, target, body, state, attempts, last_error)
    values (${ids.giteaTodo}, 'code', ${sql.json({ owner: 'acme', repo: 'web', number: 3 })},
            'a reply', 'dead', 25, 'gitea answered 404: gone')`;

  await migrate(sql, schema);
});

test('every delivery keeps its id, its source and kind, and what it recorded', async () => {
  const rows = await sql`
    select id::int, source, kind, delivery_id, event, action, subject, actor, installation_id::int,
           disposition::text, todo_id::int, note, facts, encode(body_sha256, 'hex') as body
    from deliveries order by id`;
  expect(rows.map((row) => row.id)).toEqual(
    [
      ids.githubMade,
      ids.giteaMade,
      ids.githubOld,
      ids.giteaDuplicate,
      ids.githubShared,
      ids.giteaShared,
    ].sort((a, b) => a - b),
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  expect(byId.get(ids.githubMade)).toEqual({
    id: ids.githubMade,
    source: 'github',
    kind: 'github',
    delivery_id: 'gh-1',
    event: 'issues',
    action: 'labeled',
    subject: 'acme/api',
    actor: 'ada',
    installation_id: 7,
    disposition: 'created',
    todo_id: ids.githubTodo,
    note: null,
    facts: { event: 'issues', fields: { label: { name: 'switchboard' } } },
    body: sha('gh-1').toString('hex'),
  });
  expect(byId.get(ids.giteaMade)).toEqual({
    id: ids.giteaMade,
    source: 'code',
    kind: 'gitea',
    delivery_id: 'g-1',
    event: 'issue_comment',
    action: 'created',
    subject: 'acme/web',
    actor: 'grace',
    installation_id: null,
    disposition: 'quarantined',
    todo_id: ids.giteaTodo,
    note: 'grace is not on trust.logins',
    facts: { event: 'issue_comment', subject: 'acme/web' },
    body: sha('g-1').toString('hex'),
  });
  expect(byId.get(ids.githubOld)).toMatchObject({ facts: null, body: null });
  expect(byId.get(ids.giteaDuplicate)).toMatchObject({ source: 'code', disposition: 'duplicate' });
});

test('a new delivery takes an id no delivery ever had', async () => {
  const [row] = await sql<[{ id: number }]>`
    insert into deliveries (source, kind, delivery_id, event, disposition)
    values ('github', 'github', 'gh-2', 'ping', 'no_rule') returning id`;
  expect(Number(row.id)).toBe(ids.giteaShared + 2);
});

test('recorded once per source and delivery id; receipts and unreadable ones hold nothing', async () => {
  const insert = (source: string, kind: string, deliveryId: string, disposition: string) => sql`
    insert into deliveries (source, kind, delivery_id, event, disposition)
    values (${source}, ${kind}, ${deliveryId}, 'issues', ${disposition})`;
  await expect(insert('github', 'github', 'gh-1', 'no_rule')).rejects.toThrow(
    /deliveries_recorded_once/,
  );
  await expect(insert('code', 'gitea', 'g-1', 'created')).rejects.toThrow(
    /deliveries_recorded_once/,
  );
  // Another source may carry the same id; a receipt or an unreadable record takes no slot.
  await insert('other', 'gitlab', 'g-1', 'created');
  await insert('github', 'github', 'gh-1', 'duplicate');
  await insert('github', 'github', 'gh-1', 'unreadable');
});

test('the old tables’ rules hold on the new one', async () => {
  await expect(
    sql`insert into deliveries (source, kind, delivery_id, event, disposition, todo_id)
        values ('code', 'gitea', 'g-9', 'issues', 'no_rule', ${ids.giteaTodo})`,
  ).rejects.toThrow(/deliveries_only_makers_have_todos/);
  await expect(
    sql`insert into deliveries (source, kind, delivery_id, event, disposition, installation_id)
        values ('code', 'gitea', 'g-10', 'issues', 'no_rule', 1)`,
  ).rejects.toThrow(/deliveries_only_github_has_installations/);
  await expect(
    sql`insert into deliveries (source, kind, delivery_id, event, disposition)
        values ('code', 'svn', 'g-11', 'issues', 'no_rule')`,
  ).rejects.toThrow(/deliveries_kind_is_a_provider/);
  await expect(
    sql`insert into sources (name, kind, owner, queues, secret)
        values ('github', 'gitea', 'ada', '{issues}', '\\x00')`,
  ).rejects.toThrow(/sources_name_is_not_github/);
});

test('both outboxes are one: GitHub’s rows keep their ids, every row its target and state', async () => {
  const rows = await sql`
    select id::int, todo_id::int, source, kind, write_back::text, target, body, state::text,
           attempts, last_error, sent_at is not null as sent
    from outbox order by id`;
  expect(rows).toEqual([
    {
      id: ids.reaction,
      todo_id: ids.githubTodo,
      source: 'github',
      kind: 'github',
      write_back: 'reaction',
      target: { installation_id: 7, owner: 'acme', repo: 'api', issue_number: 12, comment_id: 99 },
      body: 'eyes',
      state: 'pending',
      attempts: 0,
      last_error: null,
      sent: false,
    },
    {
      id: ids.comment,
      todo_id: ids.githubTodo,
      source: 'github',
      kind: 'github',
      write_back: 'comment',
      target: { installation_id: 7, owner: 'acme', repo: 'api', issue_number: 12 },
      body: 'done: see the PR',
      state: 'sent',
      attempts: 2,
      last_error: null,
      sent: true,
    },
    {
      id: ids.comment + 1,
      todo_id: ids.giteaTodo,
      source: 'code',
      kind: 'gitea',
      write_back: 'comment',
      target: { owner: 'acme', repo: 'web', number: 3 },
      body: 'a reply',
      state: 'dead',
      attempts: 25,
      last_error: 'gitea answered 404: gone',
      sent: false,
    },
  ]);
  await expect(
    sql`insert into outbox (todo_id, source, kind, write_back, target, body)
        values (${ids.githubTodo}, 'github', 'github', 'comment', '{"owner": "acme"}', 'hi')`,
  ).rejects.toThrow(/outbox_github_targets_name_the_issue/);
});

test('the old tables and the view are gone', async () => {
  const [{ left }] = await sql<[{ left: string[] }]>`
    select coalesce(array_agg(table_name::text), '{}') as left from information_schema.tables
    where table_schema = ${schema}
      and table_name in ('github_deliveries', 'source_deliveries', 'github_outbox', 'source_outbox')`;
  expect(left).toEqual([]);
  const [{ kind }] = await sql<[{ kind: string }]>`
    select table_type as kind from information_schema.tables
    where table_schema = ${schema} and table_name = 'deliveries'`;
  expect(kind).toBe('BASE TABLE');
});
