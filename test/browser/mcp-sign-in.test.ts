import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { initializeRequest } from '../support/mcp-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { launchBrowser, type TestBrowser, type WatchedPage } from '../web/support/browser.js';
import { addHuman, signIn } from '../web/support/console.js';
import {
  MemoryOAuthProvider,
  startCallback,
  type Callback,
} from '../oauth/support/oauth-client.js';

// An MCP client nobody here wrote (the MCP SDK's own client-side OAuth) that knows only the
// server's /mcp URL, its human answering the console's consent page in a real Chromium.
let server: TestServer;
let browser: TestBrowser;
let callback: Callback;
let ada: string;

beforeAll(async () => {
  server = await startTestServer();
  ada = await addHuman(server, 'ada');
  expect(
    (await server.api(ada, 'POST', '/agents', { name: 'reviewer', queues: ['reviews'] })).status,
  ).toBe(201);
  browser = await launchBrowser();
  callback = await startCallback();
});
afterAll(async () => {
  await callback?.close();
  await browser?.close();
  await server?.stop();
});

const mcpUrl = () => new URL('/mcp', server.url);

/** Connects with the provider's tokens (no static token anywhere). */
async function connect(provider: MemoryOAuthProvider) {
  const transport = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider });
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await client.connect(transport);
  const call = async (name: string, args: Record<string, unknown> = {}) => {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    const text = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
    return { ...result, text, data: result.structuredContent as any };
  };
  return { client, transport, call };
}

/**
 * The whole sign-in: the client finds it must authorize, registers, and sends its human (the
 * page) to the consent page, where `choose` answers; the redirect brings the code back.
 */
async function signInClient(
  w: WatchedPage,
  provider: MemoryOAuthProvider,
  choose: (w: WatchedPage) => Promise<void>,
): Promise<URLSearchParams> {
  const transport = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider });
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await expect(client.connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
  expect(provider.authorizationUrl).toBeDefined();
  const redirected = callback.next();
  await w.page.goto(provider.authorizationUrl!.href);
  await choose(w);
  const answer = await redirected;
  if (answer.get('code')) await transport.finishAuth(answer.get('code')!);
  await client.close();
  return answer;
}

test('an MCP client that knows only the URL registers, its human consents as an agent, and it works that agent’s queues', async () => {
  // Discovery, as the client sees it: the 401 names the protected resource's metadata.
  const refused = await fetch(mcpUrl(), { method: 'POST' });
  expect(refused.status).toBe(401);
  const metadataUrl = `${server.url}/.well-known/oauth-protected-resource/mcp`;
  expect(refused.headers.get('www-authenticate')).toContain(`resource_metadata="${metadataUrl}"`);

  const w = await browser.newPage();
  await signIn(w.page, server, ada);
  const provider = new MemoryOAuthProvider(callback.url);
  const answer = await signInClient(w, provider, async ({ page }) => {
    await page.getByText('Test MCP client').first().waitFor();
    await page.getByLabel(/^reviewer/).check();
    await page.getByRole('button', { name: 'Allow' }).click();
  });
  expect(answer.get('iss')).toBe(server.url);
  expect(provider.saved).toMatchObject({
    token_type: expect.stringMatching(/^bearer$/i),
    expires_in: 3600,
    refresh_token: expect.stringMatching(/^sbr_/),
  });
  // The client registered itself as a public client: no secret was issued.
  expect(provider.information).toMatchObject({ token_endpoint_auth_method: 'none' });
  expect(provider.information).not.toHaveProperty('client_secret');

  const mcp = await connect(provider);
  try {
    const { tools } = await mcp.client.listTools();
    expect(tools.map((tool) => tool.name)).toContain('claim_next');
    const created = (
      await server.api(ada, 'POST', '/todos', { queue: 'reviews', title: 'Review PR #9' })
    ).body.todo;
    const claimed = await mcp.call('claim_next', { queue: 'reviews' });
    expect(claimed.isError).toBeFalsy();
    expect(claimed.data.todo).toMatchObject({ id: created.id, claimed_by: 'reviewer' });
    // An agent never gets more than its queues.
    const elsewhere = await mcp.call('claim_next', { queue: 'ci' });
    expect(elsewhere.isError).toBe(true);
    expect(elsewhere.text).toMatch(/may not use queue ci/);
  } finally {
    await mcp.client.close();
  }

  // The sign-in is listed on the agents page, with its client and a Revoke button.
  await w.page.goto(`${server.url}/agents`);
  const row = w.page.locator('.sign-ins tbody tr', { hasText: 'Test MCP client' });
  await expect.poll(() => row.locator('td').nth(1).textContent()).toBe('reviewer');
  await expect.poll(() => row.locator('td').nth(3).textContent()).not.toBe('—');
  expect(w.refusals()).toEqual([]);
  expect(w.errors).toEqual([]);
});

