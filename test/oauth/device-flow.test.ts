import { afterAll, beforeAll, expect, test } from 'vitest';
import { createCliHome, parseJson, startCli, type CliHome } from '../cli/support/run-cli.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { addHuman } from '../web/support/console.js';
import { consoleSession } from './support/oauth-client.js';

// `switchboard login` in a terminal with no browser (RFC 8628), as a teammate on another machine
// meets it: the link the terminal shows, and the console's pages it leads to.
let server: TestServer;
let github: TestServer;
let home: CliHome;
let ada: string;

beforeAll(async () => {
  [server, github, home] = await Promise.all([
    startTestServer(),
    startTestServer({
      web: { githubOAuth: { clientId: 'Iv23liTestClient', clientSecret: 'test-client-secret' } },
    }),
    createCliHome(),
  ]);
  ada = await addHuman(server, 'ada');
});
afterAll(async () => {
  await Promise.all([server?.stop(), github?.stop(), home?.remove()]);
});

test('regression: switchboard login showed only the code to type, never the link with it filled in (verification_uri_complete)', async () => {
  const login = startCli(['login', '--url', server.url, '--no-browser', '--json'], home.env);
  await expect.poll(() => login.stderr, { timeout: 15_000 }).toMatch(/which has it filled in/);
  const code = /type the code ([B-Z]{4}-[B-Z]{4})/.exec(login.stderr)![1]!;
  const link = /open (\S+), which has it filled in/.exec(login.stderr)![1]!;
  expect(link).toBe(`${server.url}/device?user_code=${code}`);

  // The human follows the link: the code is there, to check against the terminal's.
  const session = await consoleSession(server, ada);
  const page = await (await session.request(new URL(link).pathname + new URL(link).search)).text();
  expect(page).toContain(`value="${code}"`);
  expect(page).toContain('Check that this is the code');
  const typed = await session.request('/device', { user_code: code });
  expect(typed.status).toBe(303);
  const allowed = await session.request(typed.headers.get('location')!, { decision: 'allow' });
  expect(await allowed.text()).toContain('your terminal is signed in');
  const result = await login.done;
  expect(result.code).toBe(0);
  expect(parseJson(result)).toMatchObject({ principal: { name: 'ada' }, method: 'code' });
});

/** The page a signed-out browser gets for a terminal's link: the sign-in page, and its text. */
async function signedOutAt(target: TestServer): Promise<string> {
  const device = await fetch(`${target.url}/device?user_code=BCDF-GHJK`, { redirect: 'manual' });
  expect(device.status).toBe(303);
  expect(device.headers.get('location')).toBe('/sign-in');
  const page = await (await fetch(`${target.url}/sign-in`)).text();
  return page.replace(/<[^>]+>/g, '').replace(/\s+/g, ' ');
}

test('regression: a signed-out teammate was told to run switchboard open on the machine where switchboard runs; the page says how they sign in', async () => {
  const text = await signedOutAt(server);
  expect(text).not.toContain('On the machine where switchboard runs, run switchboard open');
  // No GitHub sign-in on this server: their own CLI's link, or an admin's help to get one.
  expect(text).not.toContain('Sign in with GitHub');
  expect(text).toContain(
    'run where your command line is signed in as you, prints one (valid for five minutes)',
  );
  expect(text).toContain(
    `No command line of your own here yet? Ask an admin to add you: switchboard human add NAME prints your token; then switchboard login --url ${server.url} --token TOKEN and switchboard open.`,
  );

  // With the App's OAuth client, GitHub comes first, and what an admin does for it.
  const withGitHub = await signedOutAt(github);
  expect(withGitHub.indexOf('Sign in with GitHub')).toBeGreaterThan(-1);
  expect(withGitHub.indexOf('Sign in with GitHub')).toBeLessThan(withGitHub.indexOf('one-time'));
  expect(withGitHub).toContain(
    'Not added yet? Ask an admin to run switchboard human add NAME --github-login LOGIN.',
  );
});
