import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Locator, Page } from 'playwright-core';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { launchBrowser, type TestBrowser } from '../web/support/browser.js';
import { addHuman, signIn, waitLive } from '../web/support/console.js';

// Layout facts, asserted in a real browser at a desktop's and a phone's width: the order things
// come in, what shares a line, and that no page is wider than its window. Not pixels.

const SIZES = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } };
const LONG = 'x'.repeat(200);

let server: TestServer;
let browser: TestBrowser;
let ada: string;
let agent: string;
const ids: Record<string, number> = {};

beforeAll(async () => {
  server = await startTestServer();
  ada = await addHuman(server, 'ada');
  agent = (await server.api(ada, 'POST', '/agents', { name: 'coder', queues: ['reviews'] })).body
    .token;
  const ask = async (question: string) =>
    (await server.api(agent, 'POST', '/approvals', { question, body: '{"command":"npm test"}' }))
      .body.todo.id as number;
  // Oldest first: pending, decided, pending, decided — as a day of approvals goes.
  ids.firstPending = await ask('Claude Code wants to use Bash: npm test');
  ids.firstDecided = await ask('Claude Code wants to use Write: CHANGELOG.md');
  ids.secondPending = await ask('Claude Code wants to use Bash: git status');
  ids.secondDecided = await ask(`Claude Code wants to use Read: ${LONG}`);
  const decide = (id: number, verdict: 'approve' | 'deny') =>
    fetch(`${server.url}/api/v1/todos/${id}/${verdict}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${ada}`,
        'content-type': 'application/json',
        'x-switchboard-client': 'cli',
      },
      body: '{}',
    });
  expect((await decide(ids.firstDecided, 'approve')).status).toBe(200);
  expect((await decide(ids.secondDecided, 'deny')).status).toBe(200);
  ids.long = (
    await server.api(agent, 'POST', '/todos', {
      queue: 'reviews',
      title: LONG,
      body: LONG,
      url: `https://example.com/${LONG}`,
    })
  ).body.todo.id;
  // A todo in every state, so that the Board counts them in seven columns.
  const make = async (title: string) =>
    (await server.api(agent, 'POST', '/todos', { queue: 'reviews', title })).body.todo;
  const claim = async (id: number) =>
    (await server.api(agent, 'POST', `/todos/${id}/claim`)).body.todo;
  await claim((await make('claimed')).id);
  const done = await claim((await make('done')).id);
  await server.api(agent, 'POST', `/todos/${done.id}/complete`, { lease_token: done.lease_token });
  const failed = await claim((await make('failed')).id);
  await server.api(agent, 'POST', `/todos/${failed.id}/fail`, { lease_token: failed.lease_token });
  await server.api(ada, 'POST', `/todos/${(await make('canceled')).id}/cancel`, {});
  await server.sql`
    insert into todos (queue, kind, title, state, source, attributed_to)
    values ('reviews', 'manual', 'quarantined', 'quarantined', 'api', 'stranger')`;
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

const signedInPages = new Map<keyof typeof SIZES, Promise<Page>>();

/** One signed-in page per width, shared by the tests (a sign-in per test only costs time). */
function signedIn(size: keyof typeof SIZES): Promise<Page> {
  if (!signedInPages.has(size)) {
    signedInPages.set(
      size,
      browser.newPage({ viewport: SIZES[size] }).then(async (w) => {
        await signIn(w.page, server, ada);
        return w.page;
      }),
    );
  }
  return signedInPages.get(size)!;
}

async function open(page: Page, path: string): Promise<void> {
  await page.goto(`${server.url}${path}`);
  await waitLive(page);
}

const box = async (locator: Locator) => (await locator.boundingBox())!;

