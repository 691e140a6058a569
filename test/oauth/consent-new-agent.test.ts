import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { addHuman } from '../web/support/console.js';
import {
  consoleSession,
  MemoryOAuthProvider,
  startCallback,
  type Callback,
  type ConsoleSession,
} from './support/oauth-client.js';

// The consent page's "A new agent", answered over HTTP as a browser submits the page's form:
// what the page fills in is what a human who just presses Allow sends.
let server: TestServer;
let callback: Callback;
let ada: ConsoleSession;

beforeAll(async () => {
  [server, callback] = await Promise.all([startTestServer(), startCallback()]);
  ada = await consoleSession(server, await addHuman(server, 'ada'));
});
afterAll(async () => {
  await server?.stop();
  await callback?.close();
});

/** A client named `name` registers and sends its human to the consent page: its path and HTML. */
async function consentFor(name: string): Promise<{ path: string; page: string }> {
  const provider = new MemoryOAuthProvider(callback.url, name);
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', server.url), {
    authProvider: provider,
  });
  await expect(
    new Client({ name: 'consent', version: '1' }).connect(transport),
  ).rejects.toBeInstanceOf(UnauthorizedError);
  const asked = await fetch(provider.authorizationUrl!, { redirect: 'manual' });
  expect(asked.status).toBe(302);
  const path = new URL(asked.headers.get('location')!).pathname;
  const answer = await ada.request(path);
  expect(answer.status).toBe(200);
  return { path, page: await answer.text() };
}

/** The consent form's fields as a browser would send them untouched (the checked radio only). */
function formOf(page: string): Record<string, string> {
  const form: Record<string, string> = {};
  for (const [tag] of page.matchAll(/<input\b[^>]*>/g)) {
    const attribute = (key: string): string | undefined => {
      const match = new RegExp(`\\s${key}(?:="([^"]*)")?(?=[\\s/>])`).exec(tag);
      return match ? (match[1] ?? '') : undefined;
    };
    const name = attribute('name');
    if (!name || name === '_csrf') continue;
    if (attribute('type') === 'radio' && attribute('checked') === undefined) continue;
    form[name] = attribute('value') ?? '';
  }
  return form;
}

const agentsOf = async (owner: string) =>
  (
    await server.sql<{ name: string; queues: string[] }[]>`
      select name, queues from principals where owner = ${owner} order by id`
  ).map((agent) => ({ ...agent }));

test('regression: the consent page offered its new agent with no name, so a human who pressed Allow was told the name was wrong', async () => {
  const { path, page } = await consentFor('Claude Code');
  // No agents yet: "A new agent" is the choice, with a name made from the client's.
  const offered = formOf(page);
  expect(offered).toEqual({ agent: '', new_name: 'claude-code', new_queues: '' });
  expect(page).toMatch(/<input[^>]*id="new-queues"[^>]*required/);

  // The human picks its queues (the field is required) and presses Allow.
  const allowed = await ada.request(path, { ...offered, new_queues: 'reviews', decision: 'allow' });
  expect(allowed.status, await allowed.clone().text()).toBe(303);
  const back = new URL(allowed.headers.get('location')!);
  expect(back.origin + back.pathname).toBe(callback.url);
  expect(back.searchParams.get('code')).toBeTruthy();
  expect(await agentsOf('ada')).toEqual([{ name: 'claude-code', queues: ['reviews'] }]);
});

test('the name offered is free (a taken one, revoked ones too, gets a suffix), spelled as names must be, and what the human types wins', async () => {
  // ada's claude-code (above) is taken: the next Claude Code is offered claude-code-2, while
  // the agent ada has stays the choice made for her.
  const second = formOf((await consentFor('Claude Code')).page);
  expect(second).toEqual({ agent: 'claude-code', new_name: 'claude-code-2', new_queues: '' });

  const bob = await addHuman(server, 'bob');
  for (const name of ['cursor-cafe', 'cursor-cafe-2']) {
    expect((await server.api(bob, 'POST', '/agents', { name, queues: ['ci'] })).status).toBe(201);
  }
  expect((await server.api(bob, 'POST', '/agents/cursor-cafe-2/revoke')).status).toBe(200);
  expect(formOf((await consentFor('  Cursor — Café!  ')).page).new_name).toBe('cursor-cafe-3');
  expect(formOf((await consentFor('✨✨')).page).new_name).toBe('agent');

  const { path } = await consentFor('Claude Code');
  const typed = await ada.request(path, {
    agent: '',
    new_name: 'reviewer',
    new_queues: 'reviews ci',
    decision: 'allow',
  });
  expect(typed.status).toBe(303);
  expect(await agentsOf('ada')).toEqual([
    { name: 'claude-code', queues: ['reviews'] },
    { name: 'reviewer', queues: ['reviews', 'ci'] },
  ]);
});

test('regression: a refused new agent is said on the same page, which forgot what the human had chosen and typed; it keeps them, and nothing changes', async () => {
  const { path } = await consentFor('Zed');
  const before = await server.sql`
    select (select count(*)::int from principals) as principals,
           (select count(*)::int from oauth_grants) as grants`;
  const refused = await ada.request(path, {
    agent: '',
    new_name: 'Not A Name',
    new_queues: 'issues',
    decision: 'allow',
  });
  expect(refused.status).toBe(400);
  const page = await refused.text();
  expect(page).toContain('name must be lowercase letters');
  expect(formOf(page)).toEqual({ agent: '', new_name: 'Not A Name', new_queues: 'issues' });
  expect(
    await server.sql`
      select (select count(*)::int from principals) as principals,
             (select count(*)::int from oauth_grants) as grants`,
  ).toEqual(before);
});
