import { afterAll, beforeAll, expect, test } from 'vitest';
import { STRINGS } from '../support/bad-input.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { launchBrowser, type TestBrowser, type WatchedPage } from '../web/support/browser.js';
import { addHuman, signIn, waitLive } from '../web/support/console.js';

let server: TestServer;
let browser: TestBrowser;
let ada: string;
let agent: string;

beforeAll(async () => {
  server = await startTestServer();
  ada = await addHuman(server, 'ada');
  agent = (await server.api(ada, 'POST', '/agents', { name: 'worker', queues: ['reviews'] })).body
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

test('the board shows claims and completions as they happen, without a reload', async () => {
  const w = await browser.newPage();
  await signIn(w.page, server, ada);
  await w.page.goto(`${server.url}/todos?state=all`);
  await waitLive(w.page);
  const created = (
    await server.api(agent, 'POST', '/todos', { queue: 'reviews', title: 'Review PR #7' })
  ).body.todo;
  const row = w.page.locator(`#live-todo-${created.id}`);
  await expect.poll(() => row.locator('.state').textContent(), { timeout: 5000 }).toBe('pending');
  const { todo: claimed } = (await server.api(agent, 'POST', `/todos/${created.id}/claim`)).body;
  await expect.poll(() => row.textContent(), { timeout: 5000 }).toMatch(/claimed by worker/);
  await server.api(agent, 'POST', `/todos/${created.id}/complete`, {
    lease_token: claimed.lease_token,
    summary: 'LGTM',
  });
  await expect.poll(() => row.locator('.state').textContent(), { timeout: 5000 }).toBe('done');
  // Counted by queue and state.
  expect(await w.page.locator('#live-counts').textContent()).toMatch(/reviews/);
  // Filtered: a state filter that no longer matches takes the row away.
  await w.page.goto(`${server.url}/todos?state=pending&queue=reviews`);
  await waitLive(w.page);
  const next = (
    await server.api(agent, 'POST', '/todos', { queue: 'reviews', title: 'Review PR #8' })
  ).body.todo;
  await w.page.locator(`#live-todo-${next.id}`).waitFor({ timeout: 5000 });
  await server.api(agent, 'POST', `/todos/${next.id}/claim`);
  await w.page.locator(`#live-todo-${next.id}`).waitFor({ state: 'detached', timeout: 5000 });
  clean(w);
});

test('the todo page shows every field and the history; reply and cancel are forms', async () => {
  const w = await browser.newPage();
  await signIn(w.page, server, ada);
  const todo = (
    await server.api(ada, 'POST', '/todos', {
      queue: 'reviews',
      title: 'Look at me',
      body: 'line one\nline two',
    })
  ).body.todo;
  await w.page.goto(`${server.url}/todos/${todo.id}`);
  await waitLive(w.page);
  expect(await w.page.locator('#live-fields').textContent()).toMatch(/attributed to\s*ada/);
  expect(await w.page.locator('#live-fields pre.body').textContent()).toBe('line one\nline two');
  await w.page.getByLabel('Reply').fill('on it');
  await w.page.getByRole('button', { name: 'Reply' }).click();
  await w.page.waitForURL(`${server.url}/todos/${todo.id}`);
  await expect
    .poll(() => w.page.locator('#live-history').textContent())
    .toMatch(/replied[\s\S]*on it/);
  await w.page.getByLabel('Reason (optional)').fill('not needed');
  await w.page.getByRole('button', { name: 'Cancel' }).click();
  await expect.poll(() => w.page.locator('#live-fields .state').textContent()).toBe('canceled');
  const { body } = await server.api(ada, 'GET', `/todos/${todo.id}`);
  expect(body.todo).toMatchObject({ state: 'canceled', summary: 'not needed' });
  expect(body.history.map((e: { action: string; via: string }) => `${e.action} ${e.via}`)).toEqual(
    expect.arrayContaining(['replied web', 'canceled web']),
  );
  clean(w);
});

test('quarantine shows why a todo waits and releases it; agents are vended (token shown once) and revoked', async () => {
  const w = await browser.newPage();
  await signIn(w.page, server, ada);
  const [held] = await server.sql<{ id: number }[]>`
    insert into todos (queue, kind, title, state, source, attributed_to)
    values ('reviews', 'github.issue_comment.created', 'From an outsider', 'quarantined', 'github', 'stranger')
    returning id`;
  await server.sql`insert into deliveries (source, kind, delivery_id, event, disposition, todo_id, note)
                   values ('github', 'github', 'd-1', 'issue_comment', 'quarantined', ${held!.id}, 'stranger (NONE) is not trusted')`;
  await w.page.goto(`${server.url}/quarantine`);
  const item = w.page.locator(`#live-todo-${held!.id}`);
  expect(await item.locator('.why').textContent()).toMatch(/stranger \(NONE\) is not trusted/);
  await item.getByRole('button', { name: 'Release' }).click();
  await w.page.waitForURL(`${server.url}/quarantine`);
  expect(await w.page.locator(`#live-todo-${held!.id}`).count()).toBe(0);
  expect((await server.api(ada, 'GET', `/todos/${held!.id}`)).body.todo.state).toBe('pending');

  await w.page.goto(`${server.url}/deliveries`);
  expect(await w.page.locator('table.deliveries').textContent()).toMatch(
    /quarantined[\s\S]*not trusted/,
  );

  await w.page.goto(`${server.url}/agents`);
  await w.page.getByLabel('Name').fill('reviewer');
  await w.page.getByLabel(/Queues/).fill('reviews, ci');
  await w.page.getByRole('button', { name: 'Vend' }).click();
  const token = (await w.page.getByLabel('Token of reviewer').textContent())!.trim();
  expect(token).toMatch(/^sbk_/);
  expect(await w.page.getByLabel('.mcp.json').textContent()).toContain(token);
  expect((await server.api(token, 'GET', '/whoami')).body.principal).toMatchObject({
    name: 'reviewer',
    queues: ['reviews', 'ci'],
  });
  await w.page.goto(`${server.url}/agents`);
  await w.page.getByRole('button', { name: 'Revoke reviewer' }).click();
  await w.page.waitForURL(`${server.url}/agents`);
  expect((await server.api(token, 'GET', '/whoami')).status).toBe(401);
  clean(w);
});

test(
  'the bad-input corpus shows as text wherever it can appear, and nothing executes',
  { timeout: 90_000 },
  async () => {
    const w = await browser.newPage();
    // Anything that would run: a dialog, or a script the page did not load itself.
    const dialogs: string[] = [];
    w.page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await signIn(w.page, server, ada);
    const hostile = STRINGS.stored_as_sent;
    const megabytes = 'A'.repeat(3 * 1024 * 1024) + '<script>alert("big")</script>';
    const ids: number[] = [];
    for (const s of hostile) {
      // Titles, bodies and questions (neutralised at ingest) …
      const question = (
        await server.api(agent, 'POST', '/approvals', { question: s.text, body: s.text })
      ).body.todo;
      const todo = (
        await server.api(agent, 'POST', '/todos', { queue: 'reviews', title: s.text, body: s.text })
      ).body.todo;
      // … replies and notes (kept as sent).
      expect(
        (await server.api(ada, 'POST', `/todos/${todo.id}/reply`, { text: s.text })).status,
      ).toBe(200);
      ids.push(question.id, todo.id);
    }
    const big = (
      await server.api(agent, 'POST', '/approvals', {
        question: 'big <img src=x onerror=alert(2)>',
        body: megabytes.slice(0, 60_000),
      })
    ).body.todo;
    expect(big.id).toBeGreaterThan(0);
    // Notes on verdicts, from the page itself.
    await w.page.goto(server.url);
    await waitLive(w.page);
    const noteFor = hostile.find((s) => s.name === 'markup')!;
    const first = w.page.locator(`#live-approval-${ids[0]}`);
    await first.getByLabel('Note (optional)').fill(noteFor.text);
    await first.getByRole('button', { name: 'Allow', exact: true }).click();
    await expect
      .poll(() => w.page.locator(`#live-approval-${ids[0]} .note`).textContent())
      .toBe(noteFor.text);

    for (const path of [
      '/',
      '/todos?state=all',
      ...ids.map((id, i) => (i % 2 ? `/todos/${id}` : `/approvals/${id}`)),
      `/approvals/${big.id}`,
    ]) {
      await w.page.goto(`${server.url}${path}`);
    }
    // Every page once more, checking what shows.
    await w.page.goto(`${server.url}/todos?state=all`);
    for (const s of hostile) {
      expect(await w.page.locator('td.title', { hasText: s.title }).count()).toBeGreaterThan(0);
    }
    for (const [i, s] of hostile.entries()) {
      await w.page.goto(`${server.url}/approvals/${ids[i * 2]}`);
      const shown = w.page.locator(`#live-approval-${ids[i * 2]}`);
      expect(await shown.locator('.question span').textContent()).toBe(s.title);
      expect(await shown.locator('pre.preview').textContent()).toBe(s.body);
      await w.page.goto(`${server.url}/todos/${ids[i * 2 + 1]}`);
      expect(await w.page.locator('#live-fields .title').textContent()).toBe(s.title);
      expect(await w.page.locator('#live-fields pre.body').textContent()).toBe(s.body);
      const replied = w.page.locator('#live-history tr', { hasText: 'replied' });
      expect(await replied.locator('code.data').textContent()).toBe(
        JSON.stringify({ text: s.text }),
      );
    }
    // No element the corpus could have smuggled in exists: every <script> and <img> is the page's own.
    const foreign: string[] = await w.page.evaluate(() => {
      const doc = (globalThis as any).document;
      return [
        ...[...doc.querySelectorAll('script')]
          .filter((s: any) => !s.src.includes('/assets/'))
          .map((s: any) => s.outerHTML),
        ...[...doc.querySelectorAll('img, [onerror], [onclick]')].map((e: any) => e.outerHTML),
      ];
    });
    expect(foreign).toEqual([]);
    expect(dialogs).toEqual([]);
    clean(w);
  },
);
