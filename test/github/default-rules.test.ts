import nock from 'nock';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { deliver, readFixture } from './deliver.js';
import { isolateFromGitHub } from './github-app.js';

// No App credentials: every rule runs on its defaults and nothing may ever call GitHub.
let server: TestServer;
const attemptedGitHubCalls: string[] = [];
beforeAll(async () => {
  isolateFromGitHub();
  nock.emitter.on('no match', (req: { hostname?: string; path?: string }) => {
    if (req.hostname !== '127.0.0.1') attemptedGitHubCalls.push(`${req.hostname}${req.path}`);
  });
  server = await startTestServer();
});
afterAll(async () => {
  await server.stop();
  nock.enableNetConnect();
});

async function deliveryRow(id: string) {
  const [row] = await server.sql`
    select disposition, todo_id, note, event, action, subject as repository, actor as sender,
           installation_id
    from deliveries where delivery_id = ${id} and disposition <> 'duplicate'`;
  return row;
}

async function todoOf(id: string) {
  const row = await deliveryRow(id);
  expect(
    row?.todo_id,
    `delivery ${id} made no todo (${row?.disposition}: ${row?.note})`,
  ).toBeTruthy();
  const { body } = await server.api(server.adminToken, 'GET', `/todos/${row!.todo_id}`);
  return body.todo;
}

describe('every default rule makes the right todo', () => {
  test.each([
    {
      fixture: 'issues.labeled.switchboard',
      queue: 'issues',
      kind: 'github.issues.labeled',
      title:
        'issue #1 labelled switchboard in Codertocat/Hello-World: Spelling error in the README file',
      url: 'https://github.com/Codertocat/Hello-World/issues/1',
    },
    {
      fixture: 'issue_comment.created.mention',
      queue: 'issues',
      kind: 'github.issue_comment.created',
      title:
        'comment by @Codertocat on #1 in Codertocat/Hello-World: @switchboard could you fix the spelling in the README?',
      url: 'https://github.com/Codertocat/Hello-World/issues/1#issuecomment-492700400',
    },
    {
      fixture: 'issue_comment.created.command',
      queue: 'issues',
      kind: 'github.issue_comment.created',
      title:
        'comment by @Codertocat on #1 in Codertocat/Hello-World: /switchboard fix the typo in README.md',
      url: 'https://github.com/Codertocat/Hello-World/issues/1#issuecomment-492700400',
    },
    {
      fixture: 'pull_request.review_requested',
      queue: 'reviews',
      kind: 'github.pull_request.review_requested',
      title:
        'review requested from @octocat on PR #2 in Codertocat/Hello-World: Update the README with new information.',
      url: 'https://github.com/Codertocat/Hello-World/pull/2',
    },
    {
      fixture: 'pull_request_review.submitted.changes_requested',
      queue: 'reviews',
      kind: 'github.pull_request_review.submitted',
      title:
        'changes requested by @Codertocat on PR #2 in Codertocat/Hello-World: Update the README with new information.',
      url: 'https://github.com/Codertocat/Hello-World/pull/2#pullrequestreview-237895671',
    },
    {
      fixture: 'check_suite.completed.failure',
      queue: 'ci',
      kind: 'github.check_suite.completed',
      title: 'check suite octocoders-linter failed on changes in Codertocat/Hello-World',
      url: 'https://github.com/Codertocat/Hello-World/commit/ec26c3e57ca3a959ca5aad62de7213c562f8c821/checks',
    },
    {
      fixture: 'workflow_run.completed.failure',
      queue: 'ci',
      kind: 'github.workflow_run.completed',
      title: 'workflow test failed on master in octo-org/octo-repo (run #163)',
      url: 'https://github.com/octo-org/octo-repo/actions/runs/289782451',
    },
  ])('$fixture → $queue', async ({ fixture, queue, kind, title, url }) => {
    const sent = await deliver(server.url, fixture);
    expect(sent.status).toBe(200);
    expect(await deliveryRow(sent.id)).toMatchObject({ disposition: 'created', note: null });
    expect(await todoOf(sent.id)).toMatchObject({
      queue,
      kind,
      title,
      url,
      source: 'github',
      attributed_to: 'Codertocat',
      state: 'pending',
      assignee: null,
      idempotency_key: expect.stringMatching(new RegExp(`^github:${sent.id}:`)),
    });
  });
});

test('the todo keeps what write-back needs, and the body the sender wrote', async () => {
  const sent = await deliver(server.url, 'issue_comment.created.command');
  const todo = await todoOf(sent.id);
  expect(todo.body).toContain("It says 'Helo' where it means 'Hello'.");
  expect(todo.meta.github).toEqual({
    delivery_id: sent.id,
    event: 'issue_comment',
    action: 'created',
    rule: 'comment',
    owner: 'Codertocat',
    repo: 'Hello-World',
    installation_id: 1,
    issue_number: 1,
    comment_id: 492700400,
    sender: 'Codertocat',
  });
  expect(await deliveryRow(sent.id)).toMatchObject({
    event: 'issue_comment',
    action: 'created',
    repository: 'Codertocat/Hello-World',
    sender: 'Codertocat',
    installation_id: 1,
  });
});

test.each([
  ['ping', 'nothing a rule reads'],
  ['issues.labeled', 'a label other than switchboard'],
  ['issues.assigned', 'no login is configured for assignments by default'],
  ['issue_comment.created', 'neither mention nor command'],
  ['pull_request_review.submitted', 'a review that only comments'],
  ['check_suite.completed', 'a green check suite'],
  [
    'check_suite.completed.github-actions-failure',
    "GitHub Actions' suites are left to workflow_run",
  ],
  ['workflow_run.completed', 'a green workflow run'],
])('%s makes nothing: no_rule (%s)', async (fixture) => {
  const before = await server.sql`select count(*)::int as n from todos`;
  const sent = await deliver(server.url, fixture);
  expect(sent.status).toBe(200);
  expect(await deliveryRow(sent.id)).toMatchObject({ disposition: 'no_rule', todo_id: null });
  expect(await server.sql`select count(*)::int as n from todos`).toEqual(before);
});

