import { afterAll, beforeAll, expect, test, vi } from 'vitest';
import { parseJson, runCli } from '../cli/support/run-cli.js';
import { startClaudeCode, type ClaudeCode } from '../support/claude-code-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { launchBrowser, type TestBrowser, type WatchedPage } from '../web/support/browser.js';
import { addHuman, card, signIn, signInLink, waitLive } from '../web/support/console.js';

let server: TestServer;
let browser: TestBrowser;
let claude: ClaudeCode;
let coder: string;
let cliEnv: Record<string, string>;

beforeAll(async () => {
  server = await startTestServer();
  coder = await addHuman(server, 'coder');
  const agent = (await server.api(coder, 'POST', '/agents', { name: 'bot', queues: ['issues'] }))
    .body.token;
  // The real `switchboard channel`, driven by a Claude Code stand-in, as the agent of coder.
  claude = await startClaudeCode({ SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: agent });
  cliEnv = { SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: coder };
  browser = await launchBrowser();
  await vi.waitFor(async () => {
    const [{ n }] = await server.sql<[{ n: number }]>`
      select count(*)::int as n from consumer_sessions where path = 'channel'`;
    expect(n).toBe(1);
  }, 10_000);
});
afterAll(async () => {
  await browser?.close();
  await claude?.close();
  await server?.stop();
});

let asked = 0;
/** Claude Code asks for permission through the channel; resolves with the approval's id. */
async function askPermission(
  tool: string,
  input: string,
): Promise<{ id: number; requestId: string }> {
  // Five letters a–z without l, distinct per prompt.
  const requestId = `abc${'defghijkmnopqrstuvwxyz'[asked]}${'defghijkmnopqrstuvwxyz'[asked + 1]}`;
  asked++;
  await claude.askPermission({
    request_id: requestId,
    tool_name: tool,
    description: `Run ${tool}`,
    input_preview: input,
  });
  let id = 0;
  await expect
    .poll(async () => {
      const { body } = await server.api(coder, 'GET', '/todos?mine=true&queue=approvals');
      id = body.todos.find((t: { request_id: string }) => t.request_id === requestId)?.id ?? 0;
      return id;
    })
    .toBeGreaterThan(0);
  return { id, requestId };
}

/** A mark in the page's window: still there later means the page was never reloaded. */
async function markPage(w: WatchedPage): Promise<() => Promise<boolean>> {
  await w.page.evaluate(() => ((globalThis as any).mark = 42));
  return () => w.page.evaluate(() => (globalThis as any).mark === 42);
}

function expectNoRefusals(w: WatchedPage) {
  expect(w.refusals()).toEqual([]);
  expect(w.errors).toEqual([]);
}

test('a permission prompt relayed by the channel appears in the open page without a reload; Allow sends allow back to Claude Code', async () => {
  const w = await browser.newPage();
  await signIn(w.page, server, coder);
  const notReloaded = await markPage(w);
  await expect.poll(() => w.page.title()).toBe('Approvals · switchboard');

  const { id, requestId } = await askPermission('Bash', '{"command":"npm test -- --run"}');
  const approval = card(w.page, id);
  await approval.waitFor({ timeout: 5000 });
  await expect.poll(() => approval.locator('.question').textContent()).toContain('Bash');
  // The tool's full input, as text.
  expect(await approval.locator('pre.preview').textContent()).toBe(
    '{"command":"npm test -- --run"}',
  );
  expect(await approval.textContent()).toContain('asked by bot');
  // The title carries the count of waiting approvals.
  await expect.poll(() => w.page.title()).toBe('(1) Approvals · switchboard');

  await approval.getByRole('button', { name: 'Allow', exact: true }).click();
  await expect
    .poll(() => claude.verdicts)
    .toContainEqual({ request_id: requestId, behavior: 'allow' });
  await expect
    .poll(() => card(w.page, id).locator('.outcome').textContent())
    .toMatch(/allowed\s+by\s+coder\s+via\s+web/);
  await expect.poll(() => w.page.title()).toBe('Approvals · switchboard');
  expect(await notReloaded()).toBe(true);

  // Recorded as the human, via web, exactly as the API records a CLI verdict via cli.
  const { body } = await server.api(coder, 'GET', `/todos/${id}`);
  expect(body.todo).toMatchObject({ state: 'done', verdict: 'allow', decided_by: 'coder' });
  expect(body.history.find((e: { action: string }) => e.action === 'approved')).toMatchObject({
    actor: 'coder',
    actor_kind: 'human',
    via: 'web',
  });
  expectNoRefusals(w);
});

