import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { consoleSession, type ConsoleSession } from '../oauth/support/oauth-client.js';
import { expectNothingLeaked } from '../support/bad-input.js';
import { initializeRequest } from '../support/mcp-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

// The bad-input corpus on every OAuth endpoint: each refusal is the 4xx (or, past the redirect
// URI's check, the redirect with `error=`) that the RFCs name, says why, leaks nothing, and
// changes nothing: the code, the grant and the tokens it was aimed at still work after it.

let server: TestServer;
let ada: string;
let session: ConsoleSession;
const REDIRECT = 'http://127.0.0.1:9/callback';

/** What the OAuth tables hold: a refusal changes none of it. */
async function stored() {
  const [row] = await server.sql<Record<string, number>[]>`
    select
      (select count(*)::int from oauth_clients) as clients,
      (select count(*)::int from oauth_grants) as grants,
      (select count(*)::int from oauth_grants where revoked_at is not null) as revoked,
      (select count(*)::int from oauth_authorizations) as authorizations,
      (select count(*)::int from oauth_authorizations where status = 'exchanged') as exchanged,
      (select count(*)::int from tokens) as tokens,
      (select count(*)::int from oauth_refresh_tokens where used_at is not null) as used_refresh`;
  return row!;
}

beforeAll(async () => {
  server = await startTestServer();
  const { body } = await server.api(server.adminToken, 'POST', '/humans', { name: 'ada' });
  ada = body.token;
  await server.api(ada, 'POST', '/agents', { name: 'reviewer', queues: ['reviews'] });
  session = await consoleSession(server, ada);
});
afterAll(async () => {
  await server?.stop();
});

