import { createHash } from 'node:crypto';
import nock from 'nock';
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import { isolateFromGitHub } from '../github/github-app.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { launchBrowser, type TestBrowser, type WatchedPage } from '../web/support/browser.js';
import { addHuman } from '../web/support/console.js';

const CLIENT = { clientId: 'Iv23liTestClient', clientSecret: 'test-client-secret' };

let server: TestServer;
let browser: TestBrowser;

beforeAll(async () => {
  isolateFromGitHub();
  server = await startTestServer({ web: { githubOAuth: CLIENT } });
  await addHuman(server, 'ada', { github_login: 'Ada-GH' });
  browser = await launchBrowser();
});
afterEach(() => nock.cleanAll());
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  nock.enableNetConnect();
});

interface Authorize {
  clientId: string;
  redirectUri: string;
  state: string;
  challenge: string;
  method: string;
}

/**
 * GitHub's side in the browser: its authorize page sends the browser straight back to the
 * callback with a code (and the state it got, or `state`). Playwright routes the first request
 * of a navigation, not the hops of its redirects, so the hop to GitHub is answered where it
 * starts: the server's /auth/github is fetched for real, its redirect to GitHub read, and the
 * browser handed GitHub's redirect back instead. (Routing github.com itself worked only by
 * accident: the error page of the unroutable hop reloaded itself a second later, in full
 * Chromium only.)
 */
async function fakeAuthorizePage(
  w: WatchedPage,
  code: string,
  state?: string,
): Promise<Authorize[]> {
  const seen: Authorize[] = [];
  await w.page.route(`${server.url}/auth/github`, async (route) => {
    const response = await route.fetch({ maxRedirects: 0 });
    const url = new URL(response.headers().location ?? '');
    expect(`${url.origin}${url.pathname}`).toBe('https://github.com/login/oauth/authorize');
    const asked = {
      clientId: url.searchParams.get('client_id')!,
      redirectUri: url.searchParams.get('redirect_uri')!,
      state: url.searchParams.get('state')!,
      challenge: url.searchParams.get('code_challenge')!,
      method: url.searchParams.get('code_challenge_method')!,
    };
    seen.push(asked);
    const back = new URL(asked.redirectUri);
    back.searchParams.set('code', code);
    back.searchParams.set('state', state ?? asked.state);
    await route.fulfill({
      response,
      headers: { ...response.headers(), location: back.toString() },
    });
  });
  return seen;
}

/** GitHub's side on the server: the token exchange (checking the PKCE verifier) and /user. */
function fakeGitHubApi(user: { id: number; login: string }, challenges: () => Authorize[]) {
  const exchange = nock('https://github.com')
    .post('/login/oauth/access_token', (body: Record<string, string>) => {
      const asked = challenges().at(-1);
      return (
        body.client_id === CLIENT.clientId &&
        body.client_secret === CLIENT.clientSecret &&
        body.code === 'the-code' &&
        body.redirect_uri === asked?.redirectUri &&
        createHash('sha256')
          .update(body.code_verifier ?? '')
          .digest('base64url') === asked?.challenge
      );
    })
    .reply(200, { access_token: 'ghu_usertoken', token_type: 'bearer', scope: '' });
  const whoIs = nock('https://api.github.com')
    .get('/user')
    .matchHeader('authorization', 'Bearer ghu_usertoken')
    .reply(200, user);
  return { exchange, whoIs };
}

/** As a human does it: the sign-in page's button (Playwright routes the redirect that follows a click). */
async function clickSignInWithGitHub(w: WatchedPage): Promise<void> {
  await w.page.goto(`${server.url}/sign-in`);
  await w.page.getByRole('link', { name: 'Sign in with GitHub' }).click();
}

async function sessions(): Promise<number> {
  return (await server.sql`select count(*)::int as n from web_sessions`)[0]!.n;
}

test('a known GitHub user is signed in, found by numeric id from then on, even once renamed', async () => {
  const w = await browser.newPage();
  const seen = await fakeAuthorizePage(w, 'the-code');
  const api = fakeGitHubApi({ id: 4242, login: 'ada-gh' }, () => seen);
  await clickSignInWithGitHub(w);
  await w.page.waitForURL(`${server.url}/`);
  expect(await w.page.locator('.who .name').textContent()).toBe('ada');
  expect(seen[0]).toMatchObject({
    clientId: CLIENT.clientId,
    redirectUri: `${server.url}/auth/github/callback`,
    method: 'S256',
  });
  expect(api.exchange.isDone() && api.whoIs.isDone()).toBe(true);
  expect(await server.sql`select github_user_id::int as id from web_github_accounts`).toEqual([
    { id: 4242 },
  ]);
  // GitHub's token is kept nowhere.
  const dump =
    JSON.stringify(await server.sql`select * from web_sessions`) +
    JSON.stringify(await server.sql`select * from web_github_accounts`);
  expect(dump).not.toContain('ghu_usertoken');

  // Renamed on GitHub: still ada, by id.
  const again = await browser.newPage();
  const seenAgain = await fakeAuthorizePage(again, 'the-code');
  fakeGitHubApi({ id: 4242, login: 'ada-renamed' }, () => seenAgain);
  await clickSignInWithGitHub(again);
  await again.page.waitForURL(`${server.url}/`);
  expect(await again.page.locator('.who .name').textContent()).toBe('ada');
  expect(w.refusals()).toEqual([]);
});

test('a state that does not match the browser’s attempt is refused, and GitHub is not asked', async () => {
  const w = await browser.newPage();
  const seen = await fakeAuthorizePage(w, 'the-code', 'forged-state');
  const api = fakeGitHubApi({ id: 4242, login: 'ada-gh' }, () => seen);
  const before = await sessions();
  await clickSignInWithGitHub(w);
  await w.page.waitForURL(/\/auth\/github\/callback/);
  expect(await w.page.locator('h1').textContent()).toBe('Sign in');
  expect(await w.page.getByRole('alert').last().textContent()).toMatch(/state does not match/);
  expect(api.exchange.isDone()).toBe(false);
  expect(await sessions()).toBe(before);
  expect((await w.context.cookies()).map((c) => c.name)).not.toContain('switchboard_session');
  // A callback with no attempt behind it (no cookie) is refused the same way.
  const bare = await fetch(`${server.url}/auth/github/callback?code=the-code&state=x`);
  expect(bare.status).toBe(400);
});

test('a GitHub user no admin added is refused with a page that says so', async () => {
  const w = await browser.newPage();
  const seen = await fakeAuthorizePage(w, 'the-code');
  fakeGitHubApi({ id: 777, login: 'mallory' }, () => seen);
  const before = await sessions();
  const response = w.page.waitForResponse((r) => r.url().includes('/auth/github/callback'));
  await clickSignInWithGitHub(w);
  expect((await response).status()).toBe(403);
  expect(await w.page.getByRole('alert').last().textContent()).toMatch(
    /you are @mallory, but no switchboard human has that GitHub account/,
  );
  expect(await sessions()).toBe(before);

  // Someone who took ada's old login is not ada: she is bound to her id.
  const taker = await browser.newPage();
  const seenTaker = await fakeAuthorizePage(taker, 'the-code');
  fakeGitHubApi({ id: 888, login: 'Ada-GH' }, () => seenTaker);
  const refused = taker.page.waitForResponse((r) => r.url().includes('/auth/github/callback'));
  await clickSignInWithGitHub(taker);
  expect((await refused).status()).toBe(403);
  expect(await sessions()).toBe(before);
});
