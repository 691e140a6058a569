import nock from 'nock';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { freePort } from '../../src/platform/db/start-embedded-postgres.js';
import { isolateFromGitHub } from '../github/github-app.js';
import {
  FAKE_REPOSITORY,
  startFakeGitHubServer,
  type FakeGitHubServer,
} from '../support/fake-github-server.js';
import { createOnGitHub, openSetupLink, setupForm, visit } from '../support/github-setup-flow.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { createCliHome, parseJson, runCli, startCli, type CliHome } from './support/run-cli.js';

// `switchboard github setup`, run as an admin runs it, against a server pointed by GHE_HOST at a
// fake GitHub on 127.0.0.1: the link it prints, GitHub's pages, the install link it ends with.

let fake: FakeGitHubServer;
let server: TestServer;
let home: CliHome;
let admin: Record<string, string>;

beforeAll(async () => {
  isolateFromGitHub();
  [fake, home] = await Promise.all([startFakeGitHubServer(), createCliHome()]);
  server = await startTestServer({ ghe: fake.env, webhookSecret: null });
  admin = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: server.adminToken };
});
afterAll(async () => {
  await server?.stop();
  await fake?.close();
  await home?.remove();
  nock.enableNetConnect();
});

test('--json prints the setup page’s one-time link, and does not wait', async () => {
  const result = await runCli(['github', 'setup', '--json'], admin);
  expect(result.code, result.stderr).toBe(0);
  const { url } = parseJson(result);
  expect(Object.keys(parseJson(result))).toEqual(['url']);
  const link = new URL(url as string);
  expect(link.origin).toBe(server.publicUrl);
  expect(link.pathname).toMatch(/^\/sign-in\/sbl_/);
  expect(link.searchParams.get('next')).toBe('/github/setup');
  const { page } = await openSetupLink(url as string);
  expect(new URL(setupForm(page.html).action).pathname).toBe('/settings/apps/new');

  const forOrg = parseJson(await runCli(['github', 'setup', '--org', 'acme', '--json'], admin));
  expect(new URL(forOrg.url as string).searchParams.get('next')).toBe('/github/setup?org=acme');
});

test('from the command to an installed App: the link, "Create" on GitHub, the install link; a comment then becomes a todo', async () => {
  const cli = startCli(['github', 'setup', '--print'], admin);
  await cli.waitFor(/waiting for GitHub to send you back/);
  const url = /^(http\S+\/sign-in\/\S+)$/m.exec(cli.stdout)?.[1];
  expect(url, cli.stdout).toBeDefined();
  const { cookie, page } = await openSetupLink(url!);
  const back = await createOnGitHub(setupForm(page.html), 'switchboard-team');
  expect((await visit(back, cookie)).status).toBe(200);

  const result = await cli.done;
  expect(result.code, result.stderr).toBe(0);
  const app = [...fake.apps.values()].at(-1)!;
  expect(result.stdout).toContain(
    `GitHub App switchboard-team (switchboard-team, id ${app.id}, owned by Codertocat) is set up`,
  );
  const install = /^install it on your repositories: (\S+)$/m.exec(result.stdout)?.[1];
  expect(install).toBe(`${fake.url}/github-apps/switchboard-team/installations/new`);

  // The install link's page, and its button, as GitHub's.
  expect((await fetch(install!)).status).toBe(200);
  expect((await fetch(install!, { method: 'POST' })).status).toBe(200);
  expect((await fake.comment(app.id, '/switchboard fix the typo in README.md')).status).toBe(200);
  const list = await runCli(['todo', 'list', '--json'], admin);
  expect(parseJson(list).todos).toMatchObject([{ source: 'github', attributed_to: 'Codertocat' }]);
  await expect.poll(() => fake.writes.length).toBe(1);
  expect(fake.writes[0]).toContain(`/repos/${FAKE_REPOSITORY}/issues/comments/`);
});

test('regression: installing the App on the fake GitHub sent no installation delivery ("no deliveries yet"), and a failed delivery showed only "→ 0"', async () => {
  // Runs after the test above: its App is set up, and this server knows its webhook secret.
  const app = [...fake.apps.values()].at(-1)!;
  const install = `${fake.url}/github-apps/${app.slug}/installations/new`;
  const installations = async () =>
    (
      parseJson(await runCli(['deliveries', 'list', '--json'], admin)).deliveries as {
        event: string;
        action: string | null;
        installation_id: number | null;
      }[]
    ).filter((delivery) => delivery.event === 'installation');
  const before = (await installations()).length;
  const installed = await (await fetch(install, { method: 'POST' })).text();
  expect(installed).toContain('Delivered: installation.created → 200 OK');
  const after = await installations();
  expect(after).toHaveLength(before + 1);
  expect(after[0]).toMatchObject({ action: 'created', installation_id: expect.any(Number) });

  // A delivery that does not arrive says why, here and on the issue's page.
  const hook = app.hookUrl;
  const nowhere = `http://127.0.0.1:${await freePort()}/api/github/webhooks`;
  app.hookUrl = nowhere;
  try {
    const failed = await (await fetch(install, { method: 'POST' })).text();
    expect(failed).toContain(
      `Delivered: installation.created → failed to connect to host (ECONNREFUSED, at ${nowhere})`,
    );
  } finally {
    app.hookUrl = hook;
  }
  const issue = await (await fetch(`${fake.url}/${FAKE_REPOSITORY}/issues/1`)).text();
  expect(issue).toContain('<li>installation.created → failed to connect to host (ECONNREFUSED');
  expect(issue).toContain('<li>installation.created → 200 OK</li>');
});

test('a human who is not an admin is refused: exit 3, one line', async () => {
  const bob = await server.api(server.adminToken, 'POST', '/humans', { name: 'bob' });
  const result = await runCli(['github', 'setup'], { ...admin, SWITCHBOARD_TOKEN: bob.body.token });
  expect(result.code).toBe(3);
  expect(result.stdout).toBe('');
  expect(result.stderr).toBe('only an admin may set up the GitHub App\n');
});

test('a bad organization login is refused before anything is made', async () => {
  const result = await runCli(['github', 'setup', '--org', 'a/b'], admin);
  expect(result.code).toBe(3);
  expect(result.stderr).toMatch(/^org: must be an organization login/);
  expect(result.stderr.trim().split('\n')).toHaveLength(1);
});

test('a server that cannot keep an App refuses with what to set: exit 3, one line', async () => {
  const locked = await startTestServer({ ghe: fake.env, noSecretKey: true });
  try {
    const result = await runCli(['github', 'setup'], {
      ...admin,
      SWITCHBOARD_URL: locked.url,
      SWITCHBOARD_TOKEN: locked.adminToken,
    });
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/^GitHub App setup is off: set SWITCHBOARD_SECRET_KEY/);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  } finally {
    await locked.stop();
  }
});
