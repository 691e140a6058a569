import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { startFakeApi, type FakeApi } from './support/fake-api.js';
import {
  addSource,
  freshLinearBody,
  giteaHeaders,
  gitlabHeaders,
  linearHeaders,
  postToSource,
  readSourceFixture,
  setRules,
} from './support/sources.js';

// Replies and summaries go back to the issue or merge request a source's todo came from, through
// the outbox, with the source's API token; the providers' APIs are fakes on 127.0.0.1
// (./support/fake-api.ts), which this server allows as SWITCHBOARD_OUTBOUND_ALLOW would.
let server: TestServer;
let agentToken: string;
const LINEAR_SECRET = 'lin_wh_write_back_secret_0123456789';
const apis: FakeApi[] = [];
const fakeApi = async (...args: Parameters<typeof startFakeApi>) => {
  const api = await startFakeApi(...args);
  apis.push(api);
  return api;
};

beforeAll(async () => {
  server = await startTestServer({
    sourcesTuning: { writeBack: { pollIntervalMs: 50, retryBaseMs: 50, retryMaxMs: 200 } },
    outbound: { allow: ['127.0.0.1/32'] },
  });
  const { body } = await server.api(server.adminToken, 'POST', '/agents', {
    name: 'worker',
    queues: ['issues', 'reviews'],
  });
  agentToken = body.token;
});
afterAll(async () => {
  await server.stop();
  await Promise.all(apis.map((api) => api.close()));
});

/** Claims the todo the delivery made, replies on it, completes it with a summary. */
async function work(todoId: number) {
  const claimed = await server.api(agentToken, 'POST', `/todos/${todoId}/claim`, {});
  expect(claimed.status).toBe(200);
  const lease = claimed.body.todo.lease_token;
  expect(
    (await server.api(agentToken, 'POST', `/todos/${todoId}/reply`, { text: 'On it.' })).status,
  ).toBe(200);
  const done = await server.api(agentToken, 'POST', `/todos/${todoId}/complete`, {
    lease_token: lease,
    summary: 'Fixed in abc123.',
  });
  expect(done.status).toBe(200);
}

const outbox = (todoId: number) =>
  server.sql<{ state: string; attempts: number; last_error: string | null }[]>`
    select state, attempts, last_error from outbox where todo_id = ${todoId} order by id`;

test('gitea: the reply and the summary are posted as comments on the issue, with the token', async () => {
  const gitea = await fakeApi(() => ({ status: 201, body: { id: 1 } }));
  const { secret } = await addSource(server, {
    kind: 'gitea',
    name: 'code',
    api_url: gitea.origin,
    api_token: 'gitea-token-0001',
  });
  await setRules(server, 'code', 'trust:\n  logins: [unknwon]\n');
  const body = await readSourceFixture('gitea', 'issue_comment.created.command');
  const sent = await postToSource(
    server,
    'code',
    body,
    giteaHeaders('gitea', 'issue_comment', body, secret),
    'x',
  );
  await work(sent.body.delivery.todo_id);
  await vi.waitFor(
    async () =>
      expect((await outbox(sent.body.delivery.todo_id)).map((r) => r.state)).toEqual([
        'sent',
        'sent',
      ]),
    { timeout: 10_000 },
  );
  expect(
    gitea.requests.map((r) => [r.method, r.path, r.headers.authorization, JSON.parse(r.body).body]),
  ).toEqual([
    [
      'POST',
      '/api/v1/repos/gogits/hello-world/issues/1/comments',
      'token gitea-token-0001',
      `On it.\n\n— reply from worker (agent) on switchboard todo #${sent.body.delivery.todo_id}`,
    ],
    [
      'POST',
      '/api/v1/repos/gogits/hello-world/issues/1/comments',
      'token gitea-token-0001',
      `Fixed in abc123.\n\n— switchboard todo #${sent.body.delivery.todo_id}, completed by worker`,
    ],
  ]);
});