async function register(metadata: unknown, raw?: string) {
  const answer = await fetch(`${server.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: raw ?? JSON.stringify(metadata),
  });
  const text = await answer.text();
  return { status: answer.status, text, body: JSON.parse(text) as Record<string, any> };
}

async function newClient(name = 'corpus client'): Promise<string> {
  const { status, body } = await register({ client_name: name, redirect_uris: [REDIRECT] });
  expect(status).toBe(201);
  return body.client_id as string;
}

function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  return { verifier, challenge };
}

async function authorizeRequest(params: Record<string, string>) {
  const url = new URL(`${server.url}/oauth/authorize`);
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
  const answer = await fetch(url, { redirect: 'manual' });
  return {
    status: answer.status,
    location: answer.headers.get('location'),
    text: await answer.text(),
  };
}

/** A code for `clientId`, its human (ada) having allowed it as `reviewer` over plain HTTP. */
async function codeFor(clientId: string, extra: Record<string, string> = {}) {
  const { verifier, challenge } = pkce();
  const asked = await authorizeRequest({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 'st',
    resource: `${server.url}/mcp`,
    ...extra,
  });
  expect(asked.status).toBe(302);
  const consent = new URL(asked.location!, server.url).pathname;
  expect(consent).toMatch(/^\/oauth\/consent\//);
  const allowed = await session.request(consent, { decision: 'allow', agent: 'reviewer' });
  expect(allowed.status).toBe(303);
  const code = new URL(allowed.headers.get('location')!).searchParams.get('code')!;
  return { code, verifier, challenge };
}

async function token(form: Record<string, string>) {
  const answer = await fetch(`${server.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
  const text = await answer.text();
  return { status: answer.status, text, body: JSON.parse(text) as Record<string, any> };
}

const exchange = (clientId: string, code: string, verifier: string, extra = {}) =>
  token({
    grant_type: 'authorization_code',
    client_id: clientId,
    code,
    code_verifier: verifier,
    redirect_uri: REDIRECT,
    ...extra,
  });

async function mcpStatus(accessToken: string): Promise<number> {
  const answer = await fetch(`${server.url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${accessToken}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify(initializeRequest('x')),
  });
  await answer.text();
  return answer.status;
}

describe('registration (RFC 7591)', () => {
  test.each([
    [
      'a plain-http redirect_uri to another machine',
      { redirect_uris: ['http://example.com/cb'] },
      /plain http/,
    ],
    ['a javascript: redirect_uri', { redirect_uris: ['javascript:alert(1)'] }, /javascript/],
    ['a redirect_uri with a fragment', { redirect_uris: ['https://example.com/cb#x'] }, /fragment/],
    ['no redirect_uris', { redirect_uris: [] }, /redirect_uris is empty/],
    ['missing redirect_uris', { client_name: 'x' }, /redirect_uris/],
    [
      'eleven redirect_uris',
      { redirect_uris: Array.from({ length: 11 }, (_, i) => `https://e.com/${i}`) },
      /more than 10/,
    ],
    [
      'a 201-character name',
      { redirect_uris: [REDIRECT], client_name: 'n'.repeat(201) },
      /client_name/,
    ],
    [
      'a name with a control character',
      { redirect_uris: [REDIRECT], client_name: 'a\u0007b' },
      /control/,
    ],
  ])('%s: 400 invalid_client_metadata, nothing registered', async (_, metadata, why) => {
    const before = await stored();
    const { status, body, text } = await register(metadata);
    expect(status).toBe(400);
    expect(body.error).toBe('invalid_client_metadata');
    expect(body.error_description).toMatch(why);
    expectNothingLeaked(text);
    expect(await stored()).toEqual(before);
  });

  test('an oversized registration: 413 invalid_client_metadata, nothing registered', async () => {
    const before = await stored();
    const { status, body, text } = await register({
      redirect_uris: [REDIRECT],
      client_name: 'x',
      contacts: Array.from({ length: 2000 }, (_, i) => `c${i}@example.com`),
    });
    expect(status).toBe(413);
    expect(body).toEqual({
      error: 'invalid_client_metadata',
      error_description: 'the request body is larger than 16 KB',
    });
    expectNothingLeaked(text);
    expect(await stored()).toEqual(before);
  });

  test('a body that is not JSON: 400, nothing registered', async () => {
    const before = await stored();
    const { status, body } = await register(undefined, '{"redirect_uris": [');
    expect(status).toBe(400);
    expect(body.error).toBe('invalid_client_metadata');
    expect(await stored()).toEqual(before);
  });

  test('a client that asks for a secret is made public: it gets none, and is told so', async () => {
    const { status, body } = await register({
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'client_secret_post',
      grant_types: ['authorization_code', 'client_credentials'],
    });
    expect(status).toBe(201);
    expect(body).toMatchObject({
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
    });
    expect(body).not.toHaveProperty('client_secret');
    const [row] =
      await server.sql`select metadata from oauth_clients where client_id = ${body.client_id}`;
    expect(JSON.stringify(row)).not.toMatch(/secret"/);
  });
});

describe('authorization', () => {
  let client: string;
  beforeAll(async () => {
    client = await newClient();
  });
  const valid = () => ({
    response_type: 'code',
    client_id: client,
    redirect_uri: REDIRECT,
    code_challenge: pkce().challenge,
    code_challenge_method: 'S256',
    state: 'st',
  });

  test.each([
    ['an unknown client', { client_id: 'nobody' }, 'invalid_client'],
    [
      'an unregistered redirect_uri',
      { redirect_uri: 'http://127.0.0.1:9/elsewhere' },
      'invalid_request',
    ],
    [
      'an https redirect_uri the client never registered',
      { redirect_uri: 'https://evil.example/cb' },
      'invalid_request',
    ],
  ])('%s: 400 to the browser, never a redirect, nothing stored', async (_, change, error) => {
    const before = await stored();
    const answer = await authorizeRequest({ ...valid(), ...change });
    expect(answer.status).toBe(400);
    expect(answer.location).toBeNull();
    expect(JSON.parse(answer.text).error).toBe(error);
    expect(await stored()).toEqual(before);
  });

  test.each([
    ['no PKCE challenge', { code_challenge: undefined }, 'invalid_request'],
    ['the plain PKCE method', { code_challenge_method: 'plain' }, 'invalid_request'],
    ['no PKCE method', { code_challenge_method: undefined }, 'invalid_request'],
    ['a challenge that is no S256 hash', { code_challenge: 'short' }, 'invalid_request'],
    ['another response type', { response_type: 'token' }, 'invalid_request'],
    [
      'a resource of another server',
      { resource: 'https://elsewhere.example/mcp' },
      'invalid_target',
    ],
    ['the API as resource (a client acts on /mcp only)', { resource: 'API' }, 'invalid_target'],
  ])(
    '%s: redirected back with the error and the state, nothing stored',
    async (_, change, error) => {
      const before = await stored();
      const params: Record<string, string> = { ...valid() };
      for (const [key, value] of Object.entries(change)) {
        if (value === undefined) delete params[key];
        else params[key] = value === 'API' ? `${server.url}/api/v1` : value;
      }
      const answer = await authorizeRequest(params);
      expect(answer.status).toBe(302);
      const back = new URL(answer.location!);
      expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
      expect(back.searchParams.get('error')).toBe(error);
      expect(back.searchParams.get('state')).toBe('st');
      expect(await stored()).toEqual(before);
    },
  );
});

