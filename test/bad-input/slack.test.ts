import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  BAD_BODIES,
  chunked,
  countRows,
  expectNothingLeaked,
  postDeclaringLength,
  readBad,
  STRINGS,
} from '../support/bad-input.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import {
  BOT_TOKEN,
  postToSlackEndpoint,
  pressPayload,
  SIGNING_SECRET,
  slackSignature,
  startFakeSlack,
} from '../slack/support/fake-slack.js';

// The bad-input corpus thrown at Slack's two endpoints, POST /api/slack/interactions and
// /api/slack/events: every refusal is a 4xx `{error, code}` that changes nothing; a press that is
// signed and readable but names nothing switchboard sent is acknowledged (Slack would show an
// error to the presser otherwise) and changes nothing; the server keeps answering throughout.

const INTERACTIONS = '/api/slack/interactions';
const EVENTS = '/api/slack/events';
let server: TestServer;
let slack: Awaited<ReturnType<typeof startFakeSlack>>;
let agent: string;
let approval: number;

beforeAll(async () => {
  slack = await startFakeSlack();
  // Many refused signatures come from this one address: its failure limit is out of the way.
  server = await startTestServer({
    slack: { apiUrl: slack.url },
    limits: { authFailures: 10_000 },
  });
  expect(
    (
      await server.api(server.adminToken, 'PUT', '/slack/app', {
        bot_token: BOT_TOKEN,
        signing_secret: SIGNING_SECRET,
      })
    ).status,
  ).toBe(200);
  agent = (await server.api(server.adminToken, 'POST', '/agents', { name: 'asker', queues: ['q'] }))
    .body.token;
  approval = (await server.api(agent, 'POST', '/approvals', { question: 'ok?' })).body.todo.id;
});
afterAll(async () => {
  await server?.stop();
  await slack?.close();
});

/** Row counts, with Slack's own tables and the approval's state. */
async function snapshot() {
  const [slackRows] = await server.sql`
    select (select count(*)::int from slack_links) as links,
           (select count(*)::int from slack_events) as events,
           (select count(*)::int from slack_messages) as messages,
           (select state::text from todos where id = ${approval}) as approval`;
  return { ...(await countRows(server.sql)), ...slackRows };
}

/** A refusal: the status and code given, `{error, code}` and nothing else, nothing changed or leaked. */
async function expectRefused(
  send: () => Promise<{ status: number; text: string }>,
  status: number,
  code: string,
): Promise<string> {
  const before = await snapshot();
  const answer = await send();
  expect(answer.status, answer.text).toBe(status);
  const body = JSON.parse(answer.text) as { error: string; code: string };
  expect(body).toEqual({ error: expect.any(String), code });
  expectNothingLeaked(answer.text);
  expect(await snapshot()).toEqual(before);
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  return body.error;
}

/** Acknowledged (200, as Slack needs) and nothing changed: no verdict, no call to Slack. */
async function expectIgnored(send: () => Promise<{ status: number; text: string }>) {
  const before = await snapshot();
  const calls = slack.calls.length;
  const answer = await send();
  expect(answer.status, answer.text).toBe(200);
  expectNothingLeaked(answer.text);
  expect(await snapshot()).toEqual(before);
  expect(slack.calls.length).toBe(calls);
}

const form = (payload: string) => new URLSearchParams({ payload }).toString();
const press = (fields: Record<string, unknown>) => {
  const payload = JSON.parse(
    new URLSearchParams(
      pressPayload({ user: 'U0NOBODY1', actionId: 'approval_allow', todoId: approval }),
    ).get('payload')!,
  );
  return form(JSON.stringify({ ...payload, ...fields }));
};

