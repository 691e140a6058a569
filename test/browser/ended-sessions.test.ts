import { afterAll, beforeAll, expect, test } from 'vitest';
import { initializeRequest } from '../support/mcp-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { launchBrowser, type TestBrowser } from '../web/support/browser.js';
import { addHuman, signIn, waitLive } from '../web/support/console.js';
import { signInByFetch, type FetchSession } from '../web/support/push.js';

let server: TestServer;
/** A second process on the same database: what one process ends, every process ends. */
let other: TestServer;
let browser: TestBrowser;

beforeAll(async () => {
  server = await startTestServer();
  other = await startTestServer({ schema: server.schema });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await other?.stop();
  await server?.stop();
});

interface OpenStream {
  /** Everything the stream sent so far. */
  text(): string;
  /** Resolves when the server ended the stream, with everything it sent. */
  ended: Promise<string>;
  /** Resolves when the stream has sent text matching `pattern`. */
  saw(pattern: RegExp): Promise<void>;
  close(): void;
}

/** Opens a streaming GET and reads it to its end. */
async function openStream(url: string, headers: Record<string, string>): Promise<OpenStream> {
  const controller = new AbortController();
  const response = await fetch(url, { headers, signal: controller.signal });
  expect(response.status).toBe(200);
  let text = '';
  const watchers = new Set<() => void>();
  const ended = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of response.body!) {
      text += decoder.decode(chunk as Uint8Array, { stream: true });
      for (const watcher of watchers) watcher();
    }
    return text;
  })();
  ended.catch(() => {});
  return {
    text: () => text,
    ended,
    saw: (pattern) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (!pattern.test(text)) return;
          watchers.delete(check);
          resolve();
        };
        watchers.add(check);
        check();
      }),
    close: () => controller.abort(),
  };
}

/** A console page's live stream, as its browser opens it. */
async function openLive(base: string, session: FetchSession): Promise<OpenStream> {
  const stream = await openStream(`${base}/live?page=%2F&rev=none`, { cookie: session.cookie });
  // The first snapshot: the stream is attached and has shown the page.
  await stream.saw(/event: count/);
  return stream;
}

async function signOut(base: string, session: FetchSession): Promise<void> {
  const response = await fetch(`${base}/sign-out`, {
    method: 'POST',
    headers: {
      cookie: session.cookie,
      origin: base,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ _csrf: session.csrf }),
    redirect: 'manual',
  });
  expect(response.status).toBe(303);
}

/**
 * Waits for the stream to end, unless it first shows `title` (which it must not once its session
 * ended): a stream that goes on fails here at once, with what it sent.
 */
async function expectEndedBefore(stream: OpenStream, title: string): Promise<string> {
  const outcome = await Promise.race([
    stream.ended.then(() => 'ended' as const),
    stream.saw(new RegExp(title)).then(() => 'went on' as const),
  ]);
  expect(outcome, stream.text()).toBe('ended');
  const text = await stream.ended;
  expect(text).not.toContain(title);
  return text;
}

test('regression: a signed-out console session kept its live stream, which went on sending new approvals and the CSRF token', async () => {
  const token = await addHuman(server, 'ada');
  const session = await signInByFetch(server, token);
  const stream = await openLive(server.url, session);

  await signOut(server.url, session);
  const signedOutAt = stream.text().length;
  await server.api(token, 'POST', '/approvals', { question: 'after ada signed out' });
  const text = await expectEndedBefore(stream, 'after ada signed out');
  // Nothing after the sign-out: no form with the session's CSRF token either.
  expect(text.slice(signedOutAt)).not.toContain(session.csrf);

  // The browser's next attempt is refused.
  const again = await fetch(`${server.url}/live?page=%2F&rev=none`, {
    headers: { cookie: session.cookie },
  });
  expect(again.status).toBe(401);
});

test('regression: signing out in one tab left the console open in another tab live', async () => {
  const token = await addHuman(server, 'tabs');
  const w = await browser.newPage();
  await signIn(w.page, server, token);
  const second = await w.context.newPage();
  await second.goto(server.url);
  await waitLive(second);

  await w.page.getByRole('button', { name: 'Sign out' }).click();
  await expect.poll(() => new URL(w.page.url()).pathname).toBe('/sign-in');
  // The other tab's stream was ended by the server: the page says it is offline, and stays so.
  await expect.poll(() => second.locator('#live-status').textContent()).toBe('offline');
  expect(w.refusals()).toEqual([]);
});

test('regression: a console session signed out in one process kept its live stream open in another', async () => {
  const token = await addHuman(server, 'bea');
  const session = await signInByFetch(server, token);
  const stream = await openLive(other.url, session);

  await signOut(server.url, session);
  await server.api(token, 'POST', '/approvals', { question: 'bea signed out elsewhere' });
  await expectEndedBefore(stream, 'bea signed out elsewhere');
});

test('regression: a console session past its time kept its live stream', async () => {
  const token = await addHuman(server, 'cyd');
  const session = await signInByFetch(server, token);
  // At its absolute limit in a few seconds (sliding cannot move that; the stream opens well
  // before): the stream must end when the session does, with nothing to tell of it.
  await server.sql`
    update web_sessions
    set created_at = now() - interval '30 days' + interval '5 seconds',
        expires_at = now() + interval '5 seconds'
    where principal_id = (select id from principals where name = 'cyd')`;
  const stream = await openLive(other.url, session);
  await stream.ended;
  const again = await fetch(`${other.url}/live?page=%2F&rev=none`, {
    headers: { cookie: session.cookie },
  });
  expect(again.status).toBe(401);
});

test('regression: a revoked human’s console kept its live stream', async () => {
  const token = await addHuman(server, 'dee');
  const session = await signInByFetch(server, token);
  const stream = await openLive(other.url, session);
  // Revoked in the database (as `human deactivate` does, among more): that alone is enough.
  await server.sql`update principals set revoked_at = now() where name = 'dee'`;
  await stream.ended;
});

test('regression: a revoked agent’s event stream and MCP notification stream went on ringing', async () => {
  const owner = await addHuman(server, 'eve');
  const agent = (await server.api(owner, 'POST', '/agents', { name: 'evebot', queues: ['q'] })).body
    .token as string;
  const auth = { authorization: `Bearer ${agent}` };

  const events = await openStream(`${other.url}/api/v1/events`, auth);
  await events.saw(/event: ready/);

  const initialize = await fetch(`${other.url}/mcp`, {
    method: 'POST',
    headers: {
      ...auth,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify(initializeRequest('ended-sessions')),
  });
  expect(initialize.status).toBe(200);
  const sessionId = initialize.headers.get('mcp-session-id')!;
  const mcp = await openStream(`${other.url}/mcp`, {
    ...auth,
    'mcp-session-id': sessionId,
    accept: 'text/event-stream',
  });
  // Both attached as consumers of the agent's wakes.
  await expect
    .poll(async () =>
      (
        await server.sql`select path from consumer_sessions where principal = 'evebot' order by path`
      ).map((row) => row.path),
    )
    .toEqual(['mcp_log', 'sse']);

  expect((await server.api(owner, 'POST', '/agents/evebot/revoke')).status).toBe(200);
  await server.api(server.adminToken, 'POST', '/todos', { queue: 'q', title: 'after revoking' });
  await expectEndedBefore(events, 'after revoking');
  await expectEndedBefore(mcp, 'after revoking');
});