describe.each(Object.keys(SIZES) as (keyof typeof SIZES)[])('at %s width', (size) => {
  test("regression: on a todo page the Reply box came before the todo's title", async () => {
    const page = await signedIn(size);
    await open(page, `/todos/${ids.long}`);
    const title = page.locator('#todo-title');
    const reply = page.locator('form.reply');
    // In the document and on the screen: title, fields, history, then the reply box.
    expect(
      await title.evaluate(
        (node, other) => !!(node.compareDocumentPosition(other) & 4 /* FOLLOWING */),
        await reply.elementHandle(),
      ),
    ).toBe(true);
    expect((await box(reply)).y).toBeGreaterThan((await box(page.locator('#live-history'))).y);
  });

  test('regression: decided approval cards were mixed in above pending ones', async () => {
    const page = await signedIn(size);
    await open(page, '/');
    const order = await page
      .locator('#live-list article.approval')
      .evaluateAll((cards) => cards.map((card) => Number(card.getAttribute('data-approval'))));
    // Pending, newest first; then decided, the latest decision first.
    expect(order).toEqual([
      ids.secondPending,
      ids.firstPending,
      ids.secondDecided,
      ids.firstDecided,
    ]);
  });

  test('regression: the verdict block broke "allowed by / root / via cli" onto three lines', async () => {
    const page = await signedIn(size);
    await open(page, '/');
    for (const id of [ids.firstDecided, ids.secondDecided]) {
      const outcome = page.locator(`#live-approval-${id} .outcome`);
      expect(await outcome.textContent()).toMatch(/(allowed|denied)\s+by\s+ada\s+via\s+cli/);
      const tops = await Promise.all(
        ['strong', '.who', '.via'].map(async (part) => (await box(outcome.locator(part))).y),
      );
      expect(Math.max(...tops) - Math.min(...tops), `#${id}: ${tops.join(', ')}`).toBeLessThan(2);
    }
  });

  test('regression: a 200-character unbroken title made a 390 px page 2,863 px wide', async () => {
    const page = await signedIn(size);
    for (const path of [
      '/',
      `/approvals/${ids.secondDecided}`,
      '/todos?state=all',
      `/todos/${ids.long}`,
    ]) {
      await open(page, path);
      const [scrollWidth, clientWidth] = await page.evaluate<[number, number]>(
        'const e = document.documentElement; [e.scrollWidth, e.clientWidth]',
      );
      expect({ path, scrollWidth }).toEqual({ path, scrollWidth: clientWidth });
    }
  });
});

test('regression: on a phone the Board filter stranded its "State" label', async () => {
  const page = await signedIn('phone');
  await open(page, '/todos');
  for (const [label, control] of [
    ['Queue', '#filter-queue'],
    ['State', '#filter-state'],
  ] as const) {
    const above = await box(page.locator('form.filters label', { hasText: label }));
    const under = await box(page.locator(control));
    // Each label sits right above its own control, at the same left edge.
    expect({ label, left: Math.round(above.x) }).toEqual({ label, left: Math.round(under.x) });
    expect(under.y - (above.y + above.height)).toBeGreaterThanOrEqual(0);
    expect(under.y - (above.y + above.height)).toBeLessThan(12);
  }
});

test('regression: an uppercase queue in the Board filter was refused as "Not accepted"', async () => {
  const page = await signedIn('desktop');
  const answer = await page.goto(`${server.url}/todos?queue=Reviews&state=all`);
  expect(answer!.status()).toBe(200);
  await waitLive(page);
  expect(await page.locator('h1').textContent()).toBe('Board');
  expect(await page.locator('#filter-queue').inputValue()).toBe('reviews');
  await page.locator(`#live-todo-${ids.long}`).waitFor();
});

test('regression: an unknown path like /nope showed raw JSON in a browser', async () => {
  const page = await signedIn('desktop');
  const answer = await page.goto(`${server.url}/nope`);
  expect(answer!.status()).toBe(404);
  expect(answer!.headers()['content-type']).toMatch(/^text\/html/);
  expect(await page.locator('h1').textContent()).toBe('Not found');
  expect(await page.locator('main').textContent()).toContain('There is no page at /nope.');
  // Signed in, the page is the console's own, with its navigation.
  expect(await page.locator('nav a[href="/todos"]').count()).toBe(1);
  // A script that asks for JSON, or for anything, still gets the API's JSON.
  for (const accept of ['application/json', '*/*']) {
    const response = await fetch(`${server.url}/nope`, { headers: { accept } });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ error: 'no route for GET /nope', code: 'not_found' });
  }
  const api = await fetch(`${server.url}/api/v1/nope`, { headers: { accept: 'text/html' } });
  expect(api.headers.get('content-type')).toMatch(/^application\/json/);
});
