import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { expect } from 'vitest';
import { csrfTokenFor } from '../../../src/kit/pages/web-request.js';
import type { TestServer } from '../../support/test-server.js';

/**
 * The client side of the MCP SDK's OAuth, as an MCP client implements it: an OAuthClientProvider
 * that keeps what the SDK hands it in memory and, instead of opening a browser, remembers the
 * authorization URL for the test's browser to visit.
 */
export class MemoryOAuthProvider implements OAuthClientProvider {
  information: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier: string | undefined;
  authorizationUrl: URL | undefined;

  constructor(
    readonly redirectUrl: string,
    readonly name = 'Test MCP client',
    readonly clientMetadataUrl?: string,
  ) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.information;
  }
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.information = information;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    if (!this.verifier) throw new Error('no code verifier saved');
    return this.verifier;
  }
}

/** A loopback redirect URI that records what each redirect brought (code, state, error, iss). */
export interface Callback {
  url: string;
  received: URLSearchParams[];
  /** The next redirect's parameters. */
  next(): Promise<URLSearchParams>;
  close(): Promise<void>;
}

export async function startCallback(): Promise<Callback> {
  const received: URLSearchParams[] = [];
  const server: Server = createServer((req, res) => {
    received.push(new URL(req.url ?? '/', 'http://x').searchParams);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('You can close this page.');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/callback`,
    received,
    async next() {
      const seen = received.length;
      await expect.poll(() => received.length, { timeout: 15_000 }).toBeGreaterThan(seen);
      return received[seen]!;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A console session held by plain HTTP requests (a sign-in link redeemed), with its CSRF token. */
export interface ConsoleSession {
  cookie: string;
  csrf: string;
  /** A console request: GET, or a form POST with the session's CSRF token and the console's Origin. */
  request(path: string, form?: Record<string, string>): Promise<Response>;
}

export async function consoleSession(server: TestServer, token: string): Promise<ConsoleSession> {
  const { body } = await server.api(token, 'POST', '/web/sign-in-links');
  const answer = await fetch(body.url, { redirect: 'manual' });
  const setCookie = answer.headers.get('set-cookie') ?? '';
  const [pair] = setCookie.split(';');
  const secret = pair!.slice(pair!.indexOf('=') + 1);
  const cookie = pair!;
  const csrf = csrfTokenFor(secret);
  return {
    cookie,
    csrf,
    request(path, form) {
      return fetch(new URL(path, server.url), {
        method: form ? 'POST' : 'GET',
        redirect: 'manual',
        headers: {
          cookie,
          ...(form && {
            origin: server.url,
            'content-type': 'application/x-www-form-urlencoded',
          }),
        },
        body: form ? new URLSearchParams({ _csrf: csrf, ...form }) : undefined,
      });
    },
  };
}

/** What a client holds after signing in over plain HTTP: its id, its code, and its first tokens. */
export interface SignedInOverHttp {
  clientId: string;
  redirectUri: string;
  code: string;
  verifier: string;
  tokens: OAuthTokens;
}

/**
 * The code flow as a client sends it, with no browser: it registers, its human (a console
 * session) allows it as `agent`, and it exchanges the code at the token endpoint.
 */
export async function signInOverHttp(
  server: TestServer,
  session: ConsoleSession,
  agent: string,
): Promise<SignedInOverHttp> {
  const redirectUri = 'http://127.0.0.1:9/callback';
  const registered = await fetch(`${server.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'HTTP client',
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }),
  });
  expect(registered.status).toBe(201);
  const clientId = ((await registered.json()) as { client_id: string }).client_id;
  const verifier = randomBytes(32).toString('base64url');
  const authorize = new URL(`${server.url}/oauth/authorize`);
  authorize.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  }).toString();
  const asked = await fetch(authorize, { redirect: 'manual' });
  expect(asked.status).toBe(302);
  const consent = new URL(asked.headers.get('location')!).pathname;
  const allowed = await session.request(consent, { decision: 'allow', agent });
  const code = new URL(allowed.headers.get('location')!).searchParams.get('code')!;
  const exchanged = await tokenRequest(server, {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    client_id: clientId,
    redirect_uri: redirectUri,
  });
  expect(exchanged.status).toBe(200);
  return { clientId, redirectUri, code, verifier, tokens: exchanged.body as OAuthTokens };
}

/** A token endpoint request, as a client sends it (form-encoded). */
export async function tokenRequest(server: { url: string }, form: Record<string, string>) {
  const answer = await fetch(`${server.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
  return { status: answer.status, body: (await answer.json()) as Record<string, any> };
}
