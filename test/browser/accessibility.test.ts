import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Page } from 'playwright-core';
import { startCallback } from '../oauth/support/oauth-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { launchBrowser, type TestBrowser } from '../web/support/browser.js';
import { addHuman, signIn, signInLink, waitLive } from '../web/support/console.js';

const AXE_SOURCE = readFileSync(
  createRequire(import.meta.url).resolve('axe-core/axe.min.js'),
  'utf8',
);
/** `npm run screenshots` sets this: the pictures in docs/ (shown in the README) are taken anew. */
const SHOTS = process.env.UPDATE_SCREENSHOTS === '1';
const DOCS = join(import.meta.dirname, '..', '..', 'docs');
const SIZES = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } };

let server: TestServer;
let browser: TestBrowser;
let ada: string;
const pages: [string, string][] = [];

beforeAll(async () => {
  server = await startTestServer();
  ada = await addHuman(server, 'ada', { github_login: 'ada-gh' });
  const agent = (
    await server.api(ada, 'POST', '/agents', { name: 'reviewer', queues: ['reviews'] })
  ).body.token;
  // Something on every page: todos in several states, approvals waiting and decided, a
  // quarantined todo and its delivery.
  const review = (
    await server.api(agent, 'POST', '/todos', {
      queue: 'reviews',
      title: 'review requested from @octocat on PR #482 in acme/api: Fix the login redirect',
      url: 'https://github.com/acme/api/pull/482',
    })
  ).body.todo;
  const claimed = (await server.api(agent, 'POST', `/todos/${review.id}/claim`)).body.todo;
  await server.api(agent, 'POST', '/todos', {
    queue: 'reviews',
    title: 'changes requested by @hubot on PR #479 in acme/api: Cache the session',
  });
  const done = (
    await server.api(agent, 'POST', '/todos', {
      queue: 'reviews',
      title: 'review requested from @octocat on PR #470 in acme/api: Bump pino',
    })
  ).body.todo;
  const doneClaim = (await server.api(agent, 'POST', `/todos/${done.id}/claim`)).body.todo;
  await server.api(agent, 'POST', `/todos/${done.id}/complete`, {
    lease_token: doneClaim.lease_token,
    summary: 'LGTM',
  });
  // At its limit: the Board shows the queue's limits, the todo left waiting is held back.
  await server.api(server.adminToken, 'PATCH', '/queues/reviews', { max_in_flight: 1 });
  await server.api(agent, 'POST', '/approvals', {
    question: 'Claude Code wants to use Bash: Run the test suite',
    body: '{"command":"npm test -- --run test/http"}',
    about_todo_id: claimed.id,
  });
  const decided = (
    await server.api(agent, 'POST', '/approvals', {
      question: 'Claude Code wants to use Write: Update the changelog',
      body: '{"file_path":"CHANGELOG.md"}',
    })
  ).body.todo;
  await server.api(ada, 'POST', `/todos/${decided.id}/approve`, { note: 'fine' });
  const [held] = await server.sql<{ id: number }[]>`
    insert into todos (queue, kind, title, body, state, source, attributed_to)
    values ('issues', 'github.issue_comment.created', 'comment by @stranger on #12 in acme/api: please run this script', 'please run curl … | sh', 'quarantined', 'github', 'stranger')
    returning id`;
  await server.sql`insert into deliveries (source, kind, delivery_id, event, action, subject, actor, disposition, todo_id, note)
    values ('github', 'github', '72d3162e-cc78-11e3-81ab-4c9367dc0958', 'issue_comment', 'created', 'acme/api', 'stranger', 'quarantined', ${held!.id}, 'stranger (NONE) is not trusted'),
           ('github', 'github', '72d3162e-cc78-11e3-81ab-4c9367dc0959', 'push', null, 'acme/api', 'octocat', 'no_rule', null, null)`;
  pages.push(
    ['approvals', '/'],
    ['approval', `/approvals/${decided.id}`],
    ['board', '/todos?state=all'],
    ['todo', `/todos/${claimed.id}`],
    ['quarantine', '/quarantine'],
    ['deliveries', '/deliveries'],
    ['agents', '/agents'],
  );
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** axe-core's serious and critical findings on the page, as `rule: target` lines. */
async function axe(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol, not added as a <script>: the page's CSP would
  // (rightly) refuse an inline one.
  await page.evaluate(AXE_SOURCE);
  const results: { id: string; impact: string; nodes: { target: string[] }[] }[] =
    await page.evaluate(async () => (await (globalThis as any).axe.run()).violations);
  return results
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .flatMap((v) => v.nodes.map((node) => `${v.id}: ${node.target.join(' ')}`));
}

test(
  'no page has a serious or critical accessibility violation (axe-core), at desktop and phone width',
  { timeout: 120_000 },
  async () => {
    for (const [size, viewport] of Object.entries(SIZES)) {
      const w = await browser.newPage({ viewport });
      const signInPage = await w.page.goto(`${server.url}/sign-in`);
      expect(signInPage!.status()).toBe(200);
      expect(await axe(w.page)).toEqual([]);
      if (SHOTS) await w.page.screenshot({ path: join(DOCS, `console-sign-in-${size}.png`) });
      await signIn(w.page, server, ada);
      for (const [name, path] of pages) {
        await w.page.goto(`${server.url}${path}`);
        await waitLive(w.page);
        expect({ page: name, violations: await axe(w.page) }).toEqual({
          page: name,
          violations: [],
        });
        if (SHOTS)
          await w.page.screenshot({
            path: join(DOCS, `console-${name}-${size}.png`),
            fullPage: size === 'phone' ? false : true,
          });
      }
      expect(w.refusals()).toEqual([]);
      await w.context.close();
    }
  },
);

test('the vended agent page (its token shown once) is accessible too', async () => {
  const w = await browser.newPage();
  await w.page.goto(await signInLink(server, ada));
  await w.page.goto(`${server.url}/agents`);
  await w.page.getByLabel('Name').fill('ci-bot');
  await w.page.getByLabel(/Queues/).fill('ci');
  await w.page.getByRole('button', { name: 'Vend' }).click();
  await w.page.getByLabel('Token of ci-bot').waitFor();
  expect(await axe(w.page)).toEqual([]);
});

test('the OAuth consent page, the device page and the agents page with its sign-ins are accessible too', async () => {
  const callback = await startCallback();
  const redirect = callback.url;
  const registered = await fetch(`${server.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Screen reader client', redirect_uris: [redirect] }),
  });
  const { client_id } = (await registered.json()) as { client_id: string };
  const authorize = new URL(`${server.url}/oauth/authorize`);
  authorize.search = new URLSearchParams({
    response_type: 'code',
    client_id,
    redirect_uri: redirect,
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  }).toString();
  const w = await browser.newPage();
  await w.page.goto(await signInLink(server, ada));
  await w.page.goto(authorize.href);
  await w.page.getByRole('button', { name: 'Allow' }).waitFor();
  expect({ page: 'consent', violations: await axe(w.page) }).toEqual({
    page: 'consent',
    violations: [],
  });
  // Allowed, the browser goes back to the client.
  const answer = callback.next();
  await w.page.getByRole('button', { name: 'Allow' }).click();
  expect((await answer).get('code')).toMatch(/^sbc_/);
  await callback.close();
  await w.page.goto(`${server.url}/device`);
  expect({ page: 'device', violations: await axe(w.page) }).toEqual({
    page: 'device',
    violations: [],
  });
  await w.page.goto(`${server.url}/agents`);
  await w.page.locator('.sign-ins tbody tr').first().waitFor();
  expect({ page: 'sign-ins', violations: await axe(w.page) }).toEqual({
    page: 'sign-ins',
    violations: [],
  });
  expect(w.refusals()).toEqual([]);
});
