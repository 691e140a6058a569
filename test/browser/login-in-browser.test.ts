import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { consoleSession } from '../oauth/support/oauth-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { launchBrowser, type TestBrowser } from '../web/support/browser.js';
import { addHuman, signIn } from '../web/support/console.js';
import {
  createCliHome,
  parseJson,
  runCli,
  startCli,
  type CliHome,
} from '../cli/support/run-cli.js';

// `switchboard login` with no token: a human signs the CLI in through the browser — the loopback
// redirect where a desktop browser opens, a code typed into the console where none can — and
// `logout` revokes what it got.
let server: TestServer;
let browser: TestBrowser;
let ada: string;

beforeAll(async () => {
  server = await startTestServer();
  ada = await addHuman(server, 'ada');
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

const credentialsOf = async (home: CliHome) =>
  JSON.parse(
    await readFile(join(home.env.XDG_CONFIG_HOME!, 'switchboard', 'credentials.json'), 'utf8'),
  );

/**
 * A desktop for the CLI: DISPLAY set, and an `xdg-open` first on the PATH that, instead of a
 * browser, writes the address it was asked to open where the test (the browser here) reads it.
 */
async function fakeDesktop(
  home: CliHome,
): Promise<{ env: Record<string, string>; opened: string }> {
  const bin = join(home.dir, 'bin');
  const opened = join(home.dir, 'opened');
  await mkdir(bin, { recursive: true });
  await writeFile(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s\\n' "$1" >> '${opened}'\n`);
  await chmod(join(bin, 'xdg-open'), 0o755);
  return { env: { DISPLAY: ':0', PATH: `${bin}:${process.env.PATH}` }, opened };
}

test('on a machine with a browser, login opens the consent page and the redirect brings the token back; logout revokes it', async () => {
  const home = await createCliHome();
  try {
    const desktop = await fakeDesktop(home);
    const login = startCli(['login', '--url', server.url], { ...home.env, ...desktop.env });
    await expect
      .poll(() => readFile(desktop.opened, 'utf8').catch(() => ''), { timeout: 15_000 })
      .toMatch(/^http/);
    const address = (await readFile(desktop.opened, 'utf8')).trim();
    expect(address.startsWith(`${server.url}/oauth/authorize?`)).toBe(true);
    expect(login.stderr).toContain('Opened your browser to sign in');

    const w = await browser.newPage();
    await signIn(w.page, server, ada);
    await w.page.goto(address);
    await w.page.getByText('switchboard’s command line').waitFor();
    await w.page.getByRole('button', { name: 'Allow' }).click();
    await w.page.getByText('Signed in: switchboard’s command line has its token').waitFor();

    const result = await login.done;
    expect(result.stdout).toMatch(
      new RegExp(
        `^logged in to ${server.url} as ada \\(human\\) \\(signed in through the browser\\)`,
      ),
    );
    expect(result.code).toBe(0);
    const saved = (await credentialsOf(home)).servers[server.url].token as string;
    expect(saved).toMatch(/^sbk_/);
    expect(parseJson(await runCli(['whoami', '--json'], home.env)).principal.name).toBe('ada');
    // Its sign-in is on the agents page, as the CLI's.
    await w.page.goto(`${server.url}/agents`);
    await w.page.locator('.sign-ins tr', { hasText: 'switchboard CLI' }).waitFor();

    const logout = await runCli(['logout'], home.env);
    expect(logout.stdout).toMatch(new RegExp(`^logged out of ${server.url}: its token is revoked`));
    expect(logout.code).toBe(0);
    expect(await credentialsOf(home)).toEqual({ servers: {} });
    expect((await server.api(saved, 'GET', '/whoami')).status).toBe(401);
  } finally {
    await home.remove();
  }
});

test('in a terminal without a browser, login shows a code; typed into the console and allowed, the CLI is signed in', async () => {
  const home = await createCliHome();
  try {
    const login = startCli(['login', '--url', server.url, '--json'], home.env);
    await expect
      .poll(() => login.stderr, { timeout: 15_000 })
      .toMatch(/open \S+\/device in a browser .* type the code [B-Z]{4}-[B-Z]{4}/);
    const code = /code ([B-Z]{4}-[B-Z]{4})/.exec(login.stderr)![1]!;
    // The human, in a console session on another machine.
    const session = await consoleSession(server, ada);
    const typed = await session.request('/device', { user_code: code.toLowerCase() });
    expect(typed.status).toBe(303);
    const consent = typed.headers.get('location')!;
    expect(await (await session.request(consent)).text()).toContain('typed the code it showed you');
    const allowed = await session.request(consent, { decision: 'allow' });
    expect(await allowed.text()).toContain('your terminal is signed in');

    const result = await login.done;
    expect(result.code).toBe(0);
    expect(parseJson(result)).toMatchObject({
      url: server.url,
      principal: { name: 'ada', kind: 'human' },
      method: 'code',
      replaced: false,
    });
    expect((await credentialsOf(home)).current).toBe(server.url);
    expect(parseJson(await runCli(['whoami', '--json'], home.env)).principal.name).toBe('ada');
  } finally {
    await home.remove();
  }
});

test('a sign-in denied in the browser: exit 4, one line, nothing saved', async () => {
  const home = await createCliHome();
  try {
    const login = startCli(['login', '--url', server.url, '--no-browser'], home.env);
    await expect.poll(() => login.stderr, { timeout: 15_000 }).toMatch(/type the code/);
    const code = /code ([B-Z]{4}-[B-Z]{4})/.exec(login.stderr)![1]!;
    const session = await consoleSession(server, ada);
    const consent = (await session.request('/device', { user_code: code })).headers.get(
      'location',
    )!;
    expect(await (await session.request(consent, { decision: 'deny' })).text()).toContain('Denied');
    const result = await login.done;
    expect(result.code).toBe(4);
    expect(result.stderr.trim().split('\n').at(-1)).toBe('the sign-in was denied in the browser');
    await expect(credentialsOf(home)).rejects.toThrow();
  } finally {
    await home.remove();
  }
});

test('logout of a token that no sign-in made removes the entry and says the token still works', async () => {
  const home = await createCliHome();
  try {
    const { body } = await server.api(ada, 'POST', '/agents', { name: 'bot', queues: ['ci'] });
    expect(
      (await runCli(['login', '--url', server.url, '--token', body.token], home.env)).code,
    ).toBe(0);
    const logout = parseJson(await runCli(['logout', '--json'], home.env));
    expect(logout).toMatchObject({ url: server.url, revoked: false });
    expect(await credentialsOf(home)).toEqual({ servers: {} });
    expect((await server.api(body.token, 'GET', '/whoami')).status).toBe(200);
    const again = await runCli(['logout', '--url', server.url], home.env);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/^not logged in to /);
  } finally {
    await home.remove();
  }
});
