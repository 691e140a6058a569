import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { FAKE } from '../support/fake-credentials.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { SLACK_TIMESTAMP_TOLERANCE_SECONDS } from '../../src/integrations/slack/verify-slack-request.js';
import {
  BOT_TOKEN,
  BOT_USER,
  denySubmission,
  directMessage,
  OTHER_TEAM,
  postToSlackEndpoint,
  pressPayload,
  SIGNING_SECRET,
  startFakeSlack,
  TEAM,
} from './support/fake-slack.js';

// A server with a fake Slack Web API behind SWITCHBOARD_SLACK_API_URL; Slack's requests to the
// server are signed for real, in the shapes Slack documents. Each test has humans of its own.
let server: TestServer;
let slack: Awaited<ReturnType<typeof startFakeSlack>>;
let n = 0;

beforeAll(async () => {
  slack = await startFakeSlack();
  server = await startTestServer({
    slack: { apiUrl: slack.url, sweepMs: 200 },
    // Write-back retries quickly: a 5xx is tried again within the test's patience.
    sourcesTuning: { writeBack: { pollIntervalMs: 100, retryBaseMs: 200 } },
  });
  const added = await server.api(server.adminToken, 'PUT', '/slack/app', {
    bot_token: BOT_TOKEN,
    signing_secret: SIGNING_SECRET,
  });
  expect(added.status).toBe(200);
});
afterAll(async () => {
  await server?.stop();
  await slack?.close();
});

interface Human {
  name: string;
  token: string;
  agent: string;
  slackUser: string;
}

/** A human with an agent, and (unless told not to) their Slack user linked by a code in a DM. */
async function human(options: { admin?: boolean; link?: boolean } = {}): Promise<Human> {
  const i = ++n;
  const name = `human-${i}`;
  const token = (
    await server.api(server.adminToken, 'POST', '/humans', {
      name,
      is_admin: options.admin ?? false,
    })
  ).body.token;
  const agent = (
    await server.api(token, 'POST', '/agents', { name: `agent-${i}`, queues: ['work'] })
  ).body.token;
  const slackUser = `U0HUMAN${String(i).padStart(3, '0')}`;
  if (options.link !== false) await link(token, slackUser);
  return { name, token, agent, slackUser };
}

async function link(token: string, slackUser: string): Promise<void> {
  const { code } = (await server.api(token, 'POST', '/slack/link-code')).body;
  const sent = await postToSlackEndpoint(
    server.url,
    '/api/slack/events',
    directMessage({
      user: slackUser,
      text: `here: ${code}`,
      eventId: `Ev${slackUser}${Date.now()}`,
    }),
  );
  expect(sent.status).toBe(200);
  await expect
    .poll(async () => (await server.api(token, 'GET', '/slack')).body.link?.slack_user_id)
    .toBe(slackUser);
  // The bot's reply, so that no test's answers from the fake are taken by it.
  await expect
    .poll(() =>
      slack
        .callsTo('chat.postMessage')
        .some((c) => c.args.channel === `D${slackUser.slice(1)}` && /^Linked/.test(c.args.text)),
    )
    .toBe(true);
}

async function ask(who: Human, question = 'may I deploy?', body?: string): Promise<number> {
  const asked = await server.api(who.agent, 'POST', '/approvals', {
    question,
    ...(body && { body }),
  });
  expect(asked.status).toBe(201);
  return asked.body.todo.id as number;
}

const posted = (id: number) =>
  slack
    .callsTo('chat.postMessage')
    .find((call) => JSON.stringify(call.args.blocks ?? []).includes(`approval:${id}`));
const updates = (id: number) =>
  slack
    .callsTo('chat.update')
    .filter((call) => JSON.stringify(call.args.blocks).includes(`#${id}`));
const ephemeralsTo = (user: string) =>
  slack.callsTo('chat.postEphemeral').filter((call) => call.args.user === user);
const todoOf = async (who: Human, id: number) =>
  (await server.api(who.token, 'GET', `/todos/${id}`)).body;
const press = (user: string, id: number, actionId = 'approval_allow', team = TEAM) =>
  postToSlackEndpoint(
    server.url,
    '/api/slack/interactions',
    pressPayload({ user, actionId, todoId: id, team }),
  );

