import { afterAll, beforeAll, expect, test } from 'vitest';
import { createCliHome, parseJson, runCli, type CliHome } from '../cli/support/run-cli.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import {
  BOT_TOKEN,
  BOT_USER,
  directMessage,
  postToSlackEndpoint,
  SIGNING_SECRET,
  startFakeSlack,
  TEAM,
} from './support/fake-slack.js';

// `switchboard slack …` and `switchboard notifications`, run as a user would, against a server
// whose Slack Web API is a fake at SWITCHBOARD_SLACK_API_URL: from adding the app to a verdict
// given in the CLI that updates the approval's Slack message.
let server: TestServer;
let slack: Awaited<ReturnType<typeof startFakeSlack>>;
let home: CliHome;
let admin: Record<string, string>;
let alice: Record<string, string>;
let aliceAgent: string;

beforeAll(async () => {
  slack = await startFakeSlack();
  [server, home] = await Promise.all([
    startTestServer({ slack: { apiUrl: slack.url, sweepMs: 200 } }),
    createCliHome(),
  ]);
  admin = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: server.adminToken };
  const token = (await server.api(server.adminToken, 'POST', '/humans', { name: 'alice' })).body
    .token as string;
  alice = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: token };
  aliceAgent = (await server.api(token, 'POST', '/agents', { name: 'alice-bot', queues: ['work'] }))
    .body.token;
});
afterAll(async () => {
  await server?.stop();
  await slack?.close();
  await home?.remove();
});

test("regression: slack add asked Slack about the token before it checked the signing secret's format, and said one problem at a time", async () => {
  const asked = slack.callsTo('auth.test').length;
  // Nothing is asked of anyone: on a server that does not exist, a request would be exit 4.
  const nowhere = {
    ...home.env,
    SWITCHBOARD_URL: 'http://127.0.0.1:9',
    SWITCHBOARD_TOKEN: 'sbk_x',
  };
  const all = await runCli(
    [
      'slack',
      'add',
      '--bot-token',
      'xoxp-user-token',
      '--signing-secret',
      'not-hex',
      '--client-id',
      'abc',
    ],
    nowhere,
  );
  expect(all).toMatchObject({ code: 2, stdout: '' });
  expect(all.stderr).toBe(
    "a signing secret is Slack's 32 hexadecimal characters (Basic Information → App Credentials); a bot token starts xoxb- (OAuth & Permissions → Bot User OAuth Token); a client id goes with its client secret: give both, or neither; a client id is Slack's digits and dots (Basic Information → App Credentials)\n",
  );
  // The server checks the same before it calls Slack, for whoever calls its API.
  const put = await server.api(server.adminToken, 'PUT', '/slack/app', {
    bot_token: BOT_TOKEN,
    signing_secret: 'not-hex',
  });
  expect(put.status).toBe(400);
  expect(put.body.error).toBe(
    "a signing secret is Slack's 32 hexadecimal characters (Basic Information → App Credentials)",
  );
  expect(slack.callsTo('auth.test')).toHaveLength(asked);
  expect(parseJson(await runCli(['slack', 'show', '--json'], admin)).app).toBeNull();
});

