import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { addHuman } from '../web/support/console.js';
import { signInByFetch, type FetchSession } from '../web/support/push.js';
import {
  BOT_TOKEN,
  directMessage,
  postToSlackEndpoint,
  SIGNING_SECRET,
  startFakeSlack,
  TEAM,
} from './support/fake-slack.js';

// The console's Slack page, as a browser without JavaScript uses it: a session, its forms with
// their CSRF token and Origin. Linking from the console, unlinking, the notification
// preferences, and a bot token Slack refused said on the page.
let server: TestServer;
let slack: Awaited<ReturnType<typeof startFakeSlack>>;
let token: string;
let session: FetchSession;

beforeAll(async () => {
  slack = await startFakeSlack();
  server = await startTestServer({ slack: { apiUrl: slack.url } });
  expect(
    (
      await server.api(server.adminToken, 'PUT', '/slack/app', {
        bot_token: BOT_TOKEN,
        signing_secret: SIGNING_SECRET,
      })
    ).status,
  ).toBe(200);
  token = await addHuman(server, 'carol');
  session = await signInByFetch(server, token);
});
afterAll(async () => {
  await server?.stop();
  await slack?.close();
});

const page = async () => {
  const response = await fetch(`${server.url}/slack`, { headers: { cookie: session.cookie } });
  expect(response.status).toBe(200);
  return response.text();
};
const submit = (path: string, fields: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      cookie: session.cookie,
      origin: server.url,
    },
    body: new URLSearchParams({ _csrf: session.csrf, ...fields }),
    redirect: 'manual',
  });

test('a human links from the console with a code sent to the bot, and unlinks at once', async () => {
  const before = await page();
  expect(before).toContain(`(${TEAM})`);
  expect(before).toContain('Your Slack user is not linked');
  expect(before).not.toContain(BOT_TOKEN);

  const coded = await submit('/slack/link-code');
  expect(coded.status).toBe(200);
  const code = /aria-label="Link code">([A-Z2-9]{4}-[A-Z2-9]{4})</.exec(await coded.text())?.[1];
  expect(code).toBeDefined();
  expect(
    (
      await postToSlackEndpoint(
        server.url,
        '/api/slack/events',
        directMessage({ user: 'U0CAROL01', text: code!, eventId: 'Ev0CONSOLE1' }),
      )
    ).status,
  ).toBe(200);
  await expect.poll(page).toContain('Your Slack user <strong>U0CAROL01</strong> is linked');

  const unlinked = await submit('/slack/unlink');
  expect(unlinked.status).toBe(303);
  expect(await page()).toContain('Your Slack user is not linked');
  expect((await server.api(token, 'GET', '/slack')).body.link).toBeNull();
});

test('the notification preferences form sets every way it shows', async () => {
  const saved = await submit('/slack/notifications', { web_push: 'on', webhook: 'on' });
  expect(saved.status).toBe(303);
  expect((await server.api(token, 'GET', '/notifications')).body.preferences).toEqual({
    web_push: true,
    slack: false,
    webhook: true,
  });
  expect(await page()).toMatch(/name="slack"\s*\/>/);
  await submit('/slack/notifications', { web_push: 'on', slack: 'on', webhook: 'on' });
  expect((await server.api(token, 'GET', '/notifications')).body.preferences.slack).toBe(true);
});

test('a form without its CSRF token changes nothing', async () => {
  const forged = await fetch(`${server.url}/slack/notifications`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      cookie: session.cookie,
      origin: server.url,
    },
    body: new URLSearchParams({}),
    redirect: 'manual',
  });
  expect(forged.status).toBe(403);
  expect((await server.api(token, 'GET', '/notifications')).body.preferences).toEqual({
    web_push: true,
    slack: true,
    webhook: true,
  });
});

test('Slack saying the app was uninstalled is shown on the page until the token is replaced', async () => {
  const event = JSON.stringify({
    token: 'deprecated-verification-token',
    team_id: TEAM,
    api_app_id: 'A0SWITCHBD',
    event: { type: 'app_uninstalled' },
    type: 'event_callback',
    event_id: 'Ev0UNINSTALL',
    event_time: 1700000005,
  });
  expect((await postToSlackEndpoint(server.url, '/api/slack/events', event)).status).toBe(200);
  await expect.poll(page).toMatch(/role="alert">\s*Slack refused the bot token/);
  expect(await page()).toContain('Slack said app_uninstalled');

  const replaced = await server.api(server.adminToken, 'PUT', '/slack/app', {
    bot_token: BOT_TOKEN,
    signing_secret: SIGNING_SECRET,
  });
  expect(replaced.body.app.token_refused_at).toBeNull();
  expect(await page()).not.toContain('Slack refused the bot token');
});