describe('a linked human decides in Slack', () => {
  test('an approval is sent as a Block Kit message with the question, the input, the expiry, Allow and Deny', async () => {
    const alice = await human();
    const id = await ask(
      alice,
      'may I run the migration?',
      'psql -c "drop table users" <!channel>\u0007',
    );
    await expect.poll(() => posted(id)).toBeDefined();
    const call = posted(id)!;
    expect(call.token).toBe(BOT_TOKEN);
    expect(call.args.channel).toBe(alice.slackUser);
    const text = JSON.stringify(call.args.blocks);
    expect(text).toContain(`asked by *agent-${n}*`);
    expect(text).toContain('may I run the migration?');
    // The input, neutralised (the bell is gone) and in plain text, where Slack formats nothing.
    const input = call.args.blocks.find((b: any) => b.text?.text?.startsWith('psql'));
    expect(input.text).toEqual({
      type: 'plain_text',
      text: 'psql -c "drop table users" <!channel>',
      emoji: false,
    });
    expect(text).toContain('Expires <!date^');
    const actions = call.args.blocks.find((b: any) => b.type === 'actions');
    expect(actions.elements.map((e: any) => [e.text.text, e.action_id, e.value])).toEqual([
      ['Allow', 'approval_allow', String(id)],
      ['Deny', 'approval_deny', String(id)],
    ]);
    const history = (await todoOf(alice, id)).history as any[];
    await expect
      .poll(async () =>
        ((await todoOf(alice, id)).history as any[])
          .filter((e) => e.data?.path === 'slack')
          .map((e) => e.data.outcome),
      )
      .toEqual(['delivered']);
    expect(
      history.find((e) => e.action === 'wake_stored')?.data.reason ?? 'Slack tells them',
    ).toContain('Slack tells them');
  });

  test('a credential in what an approval asks reaches Slack only as [secret:ID]', async () => {
    const alice = await human();
    const token = FAKE.githubClassic();
    const id = await ask(
      alice,
      `may I push with ${token}?`,
      `git push https://x:${token}@github.com/acme/api`,
    );
    await expect.poll(() => posted(id)).toBeDefined();
    const message = JSON.stringify(posted(id)!.args);
    expect(message).not.toContain(token);
    const [, secretId] = /\[secret:([a-z2-9]{12})\]/.exec(message)!;
    expect(message).toContain(`may I push with [secret:${secretId}]?`);
    // The human who decides may read it before deciding.
    const shown = await server.api(alice.token, 'GET', `/secrets/${secretId}`);
    expect(shown.body.secret.value).toBe(token);
  });

  test('a long input is cut, with a link to all of it on the console', async () => {
    const alice = await human();
    const id = await ask(alice, 'may I apply this diff?', 'x'.repeat(5000));
    await expect.poll(() => posted(id)).toBeDefined();
    const blocks = posted(id)!.args.blocks as any[];
    expect(blocks.find((b) => b.text?.text?.startsWith('xxx')).text.text).toHaveLength(2501);
    expect(JSON.stringify(blocks)).toContain(
      `${server.url}/approvals/${id}|read all of it on switchboard`,
    );
  });

  test('Allow, pressed by the assignee, is recorded via slack, sent on, and the message shows who decided', async () => {
    const alice = await human();
    const id = await ask(alice);
    await expect.poll(() => posted(id)).toBeDefined();
    const answer = await press(alice.slackUser, id);
    expect(answer.status).toBe(200);
    expect(answer.text).toBe('');
    await expect.poll(async () => (await todoOf(alice, id)).todo.verdict).toBe('allow');
    const { todo, history } = await todoOf(alice, id);
    expect(todo.decided_by).toBe(alice.name);
    expect((history as any[]).find((e) => e.action === 'approved')).toMatchObject({
      actor: alice.name,
      via: 'slack',
    });
    // The agent that asked hears the verdict like any other.
    const asked = await server.api(alice.agent, 'GET', `/todos/${id}`);
    expect(asked.body.todo).toMatchObject({ verdict: 'allow', decided_by: alice.name });
    await expect.poll(() => updates(id).length).toBeGreaterThan(0);
    const update = updates(id).at(-1)!;
    expect(update.args.channel).toBe(`D${alice.slackUser.slice(1)}`);
    expect(update.args.ts).toBe(posted(id)!.answer.ts);
    expect(JSON.stringify(update.args.blocks)).toContain(`Allowed by ${alice.name} via slack`);
    expect(update.args.blocks.some((b: any) => b.type === 'actions')).toBe(false);
  });

  test('Deny opens a modal for a note; submitting it denies with the note', async () => {
    const alice = await human();
    const id = await ask(alice);
    await expect.poll(() => posted(id)).toBeDefined();
    expect((await press(alice.slackUser, id, 'approval_deny')).status).toBe(200);
    await expect
      .poll(() =>
        slack
          .callsTo('views.open')
          .find((c) => c.args.view.private_metadata.includes(`"todo_id":${id}`)),
      )
      .toBeDefined();
    const modal = slack
      .callsTo('views.open')
      .find((c) => c.args.view.private_metadata.includes(`"todo_id":${id}`))!;
    expect(modal.args.trigger_id).toMatch(/^\d+\./);
    expect(modal.args.view.submit.text).toBe('Deny');
    // Nothing is decided by opening the modal.
    expect((await todoOf(alice, id)).todo.state).toBe('pending');
    const submitted = await postToSlackEndpoint(
      server.url,
      '/api/slack/interactions',
      denySubmission({
        user: alice.slackUser,
        privateMetadata: modal.args.view.private_metadata,
        note: 'not on a Friday',
      }),
    );
    expect(submitted.status).toBe(200);
    await expect.poll(async () => (await todoOf(alice, id)).todo.verdict).toBe('deny');
    expect((await todoOf(alice, id)).todo.summary).toBe('not on a Friday');
    await expect
      .poll(() => JSON.stringify(updates(id).at(-1)?.args.blocks ?? ''))
      .toContain(`Denied by ${alice.name} via slack`);
  });

  test('an interaction is acknowledged before its work: a Slack that never answers views.open does not hold the 200', async () => {
    const alice = await human();
    const id = await ask(alice);
    await expect.poll(() => posted(id)).toBeDefined();
    slack.answerNext('views.open', { hang: true });
    const answer = await press(alice.slackUser, id, 'approval_deny');
    expect(answer.status).toBe(200);
    await expect
      .poll(() =>
        slack
          .callsTo('views.open')
          .some((c) => c.args.view.private_metadata.includes(`"todo_id":${id}`)),
      )
      .toBe(true);
  });

  test('a second press answers, for the presser alone, what was decided', async () => {
    const alice = await human();
    const id = await ask(alice);
    await expect.poll(() => posted(id)).toBeDefined();
    await press(alice.slackUser, id);
    await expect.poll(async () => (await todoOf(alice, id)).todo.verdict).toBe('allow');
    await press(alice.slackUser, id, 'approval_deny');
    await expect
      .poll(() => ephemeralsTo(alice.slackUser).map((c) => c.args.text))
      .toContainEqual(
        expect.stringMatching(
          new RegExp(`was already decided: allow by ${alice.name}.*Nothing changed`),
        ),
      );
    expect((await todoOf(alice, id)).todo.verdict).toBe('allow');
  });
});

