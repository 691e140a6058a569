import nock from 'nock';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { deliver } from '../../github/deliver.js';
import {
  isolateFromGitHub,
  nockInstallationToken,
  nockRepositoryConfig,
  testAppCredentials,
} from '../../github/github-app.js';
import { startTestServer, type TestServer } from '../../support/test-server.js';

let server: TestServer;
let withApp: TestServer;
beforeAll(async () => {
  isolateFromGitHub();
  server = await startTestServer();
  withApp = await startTestServer({
    github: testAppCredentials(),
    githubTuning: { writeBack: { pollIntervalMs: 60_000 } },
  });
});
afterAll(async () => {
  await Promise.all([server.stop(), withApp.stop()]);
  nock.cleanAll();
  nock.enableNetConnect();
});

async function outcome(on: TestServer, id: string) {
  const [row] = await on.sql`
    select d.disposition, d.note, t.queue, t.kind, t.title, t.url, t.state, t.attributed_to
    from deliveries d left join todos t on t.id = d.todo_id
    where d.delivery_id = ${id} and d.disposition <> 'duplicate'`;
  return row;
}

test('regression: a pull request opened by a trusted author made no review todo', async () => {
  const sent = await deliver(server.url, 'pull_request.opened');
  expect(sent.status).toBe(200);
  expect(await outcome(server, sent.id)).toEqual({
    disposition: 'created',
    note: null,
    queue: 'reviews',
    kind: 'github.pull_request.opened',
    title: 'PR #2 opened in Codertocat/Hello-World: Update the README with new information.',
    url: 'https://github.com/Codertocat/Hello-World/pull/2',
    state: 'pending',
    attributed_to: 'Codertocat',
  });
});

test('a draft pull request makes nothing', async () => {
  const sent = await deliver(server.url, 'pull_request.opened.draft');
  expect(await outcome(server, sent.id)).toMatchObject({ disposition: 'no_rule', queue: null });
});

test('a repository turns the rule off in .github/switchboard.yml', async () => {
  nockInstallationToken();
  nockRepositoryConfig(
    'Codertocat/Hello-World',
    ['rules:', '  pull_request_opened:', '    enabled: false'].join('\n'),
  );
  const sent = await deliver(withApp.url, 'pull_request.opened');
  expect(await outcome(withApp, sent.id)).toMatchObject({ disposition: 'no_rule', note: null });
});

test('a pull request from an author the repository does not trust waits in quarantine', async () => {
  nockInstallationToken();
  nockRepositoryConfig('Codertocat/Hello-World', ['trust:', '  associations: [MEMBER]'].join('\n'));
  const sent = await deliver(withApp.url, 'pull_request.opened');
  expect(await outcome(withApp, sent.id)).toMatchObject({
    disposition: 'quarantined',
    state: 'quarantined',
    note: 'Codertocat (author association OWNER) is not trusted',
  });
});
