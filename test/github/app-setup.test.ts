import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { sign } from '@octokit/webhooks-methods';
import { load as loadYaml } from 'js-yaml';
import nock from 'nock';
import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  saveGitHubApp,
  type ManifestConversion,
} from '../../src/integrations/github-app/github-app-store.js';
import { createSecretBox } from '../../src/platform/secrets/secret-box.js';
import { isolateFromGitHub } from './github-app.js';
import {
  FAKE_USER,
  startFakeGitHubServer,
  type FakeGitHubServer,
} from '../support/fake-github-server.js';
import { createOnGitHub, openSetupLink, setupForm, visit } from '../support/github-setup-flow.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

const APP_YML = loadYaml(readFileSync(new URL('../../app.yml', import.meta.url), 'utf8')) as Record<
  string,
  any
>;

let fake: FakeGitHubServer;
let server: TestServer;
/** A second process on the same database. */
let second: TestServer;
let bobToken: string;

beforeAll(async () => {
  // Nothing may reach github.com: every request goes to the fake, through GHE_HOST.
  isolateFromGitHub();
  fake = await startFakeGitHubServer();
  server = await startTestServer({ ghe: fake.env, webhookSecret: null });
  second = await startTestServer({ ghe: fake.env, webhookSecret: null, schema: server.schema });
  const bob = await server.api(server.adminToken, 'POST', '/humans', { name: 'bob' });
  bobToken = bob.body.token;
});
afterAll(async () => {
  await second?.stop();
  await server?.stop();
  await fake?.close();
  nock.enableNetConnect();
});

async function startSetup(org?: string, on: TestServer = server) {
  const { status, body } = await on.api(on.adminToken, 'POST', '/github/setup', org ? { org } : {});
  expect(status, JSON.stringify(body)).toBe(201);
  return openSetupLink(body.url as string);
}

test('the setup page posts app.yml as the manifest to GitHub, with this server’s URLs, under a CSP that lets it', async () => {
  const { page } = await startSetup();
  expect(page.status).toBe(200);
  const form = setupForm(page.html);
  const action = new URL(form.action);
  expect(`${action.origin}${action.pathname}`).toBe(`${fake.url}/settings/apps/new`);
  expect(action.searchParams.get('state')).toMatch(/^[A-Za-z0-9_-]{32}$/);
  expect(form.manifest).toMatchObject({
    name: APP_YML.name,
    url: APP_YML.url,
    public: false,
    hook_attributes: { url: `${server.publicUrl}/api/github/webhooks`, active: true },
    redirect_url: `${server.publicUrl}/github/setup/callback`,
    callback_urls: [`${server.publicUrl}/auth/github/callback`],
    default_events: APP_YML.default_events,
    default_permissions: APP_YML.default_permissions,
  });
  // This page's form may post to GitHub; no other page's may.
  expect(page.headers.get('content-security-policy')).toContain(`form-action 'self' ${fake.url};`);
  const other = await fetch(`${server.url}/sign-in`);
  expect(other.headers.get('content-security-policy')).toContain("form-action 'self';");

  const forOrg = setupForm((await startSetup('acme-corp')).page.html);
  expect(new URL(forOrg.action).pathname).toBe('/organizations/acme-corp/settings/apps/new');
  const bad = await server.api(server.adminToken, 'POST', '/github/setup', { org: '../evil' });
  expect(bad.status).toBe(400);
});

test('a human who is not an admin is refused, by the API and by the page', async () => {
  const [before] = await server.sql`select count(*)::int as states from github_app_setups`;
  const api = await server.api(bobToken, 'POST', '/github/setup', {});
  expect(api.status).toBe(403);
  expect(api.body).toMatchObject({ code: 'forbidden' });
  const link = await server.api(bobToken, 'POST', '/web/sign-in-links');
  const signIn = await fetch(link.body.url as string, { redirect: 'manual' });
  const cookie = signIn.headers.getSetCookie()[0]!.split(';')[0]!;
  const page = await visit(`${server.url}/github/setup`, cookie);
  expect(page.status).toBe(403);
  expect(page.html).toContain('Only an admin can set up the GitHub App.');
  const [after] = await server.sql`select count(*)::int as states from github_app_setups`;
  expect(after).toEqual(before);
});

