import nock from 'nock';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { deliver } from './deliver.js';
import {
  GITHUB_API,
  isolateFromGitHub,
  nockInstallationToken,
  nockRepositoryConfig,
  testAppCredentials,
} from './github-app.js';

// `GET /deliveries/:id/explain` with the App's credentials: the repository's
// .github/switchboard.yml is read from GitHub now (nock, the network off), as the intake reads
// it, and today's file decides — or the defaults, when GitHub does not answer, and it says why.

const REPOSITORY = 'Codertocat/Hello-World';
let server: TestServer;
let labeled: number;
let todoId: number;

beforeAll(async () => {
  isolateFromGitHub();
  nockInstallationToken();
  nock(GITHUB_API)
    .persist()
    .post(`/repos/${REPOSITORY}/issues/1/reactions`)
    .reply(201, { id: 1, content: 'eyes' });
  server = await startTestServer({ github: testAppCredentials() });
  // Delivered while the repository has no rules file: the defaults made a todo.
  nockRepositoryConfig(REPOSITORY, null);
  const sent = await deliver(server.url, 'issues.labeled.switchboard');
  expect(sent.status).toBe(200);
  const [row] = await server.sql<{ id: number; todo_id: number }[]>`
    select id, todo_id from deliveries where delivery_id = ${sent.id}`;
  labeled = Number(row!.id);
  todoId = Number(row!.todo_id);
});
afterAll(async () => {
  await server?.stop();
  nock.cleanAll();
  nock.enableNetConnect();
});

const explain = async () => {
  const { status, body } = await server.api(
    server.adminToken,
    'GET',
    `/deliveries/${labeled}/explain`,
  );
  expect(status, JSON.stringify(body)).toBe(200);
  return body;
};

describe.sequential('explain with the App', () => {
  test('the repository’s file as it is now: the same rules decide as they did', async () => {
    nockRepositoryConfig(REPOSITORY, null);
    expect(await explain()).toMatchObject({
      was: { disposition: 'created', todo_id: todoId },
      would: { disposition: 'created', queue: 'issues', write_backs: ['issue_reaction'] },
      rules: {
        from: 'repository',
        note: "Codertocat/Hello-World's .github/switchboard.yml over the defaults, read from GitHub now (the defaults alone where it has none)",
      },
    });
  });

  test('a rules file changed since: today’s decides, and nothing changes', async () => {
    nockRepositoryConfig(
      REPOSITORY,
      ['rules:', '  issue_labeled:', '    queue: triage', '    label: switchboard'].join('\n'),
    );
    expect((await explain()).would).toMatchObject({ disposition: 'created', queue: 'triage' });
    nockRepositoryConfig(
      REPOSITORY,
      ['rules:', '  issue_labeled:', '    enabled: false'].join('\n'),
    );
    expect((await explain()).would).toMatchObject({ disposition: 'no_rule', queue: null });
    // A dry run: the delivery and its todo are as they were, and nothing was written back again.
    const [row] =
      await server.sql`select disposition, todo_id from deliveries where id = ${labeled}`;
    expect(row).toEqual({ disposition: 'created', todo_id: todoId });
    const [{ count }] = await server.sql<[{ count: number }]>`
      select count(*)::int from outbox where todo_id = ${todoId}`;
    expect(count).toBe(1);
  });

  test('GitHub failing: the defaults, and why', async () => {
    nock(GITHUB_API)
      .get((path) => path.includes('switchboard.yml'))
      .reply(500, { message: 'Server Error' });
    expect((await explain()).rules).toEqual({
      from: 'defaults',
      note: 'repository config not read: GitHub answered 500; defaults used',
    });
  });
});