test('gitlab: notes on the issue, with PRIVATE-TOKEN; a refusal is given up at once, the reason kept', async () => {
  const gitlab = await fakeApi((_request, index) =>
    index === 0
      ? { status: 201, body: { id: 1 } }
      : { status: 403, body: { message: '403 Forbidden' } },
  );
  const { secret } = await addSource(server, {
    kind: 'gitlab',
    name: 'lab',
    api_url: gitlab.origin,
    api_token: 'glpat-write-back',
  });
  await setRules(server, 'lab', 'trust:\n  logins: [sytses]\n');
  const body = await readSourceFixture('gitlab', 'note.create.command');
  const sent = await postToSource(server, 'lab', body, gitlabHeaders('note', secret), 'x');
  const todoId = sent.body.delivery.todo_id;
  await work(todoId);
  await vi.waitFor(
    async () => expect((await outbox(todoId)).map((r) => r.state)).toEqual(['sent', 'dead']),
    { timeout: 10_000 },
  );
  expect((await outbox(todoId))[1]!.last_error).toBe(
    'gitlab answered 403: {"message":"403 Forbidden"}',
  );
  expect(gitlab.requests.map((r) => [r.path, r.headers['private-token']])).toEqual([
    ['/api/v4/projects/4861503/issues/1/notes', 'glpat-write-back'],
    ['/api/v4/projects/4861503/issues/1/notes', 'glpat-write-back'],
  ]);
});

test('linear: commentCreate on the issue, with the API key; a 5xx is retried', async () => {
  const linear = await fakeApi((_request, index) =>
    index === 0
      ? { status: 502, body: 'bad gateway' }
      : { status: 200, body: { data: { commentCreate: { success: true } } } },
  );
  await addSource(server, {
    kind: 'linear',
    name: 'tracker',
    secret: LINEAR_SECRET,
    // Linear's own by default (https://api.linear.app); here the fake.
    api_url: linear.origin,
    api_token: 'lin_api_write_back',
  });
  await setRules(server, 'tracker', 'trust:\n  logins: [ada@example.com]\n');
  const body = freshLinearBody(await readSourceFixture('linear', 'Comment.create.mention'));
  const sent = await postToSource(
    server,
    'tracker',
    body,
    linearHeaders(body, LINEAR_SECRET, 'Comment'),
    randomUUID(),
  );
  const todoId = sent.body.delivery.todo_id;
  await work(todoId);
  await vi.waitFor(
    async () => expect((await outbox(todoId)).map((r) => r.state)).toEqual(['sent', 'sent']),
    { timeout: 10_000 },
  );
  expect(
    linear.requests.map((r) => [r.path, r.headers.authorization, r.headers['content-type']]),
  ).toEqual(Array(3).fill(['/graphql', 'lin_api_write_back', 'application/json']));
  // The reply waited out its backoff, so the summary may have gone first.
  const bodies = linear.requests
    .slice(1)
    .map(
      (request) =>
        (JSON.parse(request.body) as { variables: { input: { issueId: string; body: string } } })
          .variables.input,
    );
  expect(bodies.map((input) => input.issueId)).toEqual([
    '236e0fe8-5ab2-4d6b-9f0a-b2df06e33810',
    '236e0fe8-5ab2-4d6b-9f0a-b2df06e33810',
  ]);
  expect(bodies.map((input) => input.body.split('\n')[0]).sort()).toEqual([
    'Fixed in abc123.',
    'On it.',
  ]);
  expect((await outbox(todoId))[0]!.attempts).toBe(2);
});

describe('no API token, no write-back', () => {
  test('a source without a token queues nothing', async () => {
    const { secret } = await addSource(server, { kind: 'gitea', name: 'quiet' });
    await setRules(server, 'quiet', 'trust:\n  logins: [unknwon]\n');
    const payload = JSON.parse(await readSourceFixture('gitea', 'issue_comment.created.command'));
    payload.comment.id = 44;
    const body = JSON.stringify(payload);
    const sent = await postToSource(
      server,
      'quiet',
      body,
      giteaHeaders('gitea', 'issue_comment', body, secret),
      'x',
    );
    await work(sent.body.delivery.todo_id);
    expect(await outbox(sent.body.delivery.todo_id)).toEqual([]);
  });
});