test('regression: a native app’s own scheme with a host (cursor://…) put "null" in the consent page’s CSP, whose form could then not go there', async () => {
  const app = 'cursor://anysphere.cursor-retrieval/oauth/callback';
  const { status, body } = await register({ client_name: 'Native app', redirect_uris: [app] });
  expect(status).toBe(201);
  const asked = await authorizeRequest({
    response_type: 'code',
    client_id: body.client_id,
    redirect_uri: app,
    code_challenge: pkce().challenge,
    code_challenge_method: 'S256',
  });
  const consent = new URL(asked.location!, server.url).pathname;
  const page = await session.request(consent);
  expect(page.headers.get('content-security-policy')).toContain("form-action 'self' cursor:;");
  expect(await page.text()).toContain('<code>cursor:</code>');
  const allowed = await session.request(consent, { decision: 'allow', agent: 'reviewer' });
  expect(allowed.headers.get('location')).toMatch(
    /^cursor:\/\/anysphere\.cursor-retrieval\/oauth\/callback\?code=sbc_/,
  );
});

describe('the token endpoint', () => {
  let client: string;
  let other: string;
  beforeAll(async () => {
    client = await newClient('token client');
    other = await newClient('other client');
  });

  test('a missing PKCE verifier: 400 invalid_request; the code still works after', async () => {
    const { code, verifier } = await codeFor(client);
    const before = await stored();
    const answer = await token({
      grant_type: 'authorization_code',
      client_id: client,
      code,
      redirect_uri: REDIRECT,
    });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe('invalid_request');
    expect(await stored()).toEqual(before);
    expect((await exchange(client, code, verifier)).status).toBe(200);
  });

  test('the challenge sent as a plain verifier, or a wrong one: 400 invalid_grant; the code still works after', async () => {
    const { code, verifier, challenge } = await codeFor(client);
    const before = await stored();
    for (const wrong of [challenge, pkce().verifier]) {
      const answer = await exchange(client, code, wrong);
      expect(answer.status).toBe(400);
      expect(answer.body).toMatchObject({ error: 'invalid_grant' });
      expect(answer.body.error_description).toMatch(/code_verifier/);
    }
    expect(await stored()).toEqual(before);
    expect((await exchange(client, code, verifier)).status).toBe(200);
  });

  test('a code used twice: the second is 400 invalid_grant, and the grant the first gave is revoked (OAuth 2.1 §4.1.3)', async () => {
    const { code, verifier } = await codeFor(client);
    const first = await exchange(client, code, verifier);
    expect(first.status).toBe(200);
    const before = await stored();
    const second = await exchange(client, code, verifier);
    expect(second.status).toBe(400);
    expect(second.body.error).toBe('invalid_grant');
    expect(second.body.error_description).toMatch(/already used/);
    expect(await stored()).toEqual({ ...before, revoked: before.revoked! + 1 });
    expect(await mcpStatus(first.body.access_token)).toBe(401);
  });

  test('a code for another client: 400 invalid_grant; its own client can still use it', async () => {
    const { code, verifier } = await codeFor(client);
    const before = await stored();
    const stolen = await exchange(other, code, verifier);
    expect(stolen.status).toBe(400);
    expect(stolen.body.error).toBe('invalid_grant');
    expect(stolen.body.error_description).toMatch(/another client/);
    expect(await stored()).toEqual(before);
    expect((await exchange(client, code, verifier)).status).toBe(200);
  });

  test('another redirect_uri, or a resource of another server, at the exchange: 400 invalid_grant; the code still works', async () => {
    const { code, verifier } = await codeFor(client);
    const before = await stored();
    const redirect = await exchange(client, code, verifier, {
      redirect_uri: 'http://127.0.0.1:9/other',
    });
    expect(redirect.body.error).toBe('invalid_grant');
    const resource = await exchange(client, code, verifier, {
      resource: 'https://elsewhere.example/mcp',
    });
    expect(resource.body.error).toBe('invalid_grant');
    expect(resource.body.error_description).toMatch(/resource/);
    expect(await stored()).toEqual(before);
    expect((await exchange(client, code, verifier)).status).toBe(200);
  });

  test('an unknown client, an unknown grant type, a body too large: 4xx, nothing changed', async () => {
    const before = await stored();
    expect(
      (
        await token({
          grant_type: 'authorization_code',
          client_id: 'nobody',
          code: 'x',
          code_verifier: 'y',
        })
      ).body.error,
    ).toBe('invalid_client');
    expect((await token({ grant_type: 'password', client_id: client })).body.error).toBe(
      'unsupported_grant_type',
    );
    const large = await token({
      grant_type: 'refresh_token',
      client_id: client,
      refresh_token: 'r'.repeat(20_000),
    });
    expect(large.status).toBe(413);
    expect(large.body.error).toBe('invalid_request');
    expect(await stored()).toEqual(before);
  });
});

