import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { launchBrowser, type TestBrowser, type WatchedPage } from '../web/support/browser.js';
import { addHuman, signIn, waitLive } from '../web/support/console.js';

// A queue's limits on the console (issue 25): the Board shows them and what is used of them,
// live; a held-back todo says so on its page; admins set limits with a form like the others.

let server: TestServer;
let browser: TestBrowser;
let ada: string;
let bob: string;
let agent: string;

beforeAll(async () => {
  server = await startTestServer();
  ada = await addHuman(server, 'ada', { is_admin: true });
  bob = await addHuman(server, 'bob');
  agent = (await server.api(ada, 'POST', '/agents', { name: 'worker', queues: ['paced'] })).body
    .token;
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

function clean(w: WatchedPage) {
  expect(w.refusals()).toEqual([]);
  expect(w.errors).toEqual([]);
}

test('an admin sets limits with the Board’s form; the Board shows their use live; a held-back todo says until when', async () => {
  const w = await browser.newPage();
  await signIn(w.page, server, ada);
  await w.page.goto(`${server.url}/todos`);
  await waitLive(w.page);
  await w.page.getByText('Set a queue’s limits').click();
  await w.page.getByLabel('Queue', { exact: true }).last().fill('paced');
  await w.page.getByLabel('At most in flight').fill('1');
  await w.page.getByRole('button', { name: 'Set limits' }).click();
  await w.page.waitForURL(`${server.url}/todos?queue=paced`);
  await waitLive(w.page);
  const limits = w.page.locator('#live-limits');
  expect(await limits.textContent()).toMatch(/paced\s*0 of 1\s*no limit\s*0\s*yes/);
  // Filtered to the queue, the form shows its limits as they are.
  expect(await w.page.getByLabel('At most in flight').inputValue()).toBe('1');

  const make = async (title: string) =>
    (await server.api(ada, 'POST', '/todos', { queue: 'paced', title })).body.todo.id as number;
  const first = await make('first');
  const second = await make('second');
  await server.api(agent, 'POST', `/todos/${first}/claim`);
  await expect
    .poll(() => limits.textContent())
    .toMatch(/paced\s+1 of 1\s+no limit\s+1\s+held back at its limit of\s+in flight\s+—\s+next at/);

  await w.page.goto(`${server.url}/todos/${second}`);
  await waitLive(w.page);
  expect(await w.page.locator('#live-fields').textContent()).toMatch(
    /held back\s+its queue is at its limit of\s+todos in flight; it may next be\s+claimed at/,
  );
  clean(w);
});

test('only admins see the form; a post from anyone else, or without the form’s token, changes nothing', async () => {
  const w = await browser.newPage();
  await signIn(w.page, server, bob);
  await w.page.goto(`${server.url}/todos`);
  await waitLive(w.page);
  expect(await w.page.getByText('Set a queue’s limits').count()).toBe(0);
  const [cookie] = await w.context.cookies();
  const session = `${cookie!.name}=${cookie!.value}`;
  // Bob's own token, from a form he does have (the todo page's reply box).
  const todo = (await server.api(bob, 'POST', '/todos', { queue: 'paced', title: 't' })).body.todo;
  await w.page.goto(`${server.url}/todos/${todo.id}`);
  const csrf = await w.page.locator('input[name=_csrf]').first().inputValue();
  const post = (form: Record<string, string>) =>
    fetch(`${server.url}/queues/limits`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        cookie: session,
        origin: server.url,
      },
      body: new URLSearchParams(form),
      redirect: 'manual',
    });
  const before = await server.sql`select * from queue_limits order by queue`;

  const notAdmin = await post({
    _csrf: csrf,
    queue: 'paced',
    max_in_flight: '9',
    max_claims: '',
    claims_window: 'hour',
  });
  expect(notAdmin.status).toBe(403);
  expect(await notAdmin.text()).toMatch(
    /only an admin may set a queue’s limits|only an admin may set a queue&#39;s limits/,
  );
  const noToken = await post({
    queue: 'paced',
    max_in_flight: '9',
    max_claims: '',
    claims_window: 'hour',
  });
  expect(noToken.status).toBe(403);
  expect(await noToken.text()).toMatch(/security token is missing or stale/);
  expect(await server.sql`select * from queue_limits order by queue`).toEqual(before);
  clean(w);
});