test('from slack add to a verdict given in the CLI that updates the Slack message', async () => {
  // A human who is not an admin cannot set Slack up; nor can anyone without a signing secret.
  const refused = await runCli(
    ['slack', 'add', '--bot-token', BOT_TOKEN, '--signing-secret', SIGNING_SECRET],
    alice,
  );
  expect(refused.code).toBe(3);
  expect(refused.stderr.trim().split('\n')).toHaveLength(1);
  const usage = await runCli(['slack', 'add', '--bot-token', BOT_TOKEN], admin);
  expect(usage.code).toBe(2);
  expect(usage.stderr).toMatch(/signing secret/);

  // A token Slack refuses is refused, in Slack's words, and nothing is saved.
  slack.answerNext('auth.test', { body: { ok: false, error: 'invalid_auth' } });
  const bad = await runCli(
    ['slack', 'add', '--bot-token', BOT_TOKEN, '--signing-secret', SIGNING_SECRET],
    admin,
  );
  expect(bad.code).toBe(3);
  expect(bad.stderr).toMatch(/Slack refused the bot token: Slack said invalid_auth/);
  expect(bad.stderr.trim().split('\n')).toHaveLength(1);
  expect(parseJson(await runCli(['slack', 'show', '--json'], admin)).app).toBeNull();

  // Added, from the environment: the workspace is Slack's answer; no token or secret comes back.
  const added = await runCli(['slack', 'add', '--json'], {
    ...admin,
    SLACK_BOT_TOKEN: BOT_TOKEN,
    SLACK_SIGNING_SECRET: SIGNING_SECRET,
  });
  expect(added.code, added.stderr).toBe(0);
  expect(added.stdout).not.toContain(BOT_TOKEN);
  expect(added.stdout).not.toContain(SIGNING_SECRET);
  expect(parseJson(added)).toMatchObject({
    app: { team_id: TEAM, bot_user_id: BOT_USER, installed: true },
    events_url: `${server.url}/api/slack/events`,
    interactions_url: `${server.url}/api/slack/interactions`,
  });
  expect(slack.callsTo('auth.test').at(-1)?.token).toBe(BOT_TOKEN);
  const [sealed] = await server.sql<{ bot_token: Buffer; signing_secret: Buffer }[]>`
    select bot_token, signing_secret from slack_apps`;
  expect(sealed!.bot_token.toString('latin1')).not.toContain(BOT_TOKEN);
  expect(sealed!.signing_secret.toString('latin1')).not.toContain(SIGNING_SECRET);

  // The manifest names this server.
  const manifest = await runCli(['slack', 'manifest'], admin);
  expect(manifest.code).toBe(0);
  expect(manifest.stdout).toContain(`request_url: ${server.url}/api/slack/interactions`);
  expect(manifest.stdout).not.toContain('switchboard.example.com');

  // Alice links her Slack user with the code the CLI printed, sent to the bot in a DM.
  const linkCode = await runCli(['slack', 'link', '--json'], alice);
  expect(linkCode.code, linkCode.stderr).toBe(0);
  const { code } = parseJson(linkCode) as { code: string };
  expect(code).toMatch(/^[A-Z2-9]{4}-[A-Z2-9]{4}$/);
  const dm = await postToSlackEndpoint(
    server.url,
    '/api/slack/events',
    directMessage({ user: 'U0ALICE01', text: code.toLowerCase(), eventId: 'Ev0CLILINK1' }),
  );
  expect(dm.status).toBe(200);
  await expect
    .poll(async () => parseJson(await runCli(['slack', 'show', '--json'], alice)).link)
    .toMatchObject({ slack_user_id: 'U0ALICE01', team_id: TEAM, linked_via: 'code' });
  // The code works once.
  expect((await server.sql`select count(*)::int as n from slack_link_codes`)[0]!.n).toBe(0);

  // An approval for alice arrives as a message; her CLI's verdict updates it.
  const asked = await server.api(aliceAgent, 'POST', '/approvals', { question: 'ship it?' });
  expect(asked.status).toBe(201);
  const id = asked.body.todo.id as number;
  await expect
    .poll(() =>
      slack
        .callsTo('chat.postMessage')
        .some((call) => JSON.stringify(call.args.blocks ?? []).includes(`approval:${id}`)),
    )
    .toBe(true);
  const approved = await runCli(['todo', 'approve', String(id), '--note', 'go'], alice);
  expect(approved.code, approved.stderr).toBe(0);
  await expect
    .poll(() =>
      slack
        .callsTo('chat.update')
        .map((call) => JSON.stringify(call.args.blocks))
        .find((blocks) => blocks.includes(`#${id}`)),
    )
    .toMatch(/Allowed by alice via cli/);
  const update = slack
    .callsTo('chat.update')
    .find((call) => JSON.stringify(call.args.blocks).includes(`#${id}`))!;
  expect(JSON.stringify(update.args.blocks)).not.toContain('approval_allow');
  expect(update.args.channel).toBe('D0ALICE01');
});

test('notifications: shown, turned off and on; slack channel and unlink', async () => {
  const shown = await runCli(['notifications'], alice);
  expect(shown).toMatchObject({ code: 0, stderr: '' });
  expect(shown.stdout).toBe('web-push  on\nslack     on\nwebhook   on\n');
  const off = parseJson(await runCli(['notifications', '--slack', 'off', '--json'], alice));
  expect(off.preferences).toEqual({ web_push: true, slack: false, webhook: true });
  const on = parseJson(await runCli(['notifications', '--slack', 'on', '--json'], alice));
  expect(on.preferences.slack).toBe(true);
  const badWay = await runCli(['notifications', '--slack', 'maybe'], alice);
  expect(badWay.code).toBe(2);

  const bothOrNeither = await runCli(['slack', 'channel'], alice);
  expect(bothOrNeither.code).toBe(2);
  const badChannel = await runCli(['slack', 'channel', '#general'], alice);
  expect(badChannel.code).toBe(3);
  expect(badChannel.stderr).toMatch(/Slack's id of it/);
  const channel = parseJson(await runCli(['slack', 'channel', 'C0APPROVE', '--json'], alice));
  expect(channel.link.channel_id).toBe('C0APPROVE');
  const dm = parseJson(await runCli(['slack', 'channel', '--dm', '--json'], alice));
  expect(dm.link.channel_id).toBeNull();

  const unlinked = await runCli(['slack', 'unlink'], alice);
  expect(unlinked).toMatchObject({ code: 0, stdout: 'Slack user unlinked\n' });
  const again = await runCli(['slack', 'unlink'], alice);
  expect(again.code).toBe(3);
  expect(again.stderr).toMatch(/not linked/);
  expect(parseJson(await runCli(['slack', 'show', '--json'], alice)).link).toBeNull();
});
