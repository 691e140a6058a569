import nock from 'nock';
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { deliver } from './deliver.js';
import {
  GITHUB_API,
  isolateFromGitHub,
  nockInstallationToken,
  nockRepositoryConfig,
  testAppCredentials,
} from './github-app.js';

const REPOSITORY = 'Codertocat/Hello-World';
// Far above what a loaded machine takes to read a config nock answers at once (400 ms was not,
// and a config read in time was then taken for one that timed out).
const CONFIG_TIMEOUT_MS = 2000;

let server: TestServer;
beforeAll(async () => {
  isolateFromGitHub();
  server = await startTestServer({
    github: testAppCredentials(),
    // Write-backs (👀) are not this file's subject: leave them queued.
    githubTuning: { configTimeoutMs: CONFIG_TIMEOUT_MS, writeBack: { pollIntervalMs: 60_000 } },
  });
});
afterEach(() => {
  nock.cleanAll();
});
afterAll(async () => {
  await server.stop();
  nock.enableNetConnect();
});

/** Interceptors not called yet, but the installation token (cached after its first use). */
const unusedMocks = () => nock.pendingMocks().filter((mock) => !mock.includes('access_tokens'));

async function outcome(id: string) {
  const [row] = await server.sql`
    select d.disposition, d.note, t.queue, t.state, t.assignee
    from deliveries d left join todos t on t.id = d.todo_id
    where d.delivery_id = ${id} and d.disposition <> 'duplicate'`;
  return row;
}

test('.github/switchboard.yml overrides the defaults', async () => {
  nockInstallationToken();
  nockRepositoryConfig(
    REPOSITORY,
    [
      'rules:',
      '  comment:',
      '    queue: triage',
      '  issue_assigned:',
      '    logins: [Codertocat]',
      '  issue_labeled:',
      '    enabled: false',
      'trust:',
      '  associations: [MEMBER]',
    ].join('\n'),
    3,
  );
  const mention = await deliver(server.url, 'issue_comment.created.mention');
  const assigned = await deliver(server.url, 'issues.assigned');
  const labelled = await deliver(server.url, 'issues.labeled.switchboard');
  expect([mention.status, assigned.status, labelled.status]).toEqual([200, 200, 200]);
  // The commenter is the OWNER, and only MEMBER is trusted now: quarantined, on the new queue.
  expect(await outcome(mention.id)).toMatchObject({
    disposition: 'quarantined',
    queue: 'triage',
    state: 'quarantined',
    note: 'Codertocat (author association OWNER) is not trusted',
  });
  expect(await outcome(assigned.id)).toMatchObject({ disposition: 'quarantined', queue: 'issues' });
  expect(await outcome(labelled.id)).toMatchObject({ disposition: 'no_rule', queue: null });
  expect(unusedMocks()).toEqual([]);
});

test('a bot on the allowlist is trusted; an assignee that does not exist is dropped and noted', async () => {
  nockInstallationToken();
  nockRepositoryConfig(
    REPOSITORY,
    [
      'trust:',
      "  bots: ['dependabot[bot]']",
      'rules:',
      '  comment:',
      '    assignee: nobody-here',
    ].join('\n'),
  );
  const sent = await deliver(server.url, 'issue_comment.created.bot');
  expect(sent.status).toBe(200);
  expect(await outcome(sent.id)).toMatchObject({
    disposition: 'created',
    state: 'pending',
    assignee: null,
    note: 'assignee nobody-here dropped: no principal named nobody-here',
  });
});

test('an assignee that exists is kept', async () => {
  await server.api(server.adminToken, 'POST', '/agents', { name: 'triager', queues: ['issues'] });
  nockInstallationToken();
  nockRepositoryConfig(REPOSITORY, ['rules:', '  comment:', '    assignee: triager'].join('\n'));
  const sent = await deliver(server.url, 'issue_comment.created.command');
  expect(await outcome(sent.id)).toMatchObject({
    disposition: 'created',
    assignee: 'triager',
    note: null,
  });
});