describe('refused: 4xx {error, code}, nothing changed', () => {
  test.each(BAD_BODIES.map((name) => [name]))(
    'the corpus body %s, correctly signed, as an interaction and as an event',
    async (name) => {
      const body = readBad(`bodies/${name}`);
      await expectRefused(
        () => postToSlackEndpoint(server.url, INTERACTIONS, body),
        400,
        'invalid',
      );
      await expectRefused(() => postToSlackEndpoint(server.url, EVENTS, body), 400, 'invalid');
    },
  );

  test.each([
    ['not JSON', 'not json'],
    ['a JSON string', '"block_actions"'],
    ['a JSON number', '42'],
    ['null', 'null'],
    ['an array', '[{"type":"block_actions"}]'],
    ['nested 10,000 levels deep', `${'['.repeat(10_000)}${']'.repeat(10_000)}`],
  ])('an interaction whose payload is %s: 400', async (_, payload) => {
    await expectRefused(
      () => postToSlackEndpoint(server.url, INTERACTIONS, form(payload)),
      400,
      'invalid',
    );
  });

  test.each([
    ['no payload field', 'type=block_actions'],
    ['a press without actions', press({ actions: [] })],
    ['a press without a user', press({ user: null })],
    ['a press by a user id of 10,000 characters', press({ user: { id: 'U'.repeat(10_000) } })],
    ['a press by a user id with SQL in it', press({ user: { id: "U1'; drop table todos;--" } })],
    ['a modal without its metadata', press({ type: 'view_submission', view: {} })],
    [
      'a modal whose metadata names no approval',
      press({
        type: 'view_submission',
        view: { callback_id: 'approval_deny_note', private_metadata: '{"todo_id":"all"}' },
      }),
    ],
  ])('%s: 400', async (_, body) => {
    await expectRefused(() => postToSlackEndpoint(server.url, INTERACTIONS, body), 400, 'invalid');
  });

  test.each([
    ['an event envelope of an unknown type', '{"type":"anything"}'],
    ['an event_callback without its event', '{"type":"event_callback","team_id":"T0SWITCH1"}'],
    ['url_verification without a challenge', '{"type":"url_verification"}'],
  ])('%s: 400', async (_, body) => {
    await expectRefused(() => postToSlackEndpoint(server.url, EVENTS, body), 400, 'invalid');
  });

  test.each([
    ['an interaction as JSON', INTERACTIONS, 'application/json'],
    ['an interaction as text/plain', INTERACTIONS, 'text/plain'],
    ['an interaction with no content type', INTERACTIONS, ''],
    ['an event as a form', EVENTS, 'application/x-www-form-urlencoded'],
    ['an event in another charset', EVENTS, 'application/json; charset=utf-16'],
  ] as const)('%s: 415', async (_, path, contentType) => {
    await expectRefused(
      () => postToSlackEndpoint(server.url, path, '{}', { contentType }),
      415,
      'unsupported_media_type',
    );
  });

  test('a compressed body: 415', async () => {
    await expectRefused(
      () =>
        postToSlackEndpoint(server.url, INTERACTIONS, press({}), {
          headers: { 'content-encoding': 'gzip' },
        }),
      415,
      'unsupported_media_type',
    );
  });

  test('every forged or replayed signature: 401, and the press decides nothing', async () => {
    const body = press({});
    const now = Math.floor(Date.now() / 1000);
    const signed = (headers: Record<string, string>) => () =>
      postToSlackEndpoint(server.url, INTERACTIONS, body, { headers });
    const cases: Record<string, string>[] = [
      { 'x-slack-signature': '' },
      { 'x-slack-signature': 'v1=' + '0'.repeat(64) },
      { 'x-slack-signature': `v0=${'z'.repeat(64)}` },
      { 'x-slack-signature': slackSignature('0'.repeat(32), now, body) },
      { 'x-slack-signature': slackSignature(SIGNING_SECRET, now, `${body} `) },
      { 'x-slack-request-timestamp': '' },
      { 'x-slack-request-timestamp': 'yesterday' },
      { 'x-slack-request-timestamp': String(now - 301) },
      { 'x-slack-request-timestamp': '9'.repeat(40) },
    ];
    for (const headers of cases) await expectRefused(signed(headers), 401, 'unauthenticated');
    await expectRefused(
      () => postToSlackEndpoint(server.url, INTERACTIONS, body, { unsigned: true }),
      401,
      'unauthenticated',
    );
  });

  test('a body declared over 1 MB: 413 before it is read', async () => {
    await expectRefused(
      () =>
        postDeclaringLength(new URL(INTERACTIONS, server.url), {
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': String(1024 * 1024 + 1),
        }),
      413,
      'too_large',
    );
  });

  test('a chunked body over 1 MB, correctly signed: 413', async () => {
    const body = Buffer.from(`${press({})}&pad=${'a'.repeat(1024 * 1024)}`);
    const timestamp = Math.floor(Date.now() / 1000);
    await expectRefused(
      async () => {
        const response = await fetch(`${server.url}${INTERACTIONS}`, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            'x-slack-request-timestamp': String(timestamp),
            'x-slack-signature': slackSignature(SIGNING_SECRET, timestamp, body),
          },
          body: chunked(body, 64 * 1024),
          duplex: 'half',
        });
        return { status: response.status, text: await response.text() };
      },
      413,
      'too_large',
    );
  });
});

describe('acknowledged, and nothing changed', () => {
  test.each(STRINGS.stored_as_sent.concat(STRINGS.not_storable).map((s) => [s.name, s.text]))(
    "a press whose button's value is %s",
    async (_, text) => {
      await expectIgnored(() =>
        postToSlackEndpoint(
          server.url,
          INTERACTIONS,
          press({
            actions: [{ action_id: 'approval_allow', value: text.slice(0, 2000), type: 'button' }],
          }),
        ),
      );
    },
  );

  test('a press of a button switchboard never sent', async () => {
    await expectIgnored(() =>
      postToSlackEndpoint(
        server.url,
        INTERACTIONS,
        press({ actions: [{ action_id: 'delete_everything', value: String(approval) }] }),
      ),
    );
  });

  test('an interaction of a type switchboard does not take (a shortcut)', async () => {
    await expectIgnored(() =>
      postToSlackEndpoint(server.url, INTERACTIONS, form('{"type":"shortcut","callback_id":"x"}')),
    );
  });
});