describe('tokens at the resource', () => {
  test('a token for another resource is refused: the CLI’s (the API’s) on /mcp, an MCP client’s on the API', async () => {
    // The CLI's token, as `switchboard login` gets it (device flow, answered over HTTP).
    const device = await fetch(`${server.url}/oauth/device_authorization`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: 'switchboard-cli' }),
    }).then((r) => r.json() as Promise<Record<string, any>>);
    const typed = await session.request('/device', { user_code: device.user_code });
    const consent = typed.headers.get('location')!;
    expect((await session.request(consent, { decision: 'allow' })).status).toBe(200);
    const cli = await token({
      grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
      client_id: 'switchboard-cli',
      device_code: device.device_code,
    });
    expect(cli.status).toBe(200);
    expect((await server.api(cli.body.access_token, 'GET', '/whoami')).body.principal.name).toBe(
      'ada',
    );
    expect(await mcpStatus(cli.body.access_token)).toBe(401);

    const client = await newClient('resource client');
    const { code, verifier } = await codeFor(client);
    const mcp = (await exchange(client, code, verifier)).body.access_token as string;
    expect(await mcpStatus(mcp)).toBe(200);
    const api = await server.api(mcp, 'GET', '/whoami');
    expect(api).toMatchObject({ status: 401, body: { code: 'unauthenticated' } });
    expect(api.body.error).toMatch(/issued for \/mcp/);
  });

  test('an expired token is refused with 401 invalid_token; its refresh token still works', async () => {
    const client = await newClient('expiring client');
    const { code, verifier } = await codeFor(client);
    const tokens = (await exchange(client, code, verifier)).body;
    // Expired before its first use (so no process has it in memory).
    await server.sql`
      update tokens set expires_at = now() - interval '1 second'
      where grant_id = (select max(id) from oauth_grants)`;
    const answer = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tokens.access_token}`,
        'content-type': 'application/json',
      },
      body: '{}',
    });
    expect(answer.status).toBe(401);
    expect(answer.headers.get('www-authenticate')).toMatch(
      /error="invalid_token".*resource_metadata=/,
    );
    const refreshed = await token({
      grant_type: 'refresh_token',
      client_id: client,
      refresh_token: tokens.refresh_token,
    });
    expect(refreshed.status).toBe(200);
    expect(await mcpStatus(refreshed.body.access_token)).toBe(200);
  });
});

describe('revocation (RFC 7009)', () => {
  test('another client’s token: 400 unauthorized_client, and it still works; an unknown token: 200', async () => {
    const client = await newClient('holder');
    const other = await newClient('thief');
    const { code, verifier } = await codeFor(client);
    const tokens = (await exchange(client, code, verifier)).body;
    const revoke = (clientId: string, value: string) =>
      fetch(`${server.url}/oauth/revoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ client_id: clientId, token: value }),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, any> }));
    const before = await stored();
    expect(await revoke(other, tokens.access_token)).toMatchObject({
      status: 400,
      body: { error: 'unauthorized_client' },
    });
    // A static token is no client's to revoke.
    expect((await revoke(client, ada)).body.error).toBe('unauthorized_client');
    expect((await revoke(client, `sbk_${'x'.repeat(43)}`)).status).toBe(200);
    expect(await stored()).toEqual(before);
    expect(await mcpStatus(tokens.access_token)).toBe(200);
  });
});