test('Deny with a note sends deny back to Claude Code, and the card shows the note', async () => {
  const w = await browser.newPage();
  await signIn(w.page, server, coder);
  const { id, requestId } = await askPermission('Write', '{"file_path":"/etc/passwd"}');
  const approval = card(w.page, id);
  await approval.waitFor({ timeout: 5000 });
  await approval.getByLabel('Note (optional)').fill('not that file');
  await approval.getByRole('button', { name: 'Deny', exact: true }).click();
  await expect
    .poll(() => claude.verdicts)
    .toContainEqual({ request_id: requestId, behavior: 'deny' });
  const outcome = card(w.page, id).locator('.outcome');
  await expect.poll(() => outcome.textContent()).toMatch(/denied\s+by\s+coder\s+via\s+web/);
  expect(await outcome.locator('.note').textContent()).toBe('not that file');
  const { body } = await server.api(coder, 'GET', `/todos/${id}`);
  expect(body.todo).toMatchObject({ verdict: 'deny', summary: 'not that file' });
  expectNoRefusals(w);
});

test('an approval answered meanwhile from the CLI flips the open card to "allowed by … via cli"', async () => {
  const w = await browser.newPage();
  await signIn(w.page, server, coder);
  const notReloaded = await markPage(w);
  const { id, requestId } = await askPermission('Bash', '{"command":"git push"}');
  await card(w.page, id).getByRole('button', { name: 'Allow', exact: true }).waitFor();

  const approved = await runCli(['todo', 'approve', String(id), '--json'], cliEnv);
  expect(approved.code).toBe(0);
  expect(parseJson(approved).todo.verdict).toBe('allow');

  await expect
    .poll(() => card(w.page, id).locator('.outcome').textContent(), { timeout: 5000 })
    .toMatch(/allowed\s+by\s+coder\s+via\s+cli/);
  expect(await card(w.page, id).getByRole('button', { name: 'Allow' }).count()).toBe(0);
  expect(await notReloaded()).toBe(true);
  await expect
    .poll(() => claude.verdicts)
    .toContainEqual({ request_id: requestId, behavior: 'allow' });
  expectNoRefusals(w);
});

test('losing the race shows the winner, not an error page — with htmx and without JavaScript', async () => {
  for (const javaScriptEnabled of [true, false]) {
    const w = await browser.newPage({ javaScriptEnabled });
    // No stream: the card must not flip before the click, so that the click loses the race.
    await w.page.route('**/live?*', (route) => route.abort());
    await w.page.goto(await signInLink(server, coder));
    const { id } = await askPermission('Edit', '{"file_path":"README.md"}');
    // Without JavaScript the page never updates by itself: load it once the approval exists.
    await w.page.goto(`${server.url}/approvals/${id}`);
    const deny = card(w.page, id).getByRole('button', { name: 'Deny', exact: true });
    await deny.waitFor();
    expect((await runCli(['todo', 'approve', String(id)], cliEnv)).code).toBe(0);
    await deny.click();
    await expect
      .poll(() => card(w.page, id).locator('.outcome').textContent())
      .toMatch(/allowed\s+by\s+coder\s+via\s+cli/);
    expect(new URL(w.page.url()).pathname).toBe(`/approvals/${id}`);
    const { body } = await server.api(coder, 'GET', `/todos/${id}`);
    expect(body.todo.verdict).toBe('allow');
    expect(w.refusals()).toEqual([]);
    await w.context.close();
  }
});

test('without JavaScript, Allow is a plain form: POST, then 303 back to the page', async () => {
  const w = await browser.newPage({ javaScriptEnabled: false });
  await w.page.goto(await signInLink(server, coder));
  const { id, requestId } = await askPermission('Read', '{"file_path":"package.json"}');
  await w.page.reload();
  const responses: number[] = [];
  w.page.on('response', (response) => {
    if (response.request().method() === 'POST') responses.push(response.status());
  });
  await card(w.page, id).getByRole('button', { name: 'Allow', exact: true }).click();
  await w.page.waitForLoadState();
  expect(responses).toEqual([303]);
  expect(await card(w.page, id).locator('.outcome').textContent()).toMatch(
    /allowed\s+by\s+coder\s+via\s+web/,
  );
  await expect
    .poll(() => claude.verdicts)
    .toContainEqual({ request_id: requestId, behavior: 'allow' });
});