test('consenting as a new agent makes it, with the queues the human picked', async () => {
  const w = await browser.newPage();
  await signIn(w.page, server, ada);
  const provider = new MemoryOAuthProvider(callback.url, 'Second client');
  await signInClient(w, provider, async ({ page }) => {
    await page.getByLabel('A new agent').check();
    await page.getByLabel('New agent’s name').fill('triager');
    await page.getByLabel(/Its queues/).fill('issues, ci');
    await page.getByRole('button', { name: 'Allow' }).click();
  });
  const { agents } = (await server.api(ada, 'GET', '/agents')).body;
  expect(agents.find((agent: { name: string }) => agent.name === 'triager')).toMatchObject({
    owner: 'ada',
    queues: ['issues', 'ci'],
  });
  const mcp = await connect(provider);
  try {
    const whoami = await mcp.call('list_todos', { queue: 'issues' });
    expect(whoami.isError).toBeFalsy();
    expect((await mcp.call('claim_next', { queue: 'reviews' })).isError).toBe(true);
  } finally {
    await mcp.client.close();
  }
});

test('Deny sends the client back with access_denied, and nothing is granted', async () => {
  const w = await browser.newPage();
  await signIn(w.page, server, ada);
  const before = (await server.sql`select count(*)::int as n from oauth_grants`)[0]!.n;
  const provider = new MemoryOAuthProvider(callback.url, 'Refused client');
  const answer = await signInClient(w, provider, async ({ page }) => {
    await page.getByRole('button', { name: 'Deny' }).click();
  });
  expect(answer.get('error')).toBe('access_denied');
  expect(answer.get('code')).toBeNull();
  expect((await server.sql`select count(*)::int as n from oauth_grants`)[0]!.n).toBe(before);
});

test('a human who is not signed in signs in first and comes back to the consent page', async () => {
  const w = await browser.newPage();
  const provider = new MemoryOAuthProvider(callback.url, 'Late client');
  const transport = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider });
  await expect(
    new Client({ name: 'oauth-test', version: '1.0.0' }).connect(transport),
  ).rejects.toBeInstanceOf(UnauthorizedError);
  await w.page.goto(provider.authorizationUrl!.href);
  await expect.poll(() => new URL(w.page.url()).pathname).toBe('/sign-in');
  // The one-time link, as `switchboard open` gives it.
  const { body } = await server.api(ada, 'POST', '/web/sign-in-links');
  await w.page.goto(body.url);
  await expect.poll(() => new URL(w.page.url()).pathname).toMatch(/^\/oauth\/consent\//);
  await w.page.getByText('Late client').first().waitFor();
});

