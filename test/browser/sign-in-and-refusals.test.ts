import { afterAll, beforeAll, expect, test } from 'vitest';
import { createCliHome, parseJson, runCli, type CliHome } from '../cli/support/run-cli.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { launchBrowser, type TestBrowser } from '../web/support/browser.js';
import { addHuman, card, signIn, signInLink } from '../web/support/console.js';

let server: TestServer;
let browser: TestBrowser;
let ada: string;
let bob: string;
let home: CliHome;

beforeAll(async () => {
  server = await startTestServer({ web: { signInAttemptLimit: 5 } });
  ada = await addHuman(server, 'ada');
  bob = await addHuman(server, 'bob');
  home = await createCliHome();
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await home?.remove();
});

/** The rows a refused request could have touched: all must be as they were. */
async function counts() {
  const [row] = await server.sql`
    select (select count(*)::int from todos) as todos,
           -- the dispatcher's own notes of doorbells it rang are not changes
           (select count(*)::int from todo_events where via <> 'delivery') as events,
           (select count(*)::int from todos where state = 'pending') as pending,
           (select count(*)::int from web_sessions) as sessions`;
  return row;
}

test('switchboard open --json prints a link that signs in once; the same link is refused a second time', async () => {
  const opened = await runCli(['open', '--json'], {
    ...home.env,
    SWITCHBOARD_URL: server.url,
    SWITCHBOARD_TOKEN: ada,
  });
  expect(opened.code).toBe(0);
  const { url } = parseJson(opened);
  expect(url).toMatch(new RegExp(`^${server.url}/sign-in/sbl_[A-Za-z0-9_-]{43}$`));

  const w = await browser.newPage();
  await w.page.goto(url);
  expect(new URL(w.page.url()).pathname).toBe('/');
  expect(await w.page.locator('.who .name').textContent()).toBe('ada');
  const [cookie] = await w.context.cookies();
  expect(cookie).toMatchObject({
    name: 'switchboard_session',
    httpOnly: true,
    sameSite: 'Lax',
    path: '/',
  });
  // Stored hashed: the cookie's value is nowhere in the database.
  const [{ n }] = await server.sql<[{ n: number }]>`
    select count(*)::int as n from web_sessions where hash = sha256(${cookie!.value}::bytea)`;
  expect(n).toBe(1);
  expect(
    (
      await server.sql`select count(*)::int as n from web_sessions where hash::text like ${'%' + cookie!.value + '%'}`
    )[0]!.n,
  ).toBe(0);

  // The same link again, in another browser: refused, and no session made.
  const other = await browser.newPage();
  const before = await counts();
  const response = await other.page.goto(url);
  expect(response!.status()).toBe(401);
  expect(await other.page.getByRole('alert').last().textContent()).toMatch(
    /already used, has expired/,
  );
  expect(await other.context.cookies()).toEqual([]);
  expect(await counts()).toEqual(before);
  expect(w.refusals()).toEqual([]);
});

test('switchboard open --print prints the link only; an agent cannot sign in (exit 3)', async () => {
  const env = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: ada };
  const printed = await runCli(['open', '--print'], env);
  expect(printed.code).toBe(0);
  expect(printed.stdout).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/sign-in\/sbl_\S+\n$/);
  const agent = (await server.api(ada, 'POST', '/agents', { name: 'helper', queues: ['x'] })).body
    .token;
  const refused = await runCli(['open', '--json'], { ...env, SWITCHBOARD_TOKEN: agent });
  expect(refused.code).toBe(3);
  expect(refused.stdout).toBe('');
  expect(refused.stderr).toMatch(/only a human may sign in to the web console/);
});

test('a signed-out request gets the sign-in page; signing out ends the session at once', async () => {
  const w = await browser.newPage();
  for (const path of ['/', '/todos', '/approvals/1', '/agents']) {
    await w.page.goto(`${server.url}${path}`);
    expect(new URL(w.page.url()).pathname).toBe('/sign-in');
    expect(await w.page.locator('h1').textContent()).toBe('Sign in');
  }
  expect((await fetch(`${server.url}/live?page=%2F`)).status).toBe(401);

  await signIn(w.page, server, bob);
  const [cookie] = await w.context.cookies();
  await w.page.getByRole('button', { name: 'Sign out' }).click();
  await w.page.waitForURL(/\/sign-in$/);
  // The old cookie, replayed, is worthless: its session row is gone.
  const replay = await fetch(`${server.url}/todos`, {
    headers: { cookie: `${cookie!.name}=${cookie!.value}` },
    redirect: 'manual',
  });
  expect(replay.status).toBe(303);
  expect(replay.headers.get('location')).toBe('/sign-in');
  expect(w.refusals()).toEqual([]);
});