describe('only the owning human decides', () => {
  test('an unlinked Slack user’s press decides nothing and is told how to link', async () => {
    const alice = await human();
    const id = await ask(alice);
    await expect.poll(() => posted(id)).toBeDefined();
    const stranger = 'U0STRANGR';
    expect((await press(stranger, id)).status).toBe(200);
    await expect
      .poll(() => ephemeralsTo(stranger).map((c) => c.args.text))
      .toContainEqual(expect.stringContaining('switchboard slack link'));
    expect((await todoOf(alice, id)).todo.state).toBe('pending');
  });

  test('a linked human who is not the assignee decides nothing', async () => {
    const alice = await human();
    const bob = await human();
    const id = await ask(alice);
    await expect.poll(() => posted(id)).toBeDefined();
    await press(bob.slackUser, id);
    await expect
      .poll(() => ephemeralsTo(bob.slackUser).map((c) => c.args.text))
      .toContainEqual(expect.stringContaining('is not yours to decide'));
    expect((await todoOf(alice, id)).todo.state).toBe('pending');
    await press(bob.slackUser, id, 'approval_deny');
    await expect.poll(() => ephemeralsTo(bob.slackUser).length).toBe(2);
    expect(
      slack
        .callsTo('views.open')
        .some((c) => c.args.view.private_metadata.includes(`"todo_id":${id}`)),
    ).toBe(false);
    expect((await todoOf(alice, id)).todo.state).toBe('pending');
  });

  test('an admin’s linked Slack user decides, as the console lets an admin', async () => {
    const alice = await human();
    const root = await human({ admin: true });
    const id = await ask(alice);
    await press(root.slackUser, id);
    await expect
      .poll(async () => (await todoOf(alice, id)).todo)
      .toMatchObject({ verdict: 'allow', decided_by: root.name });
  });

  test('unlinking is immediate: the next press decides nothing', async () => {
    const alice = await human();
    const id = await ask(alice);
    await expect.poll(() => posted(id)).toBeDefined();
    expect((await server.api(alice.token, 'DELETE', '/slack/link')).status).toBe(200);
    await press(alice.slackUser, id);
    await expect
      .poll(() => ephemeralsTo(alice.slackUser).map((c) => c.args.text))
      .toContainEqual(expect.stringContaining('not linked'));
    expect((await todoOf(alice, id)).todo.state).toBe('pending');
  });
});