/** A token endpoint request, as a client sends it (form-encoded). */
async function tokenRequest(form: Record<string, string>) {
  const answer = await fetch(`${server.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
  return { status: answer.status, body: (await answer.json()) as Record<string, any> };
}

/** A client signed in as `reviewer` through the browser; its provider holds the tokens. */
async function signedInClient(name: string): Promise<MemoryOAuthProvider> {
  const w = await browser.newPage();
  await signIn(w.page, server, ada);
  const provider = new MemoryOAuthProvider(callback.url, name);
  await signInClient(w, provider, async ({ page }) => {
    await page.getByLabel(/^reviewer/).check();
    await page.getByRole('button', { name: 'Allow' }).click();
  });
  await w.context.close();
  return provider;
}

test('refresh tokens rotate: the new pair works (a replay of the used one: test/oauth/token-reuse.test.ts)', async () => {
  const provider = await signedInClient('Refreshing client');
  const first = provider.saved!;
  const clientId = provider.information!.client_id;
  const refreshed = await tokenRequest({
    grant_type: 'refresh_token',
    refresh_token: first.refresh_token!,
    client_id: clientId,
    resource: mcpUrl().href,
  });
  expect(refreshed.status).toBe(200);
  expect(refreshed.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
  expect(refreshed.body.refresh_token).not.toBe(first.refresh_token);
  expect(refreshed.body.access_token).not.toBe(first.access_token);

  // The rotated pair works: the new access token on /mcp, the new refresh token once.
  provider.saveTokens(refreshed.body as any);
  const mcp = await connect(provider);
  expect((await mcp.client.listTools()).tools.length).toBeGreaterThan(5);
  await mcp.client.close();
  const next = await tokenRequest({
    grant_type: 'refresh_token',
    refresh_token: refreshed.body.refresh_token,
    client_id: clientId,
  });
  expect(next.status).toBe(200);
});

test('revoking a sign-in on the agents page ends its live MCP session at once: its stream closes, its tokens are refused', async () => {
  const provider = await signedInClient('Revoked client');
  const token = provider.saved!.access_token;
  const headers = {
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  const init = await fetch(mcpUrl(), {
    method: 'POST',
    headers,
    body: JSON.stringify(initializeRequest('raw')),
  });
  expect(init.status).toBe(200);
  const session = init.headers.get('mcp-session-id')!;
  const stream = await fetch(mcpUrl(), {
    headers: { ...headers, accept: 'text/event-stream', 'mcp-session-id': session },
  });
  expect(stream.status).toBe(200);
  const reader = stream.body!.getReader();
  const ended = (async () => {
    for (;;) if ((await reader.read()).done) return true;
  })();

  const w = await browser.newPage();
  await signIn(w.page, server, ada);
  await w.page.goto(`${server.url}/agents`);
  await w.page.getByRole('button', { name: 'Revoke Revoked client as reviewer' }).click();
  await expect.poll(() => new URL(w.page.url()).pathname).toBe('/agents');
  expect(await w.page.locator('.sign-ins').textContent()).not.toContain('Revoked client');

  expect(await ended).toBe(true);
  const after = await fetch(mcpUrl(), {
    method: 'POST',
    headers: { ...headers, 'mcp-session-id': session },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
  });
  expect(after.status).toBe(401);
  expect(after.headers.get('www-authenticate')).toContain('invalid_token');
  // The refresh token ended with its grant.
  const refresh = await tokenRequest({
    grant_type: 'refresh_token',
    refresh_token: provider.saved!.refresh_token!,
    client_id: provider.information!.client_id,
  });
  expect(refresh).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
});

test('a client revokes its own sign-in (RFC 7009): its access token is refused at once', async () => {
  const provider = await signedInClient('Leaving client');
  const mcp = await connect(provider);
  expect((await mcp.client.listTools()).tools.length).toBeGreaterThan(5);
  const revoked = await fetch(`${server.url}/oauth/revoke`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      token: provider.saved!.refresh_token!,
      token_type_hint: 'refresh_token',
      client_id: provider.information!.client_id,
    }),
  });
  expect(revoked.status).toBe(200);
  const answer = await fetch(mcpUrl(), {
    method: 'POST',
    headers: {
      authorization: `Bearer ${provider.saved!.access_token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
  });
  expect(answer.status).toBe(401);
  await mcp.client.close().catch(() => {});
});
