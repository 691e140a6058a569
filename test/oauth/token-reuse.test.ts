import { afterAll, beforeAll, expect, test } from 'vitest';
import { freePort } from '../../src/platform/db/start-embedded-postgres.js';
import { initializeRequest } from '../support/mcp-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { addHuman } from '../web/support/console.js';
import {
  consoleSession,
  signInOverHttp,
  tokenRequest,
  type ConsoleSession,
} from './support/oauth-client.js';

// A refresh token or a code presented a second time has leaked (RFC 9700 §4.14.2, OAuth 2.1
// §4.1.3): whoever holds it, the grant it belongs to ends, with every token issued under it,
// in every process on the database. Both processes here are one public URL, as behind a load
// balancer: a token is good at either.
let server: TestServer;
let other: TestServer;
let session: ConsoleSession;

beforeAll(async () => {
  const port = await freePort();
  const web = { publicUrl: `http://127.0.0.1:${port}` };
  server = await startTestServer({ port, web });
  other = await startTestServer({ schema: server.schema, web });
  const ada = await addHuman(server, 'ada');
  expect(
    (await server.api(ada, 'POST', '/agents', { name: 'reviewer', queues: ['reviews'] })).status,
  ).toBe(201);
  session = await consoleSession(server, ada);
});
afterAll(async () => {
  await other?.stop();
  await server?.stop();
});

/** The status /mcp answers an initialize with this access token (its session ended after). */
async function mcpStatus(at: TestServer, token: string): Promise<number> {
  const answer = await fetch(`${at.url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify(initializeRequest('reuse')),
  });
  await answer.body?.cancel();
  const id = answer.headers.get('mcp-session-id');
  if (id)
    await fetch(`${at.url}/mcp`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${token}`, 'mcp-session-id': id },
    });
  return answer.status;
}

const grantOf = async (clientId: string) =>
  (
    await server.sql<{ revoked: boolean }[]>`
      select revoked_at is not null as revoked from oauth_grants where client_id = ${clientId}`
  )[0]!.revoked;

test('regression: a replayed refresh token (already rotated) ends its grant: the newer refresh token and every access token stop working, here and in another process', async () => {
  const { clientId, tokens: first } = await signInOverHttp(server, session, 'reviewer');
  const refreshed = await tokenRequest(server, {
    grant_type: 'refresh_token',
    refresh_token: first.refresh_token!,
    client_id: clientId,
  });
  expect(refreshed.status).toBe(200);
  const newer = refreshed.body;
  // Both access tokens work, and each process has taken the newer one into its cache.
  expect(await mcpStatus(server, first.access_token)).toBe(200);
  expect(await mcpStatus(server, newer.access_token)).toBe(200);
  expect(await mcpStatus(other, newer.access_token)).toBe(200);

  const replayed = await tokenRequest(server, {
    grant_type: 'refresh_token',
    refresh_token: first.refresh_token!,
    client_id: clientId,
  });
  expect(replayed).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  expect(replayed.body.error_description).toMatch(/already used/);
  expect(await grantOf(clientId)).toBe(true);

  expect(await mcpStatus(server, newer.access_token)).toBe(401);
  expect(await mcpStatus(server, first.access_token)).toBe(401);
  // The other process hears the revocation (NOTIFY) and forgets the token it kept.
  await expect.poll(() => mcpStatus(other, newer.access_token)).toBe(401);
  const next = await tokenRequest(server, {
    grant_type: 'refresh_token',
    refresh_token: newer.refresh_token,
    client_id: clientId,
  });
  expect(next).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
});

test('regression: a replayed refresh token ends its grant even when the replay names another client', async () => {
  const { clientId, tokens: first } = await signInOverHttp(server, session, 'reviewer');
  const stranger = await signInOverHttp(server, session, 'reviewer');
  const refreshed = await tokenRequest(server, {
    grant_type: 'refresh_token',
    refresh_token: first.refresh_token!,
    client_id: clientId,
  });
  expect(refreshed.status).toBe(200);
  const replayed = await tokenRequest(server, {
    grant_type: 'refresh_token',
    refresh_token: first.refresh_token!,
    client_id: stranger.clientId,
  });
  expect(replayed).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  expect(await mcpStatus(server, refreshed.body.access_token)).toBe(401);
  // The stranger's own grant is not touched.
  expect(await mcpStatus(server, stranger.tokens.access_token)).toBe(200);
});

test('regression: an authorization code used twice ends what its first exchange issued', async () => {
  const signedIn = await signInOverHttp(server, session, 'reviewer');
  const { tokens } = signedIn;
  expect(await mcpStatus(server, tokens.access_token)).toBe(200);
  expect(await mcpStatus(other, tokens.access_token)).toBe(200);

  const again = await tokenRequest(server, {
    grant_type: 'authorization_code',
    code: signedIn.code,
    code_verifier: signedIn.verifier,
    client_id: signedIn.clientId,
    redirect_uri: signedIn.redirectUri,
  });
  expect(again).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  expect(await grantOf(signedIn.clientId)).toBe(true);

  expect(await mcpStatus(server, tokens.access_token)).toBe(401);
  await expect.poll(() => mcpStatus(other, tokens.access_token)).toBe(401);
  const refresh = await tokenRequest(server, {
    grant_type: 'refresh_token',
    refresh_token: tokens.refresh_token!,
    client_id: signedIn.clientId,
  });
  expect(refresh).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
});

test('a refresh token that was never issued changes nothing', async () => {
  const { clientId, tokens } = await signInOverHttp(server, session, 'reviewer');
  const unknown = await tokenRequest(server, {
    grant_type: 'refresh_token',
    refresh_token: 'sbr_not-one-of-ours',
    client_id: clientId,
  });
  expect(unknown).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  expect(await grantOf(clientId)).toBe(false);
  expect(await mcpStatus(server, tokens.access_token)).toBe(200);
});
