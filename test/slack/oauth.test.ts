import { UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { addHuman } from '../web/support/console.js';
import { signInByFetch, type FetchSession } from '../web/support/push.js';
import { BOT_TOKEN, BOT_USER, SIGNING_SECRET, startFakeSlack, TEAM } from './support/fake-slack.js';

// The console's round trips through Slack, as a browser makes them (the redirect to Slack, then
// Slack's redirect back with a code), with the Web API's side answered by the fake: an admin
// installs the app from the console (OAuth v2), a human links by Sign in with Slack (OpenID
// Connect). A callback from another session, or naming another workspace, changes nothing.
const CLIENT_ID = '1111111111.2222222222';
const CLIENT_SECRET = 'abcdef0123456789abcdef0123456789';
let server: TestServer;
let slack: Awaited<ReturnType<typeof startFakeSlack>>;
let admin: FetchSession;
let dave: { token: string; session: FetchSession };

beforeAll(async () => {
  slack = await startFakeSlack();
  // Slack's key set is read through the outbound module: the fake's loopback address is allowed.
  server = await startTestServer({
    slack: { apiUrl: slack.url },
    outbound: { allow: ['127.0.0.1/32'] },
  });
  // Set up for the console's install: an OAuth client, no bot token yet.
  const added = await server.api(server.adminToken, 'PUT', '/slack/app', {
    signing_secret: SIGNING_SECRET,
    client_id: CLIENT_ID,
    client_secret: CLIENT_SECRET,
  });
  expect(added.body.app).toMatchObject({ installed: false, has_oauth_client: true });
  admin = await signInByFetch(server, server.adminToken);
  const token = await addHuman(server, 'dave');
  dave = { token, session: await signInByFetch(server, token) };
});
afterAll(async () => {
  await server?.stop();
  await slack?.close();
});

/** The id_token Slack gives for a sign-in: its claims, then any of them changed. */
async function idToken(nonce: string, claims: Record<string, unknown> = {}, key?: 'impostor') {
  const now = Math.floor(Date.now() / 1000);
  return slack.idToken(
    {
      iss: 'https://slack.com',
      aud: CLIENT_ID,
      sub: 'U0SIGNEDIN',
      'https://slack.com/user_id': 'U0SIGNEDIN',
      'https://slack.com/team_id': TEAM,
      nonce,
      iat: now,
      exp: now + 300,
      auth_time: now,
      ...claims,
    },
    key,
  );
}

/** Slack's next answer to openid.connect.token carries `id_token`. */
function slackGives(id_token: string) {
  slack.answerNext('openid.connect.token', {
    body: {
      ok: true,
      access_token: 'xoxp-1111-2222-3333-openidtoken',
      token_type: 'Bearer',
      id_token,
    },
  });
}

const get = (path: string, { cookie }: FetchSession) =>
  fetch(`${server.url}${path}`, { headers: { cookie }, redirect: 'manual' });

/** Starts the round trip: where the console sends the browser, and the state it gave Slack. */
async function toSlack(path: string, session: FetchSession) {
  const started = await get(path, session);
  expect(started.status).toBe(303);
  return new URL(started.headers.get('location')!);
}

test('an admin installs the app from the console: the bot token Slack gives is sealed, and the page says where', async () => {
  // A human who is not an admin cannot start it.
  expect((await get('/slack/install', dave.session)).status).toBe(403);

  const slackPage = await toSlack('/slack/install', admin);
  expect(slackPage.origin + slackPage.pathname).toBe('https://slack.com/oauth/v2/authorize');
  expect(Object.fromEntries(slackPage.searchParams)).toMatchObject({
    client_id: CLIENT_ID,
    scope: 'chat:write,im:history',
    redirect_uri: `${server.url}/slack/install/callback`,
  });
  const state = slackPage.searchParams.get('state')!;

  // Slack's answer, taken back in another session (the same admin's, another browser's; a
  // human's who is not an admin), or with a state never given: refused, nothing asked of Slack.
  const otherBrowser = await signInByFetch(server, server.adminToken);
  const elsewhere = await get(`/slack/install/callback?code=c0de&state=${state}`, otherBrowser);
  expect(elsewhere.status).toBe(400);
  expect(await elsewhere.text()).toContain('not for this browser session');
  expect((await get(`/slack/install/callback?code=c0de&state=${state}`, dave.session)).status).toBe(
    403,
  );
  const forged = await get(`/slack/install/callback?code=c0de&state=forged`, admin);
  expect(forged.status).toBe(400);
  expect(slack.callsTo('oauth.v2.access')).toHaveLength(0);

  const back = await get(`/slack/install/callback?code=c0de&state=${state}`, admin);
  expect(back.status).toBe(303);
  expect(back.headers.get('location')).toBe('/slack');
  expect(slack.callsTo('oauth.v2.access')[0]!.args).toMatchObject({
    client_id: CLIENT_ID,
    client_secret: CLIENT_SECRET,
    code: 'c0de',
    redirect_uri: `${server.url}/slack/install/callback`,
  });
  const { app } = (await server.api(server.adminToken, 'GET', '/slack')).body;
  expect(app).toMatchObject({ installed: true, team_id: TEAM, bot_user_id: BOT_USER });
  const [row] = await server.sql<{ bot_token: Buffer }[]>`select bot_token from slack_apps`;
  expect(row!.bot_token.toString('latin1')).not.toContain(BOT_TOKEN);
});

test('a human links by Sign in with Slack, in the app’s workspace only', async () => {
  const slackPage = await toSlack('/slack/sign-in', dave.session);
  expect(slackPage.origin + slackPage.pathname).toBe('https://slack.com/openid/connect/authorize');
  expect(Object.fromEntries(slackPage.searchParams)).toMatchObject({
    response_type: 'code',
    scope: 'openid',
    client_id: CLIENT_ID,
    team: TEAM,
    redirect_uri: `${server.url}/slack/sign-in/callback`,
  });
  const state = slackPage.searchParams.get('state')!;
  const nonce = slackPage.searchParams.get('nonce')!;
  expect(nonce).toMatch(/^[A-Za-z0-9_-]{43}$/);

  // Slack says it was someone in another workspace: refused, nothing linked.
  slackGives(await idToken(nonce, { 'https://slack.com/team_id': 'T0ELSEWHR' }));
  const other = await get(`/slack/sign-in/callback?code=c1&state=${state}`, dave.session);
  expect(other.status).toBe(403);
  expect((await server.api(dave.token, 'GET', '/slack')).body.link).toBeNull();

  // Slack refused the code: said, nothing linked.
  slack.answerNext('openid.connect.token', { body: { ok: false, error: 'invalid_code' } });
  const refused = await get(`/slack/sign-in/callback?code=c2&state=${state}`, dave.session);
  expect(refused.status).toBe(502);
  expect(await refused.text()).toContain('Slack said invalid_code');

  slackGives(await idToken(nonce));
  const back = await get(`/slack/sign-in/callback?code=c3&state=${state}`, dave.session);
  expect(back.status).toBe(303);
  expect((await server.api(dave.token, 'GET', '/slack')).body.link).toMatchObject({
    slack_user_id: 'U0SIGNEDIN',
    team_id: TEAM,
    linked_via: 'sign_in',
  });
  // Who signed in is the id_token's to say (verified), with Slack's key set read once.
  expect(slack.callsTo('openid.connect.userInfo')).toHaveLength(0);
  expect(slack.callsTo('openid/connect/keys')).toHaveLength(1);
});

test('regression: Sign in with Slack trusted userInfo and never verified the id_token; one that does not hold is refused with one page, and nothing is linked', async () => {
  const erinToken = await addHuman(server, 'erin');
  const erin = await signInByFetch(server, erinToken);
  const slackPage = await toSlack('/slack/sign-in', erin);
  const state = slackPage.searchParams.get('state')!;
  const nonce = slackPage.searchParams.get('nonce')!;
  // Another browser session's nonce: a token Slack issued to it, replayed here.
  const elsewhere = (await toSlack('/slack/sign-in', dave.session)).searchParams.get('nonce')!;
  expect(elsewhere).not.toBe(nonce);
  const now = Math.floor(Date.now() / 1000);
  const cases: [string, string, string][] = [
    [
      'a signature of another key',
      await idToken(nonce, {}, 'impostor'),
      'its signature is not one of Slack’s keys',
    ],
    [
      'another app’s audience',
      await idToken(nonce, { aud: '9999999999.8888888888' }),
      'it is for another app',
    ],
    [
      'another issuer',
      await idToken(nonce, { iss: 'https://slack.example.com' }),
      'it was not issued by Slack',
    ],
    [
      'an expired one',
      await idToken(nonce, { iat: now - 7200, exp: now - 3600 }),
      'it has expired',
    ],
    [
      'another session’s nonce',
      await idToken(elsewhere),
      'its nonce is not the one this browser session sent',
    ],
    [
      'no nonce',
      await idToken(nonce, { nonce: undefined }),
      'its nonce is not the one this browser session sent',
    ],
    [
      'an unsigned one',
      new UnsecuredJWT({
        iss: 'https://slack.com',
        aud: CLIENT_ID,
        nonce,
        'https://slack.com/user_id': 'U0SIGNEDIN',
        'https://slack.com/team_id': TEAM,
      })
        .setIssuedAt()
        .setExpirationTime('5m')
        .encode(),
      'it is not a valid token',
    ],
  ];
  const links = async () => server.sql`select * from slack_links order by principal_id`;
  const before = await links();
  for (const [what, token, reason] of cases) {
    slackGives(token);
    const answer = await get(`/slack/sign-in/callback?code=c4&state=${state}`, erin);
    const page = await answer.text();
    expect(answer.status, what).toBe(400);
    expect(page, what).toContain(
      `Slack’s answer could not be verified: its id_token was refused (${reason}). Nothing changed`,
    );
    // Said once, in words: nothing of jose's or of the token itself.
    expect(page.split('could not be verified').length, what).toBe(2);
    expect(page, what).not.toMatch(/ERR_JW|JWS|JWT|eyJ|\.js:\d+/);
  }
  expect((await server.api(erinToken, 'GET', '/slack')).body.link).toBeNull();
  expect(await links()).toEqual(before);
});