describe('replayed or forged presses are refused and change nothing', () => {
  let alice: Human;
  let id: number;
  // In the tests, not a hook: linking waits with expect.poll.
  const cast = async () => {
    if (alice) return;
    alice = await human();
    id = await ask(alice);
  };

  test('a press signed more than five minutes ago', async () => {
    await cast();
    // A minute past the window either way: the request's own time (a fraction of a second, read
    // as a whole second by the signer) must not carry it back inside.
    const outside = SLACK_TIMESTAMP_TOLERANCE_SECONDS + 60;
    const old = await postToSlackEndpoint(
      server.url,
      '/api/slack/interactions',
      pressPayload({ user: alice.slackUser, actionId: 'approval_allow', todoId: id }),
      {
        timestamp: Math.floor(Date.now() / 1000) - outside,
      },
    );
    expect(old).toMatchObject({ status: 401, json: { code: 'unauthenticated' } });
    const ahead = await postToSlackEndpoint(
      server.url,
      '/api/slack/interactions',
      pressPayload({ user: alice.slackUser, actionId: 'approval_allow', todoId: id }),
      {
        timestamp: Math.floor(Date.now() / 1000) + outside,
      },
    );
    expect(ahead.status).toBe(401);
    expect((await todoOf(alice, id)).todo.state).toBe('pending');
  });

  test('a press with a bad signature, or none', async () => {
    await cast();
    const body = pressPayload({ user: alice.slackUser, actionId: 'approval_allow', todoId: id });
    expect(
      (
        await postToSlackEndpoint(server.url, '/api/slack/interactions', body, {
          secret: 'f'.repeat(32),
        })
      ).status,
    ).toBe(401);
    expect(
      (await postToSlackEndpoint(server.url, '/api/slack/interactions', body, { unsigned: true }))
        .status,
    ).toBe(401);
    // Signed, then one byte changed.
    const timestamp = Math.floor(Date.now() / 1000);
    const { slackSignature } = await import('./support/fake-slack.js');
    const tampered = await postToSlackEndpoint(
      server.url,
      '/api/slack/interactions',
      body.replace(String(id), String(id + 1000)),
      {
        headers: {
          'x-slack-signature': slackSignature(SIGNING_SECRET, timestamp, body),
          'x-slack-request-timestamp': String(timestamp),
        },
      },
    );
    expect(tampered.status).toBe(401);
    expect((await todoOf(alice, id)).todo.state).toBe('pending');
  });

  test('a press from another workspace', async () => {
    await cast();
    const answer = await press(alice.slackUser, id, 'approval_allow', OTHER_TEAM);
    expect(answer).toMatchObject({ status: 403, json: { code: 'forbidden' } });
    expect((await todoOf(alice, id)).todo.state).toBe('pending');
  });
});

describe('one truth on every surface', () => {
  test('a verdict from the API updates the message, naming how it was given', async () => {
    const alice = await human();
    const id = await ask(alice);
    await expect.poll(() => posted(id)).toBeDefined();
    await server.api(alice.token, 'POST', `/todos/${id}/deny`, { note: 'no' });
    await expect
      .poll(() => JSON.stringify(updates(id).at(-1)?.args.blocks ?? ''))
      .toContain(`Denied by ${alice.name} via api`);
  });

  test('an expiry and a cancel update the message, buttons removed', async () => {
    const alice = await human();
    const expiring = (
      await server.api(alice.agent, 'POST', '/approvals', { question: 'quick?', ttl_seconds: 1 })
    ).body.todo.id;
    const canceled = await ask(alice, 'never mind?');
    await expect.poll(() => posted(canceled)).toBeDefined();
    await server.api(alice.token, 'POST', `/todos/${canceled}/cancel`, { reason: 'moot' });
    await expect
      .poll(() => JSON.stringify(updates(canceled).at(-1)?.args.blocks ?? ''))
      .toContain('Canceled');
    await expect
      .poll(() => JSON.stringify(updates(expiring).at(-1)?.args.blocks ?? ''), { timeout: 15_000 })
      .toContain('Expired without a verdict');
    expect(
      updates(expiring)
        .at(-1)!
        .args.blocks.some((b: any) => b.type === 'actions'),
    ).toBe(false);
  });
});

