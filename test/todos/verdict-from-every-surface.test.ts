import nock from 'nock';
import { afterAll, afterEach, beforeAll, expect, test, vi } from 'vitest';
import { wakeChannel, type Wake } from '../../src/data/index.js';
import { deliver, readFixture } from '../github/deliver.js';
import {
  GITHUB_API,
  isolateFromGitHub,
  nockInstallationToken,
  nockNoRepositoryConfig,
  testAppCredentials,
} from '../github/github-app.js';
import {
  BOT_TOKEN,
  directMessage,
  postToSlackEndpoint,
  pressPayload,
  SIGNING_SECRET,
  startFakeSlack,
} from '../slack/support/fake-slack.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { signInByFetch, type FetchSession } from '../web/support/push.js';

// A verdict is recorded through one door (src/todos/decide.ts), whichever surface a human gives
// it on: the JSON API, the console, Slack or a GitHub comment. Each is recorded once, wakes the
// asker once, and has the approval's Slack message updated once.

const SLACK_USER = 'U0CODER01';
let server: TestServer;
let slack: Awaited<ReturnType<typeof startFakeSlack>>;
let coder: string; // the human whose GitHub login is the fixtures' sender, linked in Slack
let agent: string;
let web: FetchSession;
let work: number;
const heard: Wake[] = [];
let stopListening: () => Promise<void>;

/** A real comment delivery on Codertocat/Hello-World#1, with its body changed. */
async function comment(body: string) {
  const payload = JSON.parse(await readFixture('issue_comment.created.command'));
  payload.comment.body = body;
  return deliver(server.url, 'issue_comment.created.command', { body: JSON.stringify(payload) });
}

function nockGitHub(): void {
  nockInstallationToken();
  nockNoRepositoryConfig();
  nock(GITHUB_API)
    .persist()
    .post(/\/reactions$/)
    .reply(201, { id: 1, content: 'eyes' });
}

beforeAll(async () => {
  isolateFromGitHub();
  slack = await startFakeSlack();
  server = await startTestServer({
    github: testAppCredentials(),
    slack: { apiUrl: slack.url, sweepMs: 200 },
    githubTuning: { writeBack: { pollIntervalMs: 25, retryBaseMs: 25 } },
  });
  expect(
    (
      await server.api(server.adminToken, 'PUT', '/slack/app', {
        bot_token: BOT_TOKEN,
        signing_secret: SIGNING_SECRET,
      })
    ).status,
  ).toBe(200);
  coder = (
    await server.api(server.adminToken, 'POST', '/humans', {
      name: 'coder',
      github_login: 'Codertocat',
    })
  ).body.token;
  agent = (await server.api(coder, 'POST', '/agents', { name: 'bot', queues: ['issues'] })).body
    .token;
  const { code } = (await server.api(coder, 'POST', '/slack/link-code')).body;
  await postToSlackEndpoint(
    server.url,
    '/api/slack/events',
    directMessage({ user: SLACK_USER, text: code, eventId: 'EvLINKCODER' }),
  );
  await vi.waitFor(async () =>
    expect((await server.api(coder, 'GET', '/slack')).body.link?.slack_user_id).toBe(SLACK_USER),
  );
  web = await signInByFetch(server, coder);
  // The work every approval is about: a todo from a comment on the issue.
  nockGitHub();
  expect((await comment('/switchboard please rename the branch')).status).toBe(200);
  nock.cleanAll();
  work = (await server.api(coder, 'GET', '/todos?queue=issues')).body.todos[0].id;
  const listening = await server.sql.listen(wakeChannel(server.schema), (payload) =>
    heard.push(JSON.parse(payload) as Wake),
  );
  stopListening = () => listening.unlisten();
});
afterEach(() => {
  nock.cleanAll();
});
afterAll(async () => {
  await stopListening?.();
  await server?.stop();
  await slack?.close();
  nock.enableNetConnect();
});

const slackUpdates = (id: number) =>
  slack
    .callsTo('chat.update')
    .filter((call) => JSON.stringify(call.args.blocks).includes(`#${id}`));
const slackPosted = (id: number) =>
  slack
    .callsTo('chat.postMessage')
    .some((call) => JSON.stringify(call.args.blocks ?? []).includes(`approval:${id}`));

/** How each surface says Allow, and the `via` its verdict is recorded with. */
const SURFACES: Record<string, { via: string; allow(id: number): Promise<void> }> = {
  'the JSON API': {
    via: 'api',
    async allow(id) {
      expect((await server.api(coder, 'POST', `/todos/${id}/approve`, {})).status).toBe(200);
    },
  },
  'the console': {
    via: 'web',
    async allow(id) {
      const answer = await fetch(`${server.url}/approvals/${id}/decide`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          cookie: web.cookie,
          origin: server.url,
        },
        body: new URLSearchParams({ _csrf: web.csrf, verdict: 'allow' }),
        redirect: 'manual',
      });
      expect(answer.status).toBe(303);
    },
  },
  Slack: {
    via: 'slack',
    async allow(id) {
      const pressed = await postToSlackEndpoint(
        server.url,
        '/api/slack/interactions',
        pressPayload({ user: SLACK_USER, actionId: 'approval_allow', todoId: id }),
      );
      expect(pressed.status).toBe(200);
    },
  },
  'a GitHub comment': {
    via: 'github',
    async allow(id) {
      nockGitHub();
      const delivered = await comment(`/approve #${id}`);
      expect(delivered.status).toBe(200);
    },
  },
};

test.each(Object.keys(SURFACES))(
  'a verdict given on %s is recorded once, wakes its asker once, and updates its Slack message once',
  async (surface) => {
    const { via, allow } = SURFACES[surface]!;
    const asked = await server.api(agent, 'POST', '/approvals', {
      question: `may I, by ${surface}?`,
      about_todo_id: work,
    });
    const id = asked.body.todo.id as number;
    await expect.poll(() => slackPosted(id)).toBe(true);
    // Its message is posted and its sending over: a verdict during the post would rightly
    // queue one more update (send-slack-message.ts), and this is about the verdict's own.
    await expect
      .poll(
        async () =>
          (
            await server.sql`
              select state from outbox where todo_id = ${id} and write_back = 'message'`
          )[0]?.state,
      )
      .toBe('sent');

    await allow(id);
    await expect
      .poll(async () => (await server.api(coder, 'GET', `/todos/${id}`)).body.todo.verdict)
      .toBe('allow');
    const { history } = (await server.api(coder, 'GET', `/todos/${id}`)).body;
    expect(history.filter((event: { action: string }) => event.action === 'approved')).toEqual([
      expect.objectContaining({ actor: 'coder', via }),
    ]);

    // One verdict wake: a marker sent now arrives after every wake sent before it.
    await server.sql`select pg_notify(${wakeChannel(server.schema)}, ${JSON.stringify({ todo_id: -id })})`;
    await expect.poll(() => heard.some((wake) => wake.todo_id === -id)).toBe(true);
    expect(heard.filter((wake) => wake.todo_id === id).map((wake) => wake.event)).toEqual([
      'approval',
      'verdict',
    ]);

    // Slack's message is updated from that one wake: one update queued, and sent.
    await expect.poll(() => slackUpdates(id).length).toBe(1);
    const queued = await server.sql`
      select id from outbox where todo_id = ${id} and write_back = 'message_update'`;
    expect(queued).toHaveLength(1);
  },
);