test('j/k move between cards, a allows the focused one after a confirmation, d denies', async () => {
  const w = await browser.newPage();
  await signIn(w.page, server, coder);
  const first = await askPermission('Bash', '{"command":"ls"}');
  const second = await askPermission('Bash', '{"command":"pwd"}');
  await card(w.page, second.id).waitFor();
  await card(w.page, first.id).waitFor();
  const dialogs: string[] = [];
  let accept = false;
  w.page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void (accept ? dialog.accept() : dialog.dismiss());
  });
  // Newest first: j focuses the newest, j again the one below it, k back up.
  await w.page.keyboard.press('j');
  await w.page.keyboard.press('j');
  await w.page.keyboard.press('k');
  expect(await w.page.evaluate(() => (globalThis as any).document.activeElement?.id)).toBe(
    `live-approval-${second.id}`,
  );
  // A dismissed confirmation changes nothing.
  await w.page.keyboard.press('a');
  expect(dialogs).toEqual([`Allow approval #${second.id}?`]);
  expect((await server.api(coder, 'GET', `/todos/${second.id}`)).body.todo.state).toBe('pending');
  accept = true;
  await w.page.keyboard.press('a');
  await expect
    .poll(() => claude.verdicts)
    .toContainEqual({ request_id: second.requestId, behavior: 'allow' });
  // The decided card keeps the focus (htmx keeps it on the element with the same id).
  await expect.poll(() => card(w.page, second.id).locator('.outcome').count()).toBe(1);
  expect(await w.page.evaluate(() => (globalThis as any).document.activeElement?.id)).toBe(
    `live-approval-${second.id}`,
  );
  await w.page.keyboard.press('j');
  expect(await w.page.evaluate(() => (globalThis as any).document.activeElement?.id)).toBe(
    `live-approval-${first.id}`,
  );
  await w.page.keyboard.press('d');
  expect(dialogs.at(-1)).toBe(`Deny approval #${first.id}?`);
  await expect
    .poll(() => claude.verdicts)
    .toContainEqual({ request_id: first.requestId, behavior: 'deny' });
  expectNoRefusals(w);
});

test('a browser notification tells of an approval that arrives while a page is open (permission asked on a click)', async () => {
  const w = await browser.newPage();
  // The page's Notification, recorded: headless Chromium shows none, so the calls are the proof.
  await w.context.addInitScript(() => {
    const shown: { title: string; body: string }[] = [];
    let permission = 'default';
    class RecordedNotification {
      static get permission() {
        return permission;
      }
      static requestPermission() {
        permission = 'granted';
        return Promise.resolve(permission);
      }
      onclick: (() => void) | null = null;
      constructor(title: string, options: { body: string }) {
        shown.push({ title, body: options.body });
      }
    }
    Object.assign(globalThis, { Notification: RecordedNotification, shown });
  });
  await w.page.goto(await signInLink(server, coder));
  await w.page.goto(`${server.url}/todos`);
  await waitLive(w.page);
  const button = w.page.getByRole('button', { name: 'Notify me' });
  await button.click();
  await expect.poll(() => button.isHidden()).toBe(true);
  const { id } = await askPermission('Bash', '{"command":"make deploy"}');
  await expect
    .poll(() => w.page.evaluate(() => (globalThis as any).shown))
    .toEqual([
      {
        title: `switchboard: approval #${id} waits for you`,
        body: 'Claude Code wants to use Bash: Run Bash',
      },
    ]);
  // The board's title counts it too.
  await expect.poll(() => w.page.title()).toMatch(/^\(\d+\) Board · switchboard$/);
  expectNoRefusals(w);
});

test('regression: a verdict refused with a reason past Latin-1 still answers with the card (the reason rides in a header)', async () => {
  const w = await browser.newPage();
  await w.page.route('**/live?*', (route) => route.abort());
  await w.page.goto(await signInLink(server, coder));
  const { todo } = (await server.api(coder, 'POST', '/approvals', { question: 'Ship it?' })).body;
  await w.page.goto(`${server.url}/approvals/${todo.id}`);
  const allow = card(w.page, todo.id).getByRole('button', { name: 'Allow', exact: true });
  await allow.waitFor();
  const reason = 'plus tard — après la release ✋';
  expect((await server.api(coder, 'POST', `/todos/${todo.id}/cancel`, { reason })).status).toBe(
    200,
  );
  await allow.click();
  await expect
    .poll(() => card(w.page, todo.id).locator('.outcome').textContent())
    .toContain(`canceled — ${reason}`);
  await expect.poll(() => w.page.locator('#flash').textContent()).toContain(reason);
  expect(w.errors).toEqual([]);
});