test('no file in the repository or its owner’s .github: the defaults, no warning', async () => {
  nockInstallationToken();
  nockRepositoryConfig(REPOSITORY, null);
  const sent = await deliver(server.url, 'issue_comment.created.command');
  expect(await outcome(sent.id)).toMatchObject({
    disposition: 'created',
    queue: 'issues',
    note: null,
  });
  expect(unusedMocks()).toEqual([]);
});

test('an invalid file: the defaults, and the reason on the delivery', async () => {
  nockInstallationToken();
  nockRepositoryConfig(REPOSITORY, ['rules:', '  comment:', '    queue: Not A Queue'].join('\n'));
  const sent = await deliver(server.url, 'issue_comment.created.command');
  expect(await outcome(sent.id)).toMatchObject({
    disposition: 'created',
    queue: 'issues',
    note: expect.stringMatching(
      /^\.github\/switchboard\.yml is invalid \(rules\.comment\.queue: must be a queue name.*\); defaults used$/,
    ),
  });
});

test('a misspelt key makes the file invalid rather than silently ignored', async () => {
  nockInstallationToken();
  nockRepositoryConfig(REPOSITORY, ['rulez:', '  comment:', '    queue: triage'].join('\n'));
  const sent = await deliver(server.url, 'issue_comment.created.command');
  expect((await outcome(sent.id))?.note).toMatch(/is invalid \(.*rulez.*\); defaults used$/);
});

test('GitHub answering 502: the defaults apply and the todo is still made', async () => {
  nockInstallationToken();
  nock(GITHUB_API)
    .get((path) => path.includes('switchboard.yml'))
    .reply(502, { message: 'Server Error' });
  const sent = await deliver(server.url, 'issue_comment.created.command');
  expect(sent.status).toBe(200);
  expect(await outcome(sent.id)).toMatchObject({
    disposition: 'created',
    queue: 'issues',
    note: 'repository config not read: GitHub answered 502; defaults used',
  });
});

test('GitHub not answering in time: the defaults, within the budget', async () => {
  nockInstallationToken();
  nock(GITHUB_API)
    .get((path) => path.includes('switchboard.yml'))
    .delay(CONFIG_TIMEOUT_MS * 3)
    .reply(200, 'rules: {}');
  // Answered before GitHub would have: the note says the budget ran out, not that GitHub failed.
  const sent = await deliver(server.url, 'issue_comment.created.command');
  expect(sent.status).toBe(200);
  expect(await outcome(sent.id)).toMatchObject({
    disposition: 'created',
    note: `repository config not read: GitHub did not answer within ${CONFIG_TIMEOUT_MS} ms; defaults used`,
  });
});

test('GitHub unreachable (no network, no token): the defaults', async () => {
  // Nothing nocked: the token request itself cannot be made.
  const sent = await deliver(server.url, 'issue_comment.created.command');
  expect(sent.status).toBe(200);
  expect(await outcome(sent.id)).toMatchObject({
    disposition: 'created',
    note: expect.stringMatching(/^repository config not read: .*; defaults used$/),
  });
});

test('events no rule could want cost no API call, nor does a redelivery', async () => {
  const unmatched: string[] = [];
  const record = (req: { path?: string }) => unmatched.push(String(req.path));
  nock.emitter.on('no match', record);
  const green = await deliver(server.url, 'check_suite.completed');
  expect(await outcome(green.id)).toMatchObject({ disposition: 'no_rule', note: null });
  nockInstallationToken();
  nockRepositoryConfig(REPOSITORY, null);
  const first = await deliver(server.url, 'issue_comment.created.command');
  const again = await deliver(server.url, 'issue_comment.created.command', { id: first.id });
  expect(again.status).toBe(200);
  expect(unusedMocks()).toEqual([]);
  nock.emitter.removeListener('no match', record);
  expect(unmatched.filter((path) => path.includes('switchboard.yml'))).toEqual([]);
});