test('the whole manifest flow over HTTP: the code converted, the App kept sealed, and used at once by every process', async () => {
  // No App yet: GitHub's deliveries are refused.
  const before = await fetch(`${server.url}/api/github/webhooks`, { method: 'POST', body: '{}' });
  expect(before.status).toBe(503);

  const { cookie, page } = await startSetup();
  const back = await createOnGitHub(setupForm(page.html), 'switchboard-acme');
  expect(back.startsWith(`${server.publicUrl}/github/setup/callback?`)).toBe(true);
  const done = await visit(back, cookie);
  expect(done.status, done.html).toBe(200);
  const app = [...fake.apps.values()].at(-1)!;
  expect(done.html).toContain(`href="${fake.url}/github-apps/switchboard-acme/installations/new"`);
  expect(done.html).toContain('Install the App');
  expect(fake.requests).toContainEqual({
    method: 'POST',
    path: expect.stringMatching(/^\/app-manifests\/[0-9a-f]+\/conversions$/),
    as: 'anonymous',
  });

  // Sealed: no secret, and no part of the key, in the clear anywhere in its row.
  const [row] = await server.sql`select github_app::text as text from github_app`;
  for (const secret of [app.webhookSecret, app.clientSecret, app.privateKey.split('\n')[1]!])
    expect(row!.text).not.toContain(secret);
  expect(row!.text).toContain('switchboard-acme');

  // Installed: a comment GitHub signs with the new secret is taken by either process, and its
  // 👀 goes back through the App's installation token.
  const installation = fake.install(app.id);
  const delivered = await fake.comment(app.id, '/switchboard fix the typo in README.md');
  expect(delivered.status).toBe(200);
  await expect.poll(() => fake.writes.length).toBe(1);
  expect(fake.writes[0]).toMatch(
    /^POST \/repos\/Codertocat\/Hello-World\/issues\/comments\/\d+\/reactions \{"content":"eyes"\}$/,
  );
  expect(fake.requests).toContainEqual({
    method: 'POST',
    path: `/app/installations/${installation}/access_tokens`,
    as: `jwt:${app.id}`,
  });
  const [todo] = await server.sql`select attributed_to from todos where source = 'github'`;
  expect(todo).toMatchObject({ attributed_to: 'Codertocat' });

  // The second process heard of it (NOTIFY) and verifies with the new secret too.
  const body = JSON.stringify({ zen: 'Keep it logically awesome.', hook_id: 1 });
  const signature = await sign(app.webhookSecret, body);
  await expect
    .poll(async () => {
      const answer = await fetch(`${second.url}/api/github/webhooks`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-github-event': 'ping',
          'x-github-delivery': randomUUID(),
          'x-hub-signature-256': signature,
        },
        body,
      });
      return answer.status;
    })
    .toBe(200);
});

test('the setup state is good once, for the session it was made for; GitHub is never asked for a code otherwise', async () => {
  const { cookie, page } = await startSetup();
  const back = await createOnGitHub(setupForm(page.html));
  const conversions = () => fake.requests.filter((r) => r.path.startsWith('/app-manifests/'));
  const asked = conversions().length;

  // Another session (the same admin, another browser) cannot use it.
  const elsewhere = await startSetup();
  const stolen = await visit(back, elsewhere.cookie);
  expect(stolen.status).toBe(400);
  expect(stolen.html).toContain('started in another browser');
  // A state never made.
  const url = new URL(back);
  url.searchParams.set('state', 'A'.repeat(32));
  expect((await visit(url.toString(), cookie)).status).toBe(400);
  // No session at all.
  expect((await visit(back, '')).status).toBe(401);
  expect(conversions().length).toBe(asked);

  // Its own session: once.
  const first = await visit(back, cookie);
  expect(first.status, first.html).toBe(200);
  expect(conversions().length).toBe(asked + 1);
  const again = await visit(back, cookie);
  expect(again.status).toBe(400);
  expect(again.html).toContain('already finished');
  expect(conversions().length).toBe(asked + 1);
  const [apps] = await server.sql`select count(*)::int as n from github_app`;
  expect(apps).toEqual({ n: 1 });
});