describe('Slack’s failure modes', () => {
  test('a 429 with Retry-After and a 5xx are retried through the outbox', async () => {
    const alice = await human();
    slack.answerNext(
      'chat.postMessage',
      { status: 429, headers: { 'retry-after': '1' }, body: { ok: false, error: 'ratelimited' } },
      { status: 503, body: { ok: false, error: 'service_unavailable' } },
    );
    const id = await ask(alice);
    await expect
      .poll(async () =>
        ((await todoOf(alice, id)).history as any[])
          .filter((e) => e.data?.path === 'slack')
          .map((e) => e.data.outcome),
      )
      .toEqual(['delivered']);
    const tries = slack
      .callsTo('chat.postMessage')
      .filter((c) => c.args.channel === alice.slackUser);
    expect(tries).toHaveLength(3);
  });

  test('Slack’s retries of an event are handled once', async () => {
    const alice = await human({ link: false });
    const { code } = (await server.api(alice.token, 'POST', '/slack/link-code')).body;
    const event = directMessage({ user: alice.slackUser, text: code, eventId: 'Ev0RETRIED1' });
    const replies = () =>
      slack
        .callsTo('chat.postMessage')
        .filter((c) => c.args.channel === `D${alice.slackUser.slice(1)}`);
    await postToSlackEndpoint(server.url, '/api/slack/events', event);
    await expect.poll(() => replies().length).toBe(1);
    const again = await postToSlackEndpoint(server.url, '/api/slack/events', event, {
      headers: { 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' },
    });
    expect(again.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(replies()).toHaveLength(1);
    expect(replies()[0]!.args.text).toContain(`Linked: you are *${alice.name}*`);
  });

  test('url_verification is answered with its challenge, once signed', async () => {
    const body = JSON.stringify({
      token: 'x',
      challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
      type: 'url_verification',
    });
    const answer = await postToSlackEndpoint(server.url, '/api/slack/events', body);
    expect(answer).toMatchObject({
      status: 200,
      json: { challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' },
    });
    expect(
      (await postToSlackEndpoint(server.url, '/api/slack/events', body, { unsigned: true })).status,
    ).toBe(401);
  });
});

describe('where each human is told', () => {
  test('Slack turned off: no message, and an approval that reaches nobody says so', async () => {
    const alice = await human();
    expect(
      (await server.api(alice.token, 'PUT', '/notifications', { slack: false })).body.preferences,
    ).toEqual({
      web_push: true,
      slack: false,
      webhook: true,
    });
    const id = await ask(alice);
    await expect
      .poll(
        async () =>
          ((await todoOf(alice, id)).history as any[]).find((e) => e.action === 'wake_stored')?.data
            .reason,
      )
      .toBe(`nobody was told: ${alice.name} has no session attached and no webhook`);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(posted(id)).toBeUndefined();
  });

  test('a webhook turned off is not rung, and the record says so', async () => {
    const alice = await human({ link: false });
    await server.api(alice.token, 'PUT', '/webhook', {
      url: 'https://hooks.example.com/switchboard',
    });
    await server.api(alice.token, 'PUT', '/notifications', { webhook: false });
    const id = await ask(alice);
    await expect
      .poll(
        async () =>
          ((await todoOf(alice, id)).history as any[]).find((e) => e.action === 'wake_stored')?.data
            .reason,
      )
      .toBe(`nobody was told: ${alice.name} has no session attached and its webhook turned off`);
  });
});

test('a bot token Slack refuses is said once, and nothing more is sent with it', async () => {
  // Last: it leaves the app with a refused token.
  const alice = await human();
  slack.answerNext('chat.postMessage', { body: { ok: false, error: 'token_revoked' } });
  const first = await ask(alice);
  await expect
    .poll(
      async () =>
        (await server.api(server.adminToken, 'GET', '/slack')).body.app.token_refused_reason,
    )
    .toBe('Slack said token_revoked');
  const before = slack.callsTo('chat.postMessage').length;
  const second = await ask(alice);
  await expect
    .poll(
      async () =>
        ((await todoOf(alice, second)).history as any[]).find((e) => e.action === 'wake_stored')
          ?.data.reason,
    )
    .toMatch(/^nobody was told/);
  await new Promise((resolve) => setTimeout(resolve, 400));
  expect(slack.callsTo('chat.postMessage').length).toBe(before);
  expect(first).toBeLessThan(second);
  // Adding the token again (a reinstall) clears it.
  await server.api(server.adminToken, 'PUT', '/slack/app', {
    bot_token: BOT_TOKEN,
    signing_secret: SIGNING_SECRET,
  });
  expect((await server.api(server.adminToken, 'GET', '/slack')).body.app).toMatchObject({
    token_refused_at: null,
    bot_user_id: BOT_USER,
  });
});