test('a rule’s event without the fields the rule reads is recorded as unreadable', async () => {
  const payload = JSON.parse(await readFixture('issues.labeled.switchboard'));
  delete payload.issue.title;
  const sent = await deliver(server.url, 'issues.labeled', { body: JSON.stringify(payload) });
  expect(sent.status).toBe(200);
  expect(await deliveryRow(sent.id)).toMatchObject({
    disposition: 'unreadable',
    todo_id: null,
    note: 'github.issues.labeled: payload field issue.title is not as GitHub documents it',
  });
});

test('a bot sender makes nothing: bot_sender', async () => {
  const sent = await deliver(server.url, 'issue_comment.created.bot');
  expect(sent.status).toBe(200);
  expect(await deliveryRow(sent.id)).toMatchObject({
    disposition: 'bot_sender',
    todo_id: null,
    sender: 'dependabot[bot]',
    note: 'dependabot[bot] is not an allowlisted bot',
  });
});

describe('an untrusted sender', () => {
  let agentToken: string;
  beforeAll(async () => {
    const { body } = await server.api(server.adminToken, 'POST', '/agents', {
      name: 'fixer',
      queues: ['issues', 'ci'],
    });
    agentToken = body.token;
  });

  test('makes a quarantined todo no agent sees or claims until a human releases it', async () => {
    const sent = await deliver(server.url, 'issue_comment.created.untrusted');
    expect(sent.status).toBe(200);
    expect(await deliveryRow(sent.id)).toMatchObject({
      disposition: 'quarantined',
      note: 'octo-stranger (author association NONE) is not trusted',
    });
    const todo = await todoOf(sent.id);
    expect(todo).toMatchObject({ state: 'quarantined', attributed_to: 'octo-stranger' });
    // Neutralised at ingest: the sender's text cannot close a channel element.
    expect(todo.title).not.toContain('</channel');
    expect(todo.body).not.toContain('</channel');
    expect(todo.body).toContain('＜/channel>');

    const { api } = server;
    expect((await api(agentToken, 'GET', `/todos/${todo.id}`)).status).toBe(404);
    const listed = await api(agentToken, 'GET', '/todos?queue=issues&state=all');
    expect(listed.body.todos.map((t: { id: number }) => t.id)).not.toContain(todo.id);
    expect((await api(agentToken, 'POST', `/todos/${todo.id}/claim`)).status).toBe(404);
    // Older pending todos of the queue may be claimed; the quarantined one never is.
    for (;;) {
      const next = await api(agentToken, 'POST', '/queues/issues/claim');
      if (!next.body.todo) break;
      expect(next.body.todo.id).not.toBe(todo.id);
    }

    expect((await api(agentToken, 'POST', `/todos/${todo.id}/release-quarantine`)).status).toBe(
      403,
    );
    const released = await api(server.adminToken, 'POST', `/todos/${todo.id}/release-quarantine`);
    expect(released.body.todo.state).toBe('pending');
    const claimed = await api(agentToken, 'POST', `/todos/${todo.id}/claim`);
    expect(claimed.status).toBe(200);
    expect(claimed.body.todo).toMatchObject({ state: 'claimed', claimed_by: 'fixer' });
  });

  test('a workflow run on a fork is untrusted: quarantined', async () => {
    const sent = await deliver(server.url, 'workflow_run.completed.fork');
    expect(await deliveryRow(sent.id)).toMatchObject({
      disposition: 'quarantined',
      note: 'Codertocat (code from a fork) is not trusted',
    });
    expect((await todoOf(sent.id)).state).toBe('quarantined');
  });
});

describe('GET /api/v1/deliveries', () => {
  test('a human reads recent deliveries with their disposition, newest first', async () => {
    const made = await deliver(server.url, 'issues.labeled.switchboard');
    const nothing = await deliver(server.url, 'ping');
    const { status, body } = await server.api(server.adminToken, 'GET', '/deliveries?limit=2');
    expect(status).toBe(200);
    expect(body.deliveries).toHaveLength(2);
    const [newest, older] = body.deliveries;
    expect(newest).toMatchObject({
      delivery_id: nothing.id,
      event: 'ping',
      disposition: 'no_rule',
    });
    expect(older).toMatchObject({
      delivery_id: made.id,
      event: 'issues',
      action: 'labeled',
      repository: 'Codertocat/Hello-World',
      sender: 'Codertocat',
      installation_id: 1,
      disposition: 'created',
      todo_id: expect.any(Number),
      received_at: expect.any(String),
    });
    expect(Object.keys(newest)).not.toContain('payload');
    const page = await server.api(
      server.adminToken,
      'GET',
      `/deliveries?limit=1&before=${older.id}`,
    );
    expect(page.body.deliveries[0].id).toBeLessThan(older.id);
  });

  test('an agent is refused; a bad limit is a 400', async () => {
    const { body } = await server.api(server.adminToken, 'POST', '/agents', {
      name: 'reader',
      queues: ['issues'],
    });
    const refused = await server.api(body.token, 'GET', '/deliveries');
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('forbidden');
    expect((await server.api(server.adminToken, 'GET', '/deliveries?limit=0')).status).toBe(400);
    expect((await server.api('', 'GET', '/deliveries')).status).toBe(401);
  });
});

test('without App credentials nothing ever called GitHub', () => {
  expect(attemptedGitHubCalls).toEqual([]);
});
