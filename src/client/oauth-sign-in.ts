import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { sendRequest } from './send-request.js';

/** switchboard's own CLI, known to every server (migration 0031): a public client, PKCE its proof. */
export const CLI_CLIENT_ID = 'switchboard-cli';
/** How long the CLI waits for its human to answer in the browser. */
const ANSWER_MS = 10 * 60_000;

/** Where the server's API signs in (RFC 9728, RFC 8414): what `login` and `logout` talk to. */
export interface SignInEndpoints {
  /** The API's resource indicator (RFC 8707): the token is bound to it. */
  resource: string;
  authorization: string;
  token: string;
  revocation: string;
  deviceAuthorization: string;
}

/** The sign-in did not happen (refused, denied, expired, or the server offers none). */
export class SignInError extends Error {
  override readonly name = 'SignInError';
}

/** Finds the server's authorization server from the API's protected-resource metadata. */
export async function discoverSignIn(url: string): Promise<SignInEndpoints> {
  const base = new URL(url);
  const path = base.pathname.replace(/\/+$/, '');
  const resource = await getJson(
    new URL(`/.well-known/oauth-protected-resource${path}/api/v1`, base.origin),
  );
  const issuer = (resource?.authorization_servers as string[] | undefined)?.[0];
  if (!resource || typeof resource.resource !== 'string' || !issuer) {
    throw new SignInError(
      `${url} offers no sign-in (OAuth is off there: it needs an https public URL) — use 'switchboard login --url ${url} --token …'`,
    );
  }
  const issuerUrl = new URL(issuer);
  const metadata = await getJson(
    new URL(
      `/.well-known/oauth-authorization-server${issuerUrl.pathname.replace(/\/+$/, '')}`,
      issuerUrl.origin,
    ),
  );
  const endpoint = (key: string) => {
    const value = metadata?.[key];
    if (typeof value !== 'string') throw new SignInError(`${issuer} names no ${key}`);
    return value;
  };
  return {
    resource: resource.resource,
    authorization: endpoint('authorization_endpoint'),
    token: endpoint('token_endpoint'),
    revocation: endpoint('revocation_endpoint'),
    deviceAuthorization: endpoint('device_authorization_endpoint'),
  };
}

export interface BrowserSignIn {
  endpoints: SignInEndpoints;
  /** Opens the URL in a browser on this machine; says whether it could try. */
  open: (url: string) => boolean;
  /** A line for the human (the CLI prints it on stderr). */
  say: (line: string) => void;
}

/**
 * The loopback flow (RFC 8252 §7.3): a one-shot HTTP server on 127.0.0.1 receives the browser's
 * redirect; the code it brings is exchanged with the PKCE verifier only this process knows.
 */