test('GHE_HOST moves sign-in with GitHub too: the App’s own OAuth client, on the fake', async () => {
  await server.api(server.adminToken, 'POST', '/humans', {
    name: 'coder',
    github_login: FAKE_USER.login,
  });
  const stored = [...fake.apps.values()].at(-1)!;
  const start = await fetch(`${server.url}/auth/github`, { redirect: 'manual' });
  const authorize = new URL(start.headers.get('location')!);
  expect(`${authorize.origin}${authorize.pathname}`).toBe(`${fake.url}/login/oauth/authorize`);
  expect(authorize.searchParams.get('client_id')).toBe(stored.clientId);
  const attempt = start.headers.getSetCookie()[0]!.split(';')[0]!;
  const atGitHub = await fetch(authorize, { redirect: 'manual' });
  const callback = atGitHub.headers.get('location')!;
  const signedIn = await fetch(callback, { headers: { cookie: attempt }, redirect: 'manual' });
  expect(signedIn.status).toBe(303);
  expect(signedIn.headers.getSetCookie().some((c) => c.startsWith('switchboard_session='))).toBe(
    true,
  );
  expect(fake.requests).toContainEqual({
    method: 'GET',
    path: '/user',
    as: `user:${FAKE_USER.login}`,
  });
});

test('GHE_HOST moves reconcile too: an event GitHub failed to deliver is asked for again, and arrives', async () => {
  // The App in use now: the one the last setup stored.
  const app = [...fake.apps.values()].at(-1)!;
  fake.install(app.id);
  const { guid } = await fake.deliver(
    app.id,
    'issues',
    { action: 'opened', zen: 'sent while switchboard was away' },
    { reach: false },
  );
  const { status, body } = await server.api(server.adminToken, 'POST', '/deliveries/reconcile');
  expect(status, JSON.stringify(body)).toBe(200);
  expect(body.reconcile.missing).toMatchObject([{ guid, outcome: 'requested' }]);
  await fake.settled();
  const [recorded] = await server.sql`
    select delivery_id from deliveries where source = 'github' and delivery_id = ${guid}`;
  expect(recorded).toBeDefined();
  expect(fake.requests).toContainEqual({
    method: 'GET',
    path: '/app/hook/deliveries',
    as: `jwt:${app.id}`,
  });
});

test('APP_ID, PRIVATE_KEY and WEBHOOK_SECRET from the environment win over the App set up here', async () => {
  const { manifest } = setupForm((await startSetup()).page.html);
  const convert = async (name: string) => {
    const code = fake.createApp(manifest, { name });
    const answer = await fetch(`${fake.host.api}/app-manifests/${code}/conversions`, {
      method: 'POST',
    });
    return (await answer.json()) as ManifestConversion;
  };
  const fromEnv = await convert('from-env');
  const setUp = await convert('set-up-here');
  const envServer = await startTestServer({
    ghe: fake.env,
    github: { appId: String(fromEnv.id), privateKey: fromEnv.pem },
    webhookSecret: fromEnv.webhook_secret!,
  });
  // GitHub delivers both Apps' events to this server.
  for (const id of [fromEnv.id, setUp.id])
    fake.apps.get(id)!.hookUrl = `${envServer.url}/api/github/webhooks`;
  try {
    // The App `github setup` would have stored there, sealed with that server's key.
    const box = createSecretBox(
      createHash('sha256').update(`switchboard-test:${envServer.schema}`).digest(),
    );
    const [admin] = await envServer.sql`select name from principals where is_admin`;
    await saveGitHubApp(envServer.sql, box, setUp, admin!.name);

    const refused = await envServer.api(envServer.adminToken, 'POST', '/github/setup', {});
    expect(refused.status).toBe(409);
    expect(refused.body.error).toContain('APP_ID and PRIVATE_KEY in its environment');
    const inUse = await envServer.api(envServer.adminToken, 'GET', '/github/app');
    expect(inUse.body).toEqual({ app: { source: 'environment' } });

    // The environment's secret verifies; the stored App's does not.
    const ping = JSON.stringify({ zen: 'env wins', hook_id: 2 });
    const send = async (secret: string) =>
      (
        await fetch(`${envServer.url}/api/github/webhooks`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-github-event': 'ping',
            'x-github-delivery': randomUUID(),
            'x-hub-signature-256': await sign(secret, ping),
          },
          body: ping,
        })
      ).status;
    expect(await send(fromEnv.webhook_secret!)).toBe(200);
    expect(await send(setUp.webhook_secret!)).toBe(401);

    // Write-back goes as the environment's App.
    const installation = fake.install(fromEnv.id);
    const writes = fake.writes.length;
    expect((await fake.comment(fromEnv.id, '/switchboard from the environment')).status).toBe(200);
    await expect.poll(() => fake.writes.length).toBe(writes + 1);
    expect(fake.requests).toContainEqual({
      method: 'POST',
      path: `/app/installations/${installation}/access_tokens`,
      as: `jwt:${fromEnv.id}`,
    });
  } finally {
    await envServer.stop();
  }
});