describe('consent', () => {
  test('a client cannot be made to act as a human: naming one is refused, nothing granted', async () => {
    const client = await newClient('as a human');
    const asked = await authorizeRequest({
      response_type: 'code',
      client_id: client,
      redirect_uri: REDIRECT,
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
    });
    const consent = new URL(asked.location!, server.url).pathname;
    const { body } = await server.api(server.adminToken, 'POST', '/agents', {
      name: 'admins-bot',
      queues: ['ops'],
    });
    expect(body.agent.owner).not.toBe('ada');
    const before = await stored();
    for (const agent of ['ada', 'admin']) {
      const answer = await session.request(consent, { decision: 'allow', agent });
      expect(answer.status).toBe(400);
      expect(await answer.text()).toContain(`you have no agent named ${agent}`);
    }
    // Nor another human's agent.
    expect(
      (await session.request(consent, { decision: 'allow', agent: 'admins-bot' })).status,
    ).toBe(400);
    expect(await stored()).toEqual(before);
  });

  test('a consent POST without the session’s CSRF token, or from another origin, is refused: nothing granted', async () => {
    const client = await newClient('forged');
    const asked = await authorizeRequest({
      response_type: 'code',
      client_id: client,
      redirect_uri: REDIRECT,
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
    });
    const consent = new URL(asked.location!, server.url).pathname;
    const before = await stored();
    const forged = await fetch(new URL(consent, server.url), {
      method: 'POST',
      redirect: 'manual',
      headers: {
        cookie: session.cookie,
        origin: 'https://evil.example',
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ _csrf: session.csrf, decision: 'allow', agent: 'reviewer' }),
    });
    expect(forged.status).toBe(403);
    const noToken = await fetch(new URL(consent, server.url), {
      method: 'POST',
      redirect: 'manual',
      headers: {
        cookie: session.cookie,
        origin: server.url,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ decision: 'allow', agent: 'reviewer' }),
    });
    expect(noToken.status).toBe(403);
    expect(await stored()).toEqual(before);
  });
});

describe('the device flow', () => {
  test('only the CLI may use it; a wrong user code says so; a device polling too fast is told to slow down', async () => {
    const client = await newClient('not the cli');
    const before = await stored();
    const refused = await fetch(`${server.url}/oauth/device_authorization`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: client }),
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toBe('unauthorized_client');
    const wrong = await session.request('/device', { user_code: 'BCDF-GHJK' });
    expect(wrong.status).toBe(400);
    expect(await wrong.text()).toContain('No terminal is waiting with that code');
    expect(await stored()).toEqual(before);

    const device = (await fetch(`${server.url}/oauth/device_authorization`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: 'switchboard-cli' }),
    }).then((r) => r.json())) as Record<string, any>;
    expect(device).toMatchObject({
      user_code: expect.stringMatching(/^[B-Z]{4}-[B-Z]{4}$/),
      verification_uri: `${server.url}/device`,
      interval: 5,
    });
    const poll = () =>
      token({
        grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
        client_id: 'switchboard-cli',
        device_code: device.device_code,
      });
    expect((await poll()).body.error).toBe('authorization_pending');
    expect((await poll()).body.error).toBe('slow_down');
  });
});