export async function signInWithLoopback({ endpoints, open, say }: BrowserSignIn): Promise<string> {
  const verifier = randomBytes(32).toString('base64url');
  const state = randomBytes(16).toString('base64url');
  let answered: (query: URLSearchParams) => void;
  const answer = new Promise<URLSearchParams>((resolve) => (answered = resolve));
  const server = createServer((req, res) => {
    const query = new URL(req.url ?? '/', 'http://127.0.0.1').searchParams;
    if (!req.url?.startsWith('/callback') || query.get('state') !== state) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not this sign-in.');
      return;
    }
    const ok = query.has('code');
    res
      .writeHead(ok ? 200 : 400, { 'content-type': 'text/plain; charset=utf-8' })
      .end(
        ok
          ? 'Signed in: switchboard’s command line has its token. You can close this page.'
          : 'Not signed in: the command line says why. You can close this page.',
      );
    answered(query);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  try {
    const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`;
    const url = new URL(endpoints.authorization);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: CLI_CLIENT_ID,
      redirect_uri: redirectUri,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      state,
      resource: endpoints.resource,
    }).toString();
    say(
      open(url.href)
        ? `Opened your browser to sign in (if it did not open, visit ${url.href})`
        : `Open this address in your browser to sign in: ${url.href}`,
    );
    const query = await withDeadline(answer, ANSWER_MS, 'no answer came from the browser');
    const error = query.get('error');
    if (error) {
      throw new SignInError(
        error === 'access_denied'
          ? 'the sign-in was denied in the browser'
          : `the server refused the sign-in: ${error}${describe(query.get('error_description'))}`,
      );
    }
    return await tokenFrom(endpoints, {
      grant_type: 'authorization_code',
      code: query.get('code')!,
      code_verifier: verifier,
      redirect_uri: redirectUri,
    });
  } finally {
    server.close();
    server.closeAllConnections();
  }
}

/**
 * The device flow (RFC 8628) for a terminal with no browser (an SSH session): the human types
 * the shown code into the console on any machine, and the CLI's polls get the token.
 */
export async function signInWithCode({
  endpoints,
  say,
}: Omit<BrowserSignIn, 'open'>): Promise<string> {
  const started = await postForm(endpoints.deviceAuthorization, {
    client_id: CLI_CLIENT_ID,
    resource: endpoints.resource,
  });
  if (started.status !== 200) throw refusal(started);
  const device = started.json as {
    device_code: string;
    user_code: string;
    verification_uri: string;
    verification_uri_complete?: string;
    expires_in: number;
    interval?: number;
  };
  // The code is shown even with the link that has it filled in (RFC 8628 §3.3.1): the page shows
  // it too, and the human checks that the two match.
  const filledIn = device.verification_uri_complete
    ? `, or open ${device.verification_uri_complete}, which has it filled in`
    : '';
  say(
    `To sign in, open ${device.verification_uri} in a browser (on any machine) and type the code ${device.user_code}${filledIn} (it works for ${Math.round(device.expires_in / 60)} minutes)`,
  );
  let interval = (device.interval ?? 5) * 1000;
  const until = Date.now() + device.expires_in * 1000;
  while (Date.now() < until) {
    await sleep(interval);
    const polled = await postForm(endpoints.token, {
      grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
      device_code: device.device_code,
      client_id: CLI_CLIENT_ID,
    });
    if (polled.status === 200) return accessToken(polled.json);
    const error = polled.json?.error;
    if (error === 'authorization_pending') continue;
    if (error === 'slow_down') {
      interval += 5000;
      continue;
    }
    if (error === 'access_denied') throw new SignInError('the sign-in was denied in the browser');
    if (error === 'expired_token') break;
    throw refusal(polled);
  }
  throw new SignInError('the code expired before it was typed in: run switchboard login again');
}

/**
 * Revokes a token (RFC 7009). `revoked`: it no longer works (or never did); `not_signed_in`: the
 * server says it did not come from a sign-in (a token from `agent add` or `human add`).
 */
export async function revokeSignIn(
  endpoints: SignInEndpoints,
  token: string,
): Promise<'revoked' | 'not_signed_in'> {
  const answer = await postForm(endpoints.revocation, {
    token,
    token_type_hint: 'access_token',
    client_id: CLI_CLIENT_ID,
  });
  if (answer.status === 200) return 'revoked';
  if (answer.json?.error === 'unauthorized_client') return 'not_signed_in';
  throw refusal(answer);
}

async function tokenFrom(
  endpoints: SignInEndpoints,
  form: Record<string, string>,
): Promise<string> {
  const answer = await postForm(endpoints.token, {
    ...form,
    client_id: CLI_CLIENT_ID,
    resource: endpoints.resource,
  });
  if (answer.status !== 200) throw refusal(answer);
  return accessToken(answer.json);
}

function accessToken(json: Record<string, unknown> | undefined): string {
  const token = json?.access_token;
  if (typeof token !== 'string') throw new SignInError('the server sent no access token');
  return token;
}

interface FormAnswer {
  status: number;
  json: Record<string, unknown> | undefined;
}

async function postForm(url: string, form: Record<string, string>): Promise<FormAnswer> {
  const response = await sendRequest(new URL(url), {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    },
    body: new URLSearchParams(form).toString(),
  });
  return { status: response.status, json: parseJson(response.body) };
}

async function getJson(url: URL): Promise<Record<string, unknown> | undefined> {
  const response = await sendRequest(url, {
    method: 'GET',
    headers: { accept: 'application/json' },
  });
  return response.status === 200 ? parseJson(response.body) : undefined;
}

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const json = JSON.parse(text) as unknown;
    return typeof json === 'object' && json !== null
      ? (json as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function refusal({ status, json }: FormAnswer): SignInError {
  const error = typeof json?.error === 'string' ? json.error : `HTTP ${status}`;
  return new SignInError(
    `the server refused the sign-in: ${error}${describe(json?.error_description)}`,
  );
}

function describe(text: unknown): string {
  return typeof text === 'string' ? ` (${text.slice(0, 200)})` : '';
}

async function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new SignInError(`${what} within ${ms / 60_000} minutes`)),
          ms,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