test('WEBHOOK_SECRET from the environment wins over the one GitHub made: the new App is told to sign with it', async () => {
  const envSecret = randomUUID();
  const withSecret = await startTestServer({ ghe: fake.env, webhookSecret: envSecret });
  try {
    const { cookie, page } = await startSetup(undefined, withSecret);
    const done = await visit(await createOnGitHub(setupForm(page.html)), cookie);
    expect(done.status, done.html).toBe(200);
    expect(done.html).not.toContain('did not take');
    const app = [...fake.apps.values()].at(-1)!;
    expect(fake.requests).toContainEqual({
      method: 'PATCH',
      path: '/app/hook/config',
      as: `jwt:${app.id}`,
    });
    expect(app.webhookSecret).toBe(envSecret);
    // What GitHub now signs is verified, and becomes a todo there.
    fake.install(app.id);
    expect((await fake.comment(app.id, '/switchboard signed with the env secret')).status).toBe(
      200,
    );
    const [todo] =
      await withSecret.sql`select count(*)::int as n from todos where source = 'github'`;
    expect(todo).toEqual({ n: 1 });
  } finally {
    await withSecret.stop();
  }
});

test('the setup page warns that github.com cannot deliver to this machine’s own address, but not a GitHub on this machine', async () => {
  expect((await startSetup()).page.html).not.toContain('GitHub cannot deliver to');
  const dotCom = await startTestServer({ webhookSecret: null });
  try {
    const { page } = await startSetup(undefined, dotCom);
    expect(page.html).toContain(
      `GitHub cannot deliver to ${dotCom.publicUrl}/api/github/webhooks: that address is this machine&#39;s own.`,
    );
    expect(new URL(setupForm(page.html).action).origin).toBe('https://github.com');
  } finally {
    await dotCom.stop();
  }
});

test('WEBHOOK_PROXY_URL: the App delivers to the smee.io channel, and the server forwards what it hears there to itself', async () => {
  const channel = `sb-${randomUUID().slice(0, 8)}`;
  const proxied = await startTestServer({
    ghe: fake.env,
    webhookSecret: null,
    webhookProxyUrl: fake.channel(channel),
  });
  try {
    await expect.poll(() => fake.listening(channel)).toBe(1);
    const { cookie, page } = await startSetup(undefined, proxied);
    const form = setupForm(page.html);
    expect(form.manifest.hook_attributes.url).toBe(fake.channel(channel));
    expect(page.html).not.toContain('GitHub cannot deliver to');
    expect((await visit(await createOnGitHub(form), cookie)).status).toBe(200);
    const app = [...fake.apps.values()].at(-1)!;
    expect(app.hookUrl).toBe(fake.channel(channel));

    fake.install(app.id);
    const { guid } = await fake.comment(app.id, '/switchboard through the webhook proxy');
    await expect
      .poll(async () => {
        const [row] = await proxied.sql`
          select disposition from deliveries where source = 'github' and delivery_id = ${guid}`;
        return row?.disposition;
      })
      .toBe('created');
  } finally {
    await proxied.stop();
  }
});