test('refusals change nothing: no CSRF token, a foreign Origin, signed out, another human’s approval', async () => {
  const w = await browser.newPage();
  await signIn(w.page, server, ada);
  const [cookie] = await w.context.cookies();
  const session = `${cookie!.name}=${cookie!.value}`;
  const csrf = await w.page.locator('input[name=_csrf]').first().inputValue();
  const approval = (await server.api(ada, 'POST', '/approvals', { question: 'Deploy?' })).body.todo;
  const bobs = (await server.api(bob, 'POST', '/approvals', { question: 'Bob’s own?' })).body.todo;
  const post = (path: string, form: Record<string, string>, headers: Record<string, string>) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(form),
      redirect: 'manual',
    });
  const before = await counts();

  const noToken = await post(
    `/approvals/${approval.id}/decide`,
    { verdict: 'allow' },
    { cookie: session, origin: server.url },
  );
  expect(noToken.status).toBe(403);
  expect(await noToken.text()).toMatch(/security token is missing or stale/);
  const wrongToken = await post(
    `/approvals/${approval.id}/decide`,
    { verdict: 'allow', _csrf: csrf.slice(1) + 'x' },
    { cookie: session, origin: server.url },
  );
  expect(wrongToken.status).toBe(403);
  const foreign = await post(
    `/approvals/${approval.id}/decide`,
    { verdict: 'allow', _csrf: csrf },
    { cookie: session, origin: 'https://evil.example' },
  );
  expect(foreign.status).toBe(403);
  expect(await foreign.text()).toMatch(/not sent from switchboard’s own pages/);
  const noOrigin = await post(
    `/approvals/${approval.id}/decide`,
    { verdict: 'allow', _csrf: csrf },
    { cookie: session },
  );
  expect(noOrigin.status).toBe(403);
  const signedOut = await post(
    `/approvals/${approval.id}/decide`,
    { verdict: 'allow', _csrf: csrf },
    { origin: server.url },
  );
  expect(signedOut.status).toBe(303);
  expect(signedOut.headers.get('location')).toBe('/sign-in');
  // Another human's token does not work for this session either.
  const otherCsrf = await post(
    `/todos/${approval.id}/cancel`,
    { _csrf: 'x'.repeat(43) },
    { cookie: session, origin: server.url },
  );
  expect(otherCsrf.status).toBe(403);
  expect(await counts()).toEqual(before);

  // Bob's approval is not ada's to see… unless she is an admin; ada here is not.
  const page = await w.page.goto(`${server.url}/approvals/${bobs.id}`);
  expect(page!.status()).toBe(404);
  expect((await w.page.goto(`${server.url}/todos/${bobs.id}`))!.status()).toBe(404);
  const decideBobs = await post(
    `/approvals/${bobs.id}/decide`,
    { verdict: 'allow', _csrf: csrf },
    { cookie: session, origin: server.url },
  );
  expect(decideBobs.status).toBe(404);
  const cancelBobs = await post(
    `/todos/${bobs.id}/cancel`,
    { _csrf: csrf },
    { cookie: session, origin: server.url },
  );
  expect(cancelBobs.status).toBe(404);
  expect(await counts()).toEqual(before);
  // And her list shows only her own.
  await w.page.goto(server.url);
  expect(await card(w.page, approval.id).count()).toBe(1);
  expect(await card(w.page, bobs.id).count()).toBe(0);

  // The same request, done right, works: the refusals above were about the request only.
  const ok = await post(
    `/approvals/${approval.id}/decide`,
    { verdict: 'deny', _csrf: csrf, note: 'no' },
    { cookie: session, origin: server.url },
  );
  expect(ok.status).toBe(303);
  expect((await server.api(ada, 'GET', `/todos/${approval.id}`)).body.todo).toMatchObject({
    verdict: 'deny',
    summary: 'no',
  });
  expect(w.refusals()).toEqual([]);
});

test('failed sign-in attempts are rate-limited per address', async () => {
  // The limit is 5 refusals per address (this server's setting); the reused link above was one.
  const tries: number[] = [];
  for (let i = 0; i < 6; i++)
    tries.push((await fetch(`${server.url}/sign-in/sbl_${'A'.repeat(43)}`)).status);
  const first429 = tries.indexOf(429);
  expect(first429).toBeGreaterThan(0);
  expect(tries.slice(0, first429).every((status) => status === 401)).toBe(true);
  expect(tries.slice(first429).every((status) => status === 429)).toBe(true);
  expect(first429).toBeLessThanOrEqual(5);
  // A good link still works while the limit holds: it counts failures only.
  const link = await signInLink(server, bob);
  expect((await fetch(link, { redirect: 'manual' })).status).toBe(303);
});
