import nock from 'nock';
import { afterAll, afterEach, beforeAll, expect, test, vi } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { deliver } from './deliver.js';
import {
  GITHUB_API,
  INSTALLATION_TOKEN,
  isolateFromGitHub,
  nockInstallationToken,
  nockNoRepositoryConfig,
  testAppCredentials,
} from './github-app.js';

const REPO = '/repos/Codertocat/Hello-World';
const MAX_ATTEMPTS = 3;

let server: TestServer;
beforeAll(async () => {
  isolateFromGitHub();
  server = await startTestServer({
    github: testAppCredentials(),
    githubTuning: {
      writeBack: {
        pollIntervalMs: 25,
        retryBaseMs: 25,
        retryMaxMs: 100,
        maxAttempts: MAX_ATTEMPTS,
      },
    },
  });
});
afterEach(() => {
  nock.cleanAll();
});
afterAll(async () => {
  await server.stop();
  nock.enableNetConnect();
});

/** GitHub as these tests need it: a token, and no repository config (the defaults apply). */
function nockGitHub(): void {
  nockInstallationToken();
  nockNoRepositoryConfig();
}

async function writeBacksOf(deliveryId: string) {
  return server.sql`
    select case when o.write_back = 'comment' then 'issue_comment'
                when o.target ? 'comment_id' then 'comment_reaction'
                else 'issue_reaction' end as kind,
           o.state, o.attempts, o.last_error, (o.target->>'issue_number')::int as issue_number,
           (o.target->>'comment_id')::int as comment_id, o.body
    from outbox o join deliveries d on d.todo_id = o.todo_id
    where d.delivery_id = ${deliveryId} and d.disposition <> 'duplicate'
    order by o.id`;
}

async function settled(deliveryId: string, count = 1) {
  return vi.waitFor(
    async () => {
      const rows = await writeBacksOf(deliveryId);
      expect(rows).toHaveLength(count);
      for (const row of rows) expect(row.state).not.toBe('pending');
      return rows;
    },
    { timeout: 5000, interval: 20 },
  );
}

test('a labelled issue gets 👀, sent with the installation token', async () => {
  nockGitHub();
  const reaction = nock(GITHUB_API, {
    reqheaders: { authorization: `token ${INSTALLATION_TOKEN}` },
  })
    .post(`${REPO}/issues/1/reactions`, { content: 'eyes' })
    .reply(201, { id: 1, content: 'eyes' });
  const sent = await deliver(server.url, 'issues.labeled.switchboard');
  expect(sent.status).toBe(200);
  expect(await settled(sent.id)).toEqual([
    expect.objectContaining({
      kind: 'issue_reaction',
      state: 'sent',
      attempts: 1,
      last_error: null,
    }),
  ]);
  expect(reaction.isDone()).toBe(true);
});

test('a 502 is retried with backoff until GitHub takes the write-back', async () => {
  nockGitHub();
  const reactions = nock(GITHUB_API)
    .post(`${REPO}/issues/comments/492700400/reactions`, { content: 'eyes' })
    .reply(502, { message: 'Server Error' })
    .post(`${REPO}/issues/comments/492700400/reactions`, { content: 'eyes' })
    .reply(201, { id: 2, content: 'eyes' });
  const sent = await deliver(server.url, 'issue_comment.created.command');
  expect(sent.status).toBe(200);
  expect(await settled(sent.id)).toEqual([
    expect.objectContaining({
      kind: 'comment_reaction',
      comment_id: 492700400,
      state: 'sent',
      attempts: 2,
    }),
  ]);
  expect(reactions.isDone()).toBe(true);
});

test('GitHub down for good: given up after the last attempt, the error kept', async () => {
  nockGitHub();
  nock(GITHUB_API)
    .post(`${REPO}/issues/1/reactions`)
    .times(MAX_ATTEMPTS)
    .reply(502, { message: 'Server Error' });
  const sent = await deliver(server.url, 'issues.labeled.switchboard');
  expect(sent.status).toBe(200);
  expect(await settled(sent.id)).toEqual([
    expect.objectContaining({
      state: 'dead',
      attempts: MAX_ATTEMPTS,
      last_error: 'GitHub answered 502: Server Error',
    }),
  ]);
});

test('a target that is gone is given up at once', async () => {
  nockGitHub();
  nock(GITHUB_API).post(`${REPO}/issues/1/reactions`).reply(404, { message: 'Not Found' });
  const sent = await deliver(server.url, 'issues.labeled.switchboard');
  expect(await settled(sent.id)).toEqual([
    expect.objectContaining({
      state: 'dead',
      attempts: 1,
      last_error: 'GitHub answered 404: Not Found',
    }),
  ]);
});

test('completing a comment-triggered todo posts its summary as a comment', async () => {
  nockGitHub();
  nock(GITHUB_API).post(`${REPO}/issues/comments/492700400/reactions`).reply(201, {});
  let posted: { body?: string } = {};
  const comment = nock(GITHUB_API)
    .post(`${REPO}/issues/1/comments`, (body: { body?: string }) => {
      posted = body;
      return true;
    })
    .reply(201, { id: 3 });
  const sent = await deliver(server.url, 'issue_comment.created.command');
  await settled(sent.id);

  const [{ todo_id: id }] = await server.sql<[{ todo_id: number }]>`
    select todo_id from deliveries where delivery_id = ${sent.id}`;
  const { api, adminToken } = server;
  const claimed = await api(adminToken, 'POST', `/todos/${id}/claim`);
  const done = await api(adminToken, 'POST', `/todos/${id}/complete`, {
    lease_token: claimed.body.todo.lease_token,
    summary: 'Fixed the typo in README.md (Helo → Hello).',
  });
  expect(done.status).toBe(200);
  const rows = await settled(sent.id, 2);
  expect(rows[1]).toMatchObject({ kind: 'issue_comment', issue_number: 1, state: 'sent' });
  expect(comment.isDone()).toBe(true);
  expect(posted.body).toMatch(
    /^Fixed the typo in README\.md \(Helo → Hello\)\.\n\n<sub>switchboard todo #\d+, completed by /,
  );
});

test('an untrusted sender’s quarantined todo gets no reaction; a todo from a review, none', async () => {
  nockGitHub();
  const untrusted = await deliver(server.url, 'issue_comment.created.untrusted');
  const review = await deliver(server.url, 'pull_request_review.submitted.changes_requested');
  expect([untrusted.status, review.status]).toEqual([200, 200]);
  expect(await writeBacksOf(untrusted.id)).toEqual([]);
  expect(await writeBacksOf(review.id)).toEqual([]);
});

test('GitHub down never holds up a delivery: it is accepted and its write-back waits', async () => {
  // No token can be had and nothing answers: ingestion goes on regardless.
  const sent = await deliver(server.url, 'issues.labeled.switchboard');
  expect(sent.status).toBe(200);
  const [row] = await server.sql`
    select disposition, note from deliveries where delivery_id = ${sent.id}`;
  expect(row).toMatchObject({ disposition: 'created' });
  const [writeBack] = await writeBacksOf(sent.id);
  expect(writeBack).toMatchObject({ kind: 'issue_reaction' });
});
