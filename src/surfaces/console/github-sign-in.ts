import { createHash, randomBytes } from 'node:crypto';
import type { GitHubOAuthCredentials } from '../../platform/config/server-config.js';
import type { GitHubHost } from '../../platform/config/github-host.js';

/** The App's OAuth client as it is now, and where GitHub is (github.com, or GHE_HOST). */
export interface GitHubSignIn {
  oauth(): GitHubOAuthCredentials | undefined;
  host: GitHubHost;
}

const DEADLINE_MS = 10_000;

/** What a sign-in attempt keeps between leaving for GitHub and coming back (in a short cookie). */
export interface GitHubAttempt {
  state: string;
  /** PKCE: the secret whose hash went to GitHub as the code challenge. */
  verifier: string;
}

export function startGitHubAttempt(): GitHubAttempt {
  return {
    state: randomBytes(24).toString('base64url'),
    verifier: randomBytes(32).toString('base64url'),
  };
}

/** GitHub's authorize URL for the App's OAuth client, with the state and the S256 code challenge. */
export function authorizeUrl(
  host: GitHubHost,
  credentials: GitHubOAuthCredentials,
  attempt: GitHubAttempt,
  redirectUri: string,
): string {
  const url = new URL(`${host.web}/login/oauth/authorize`);
  url.searchParams.set('client_id', credentials.clientId);
  url.searchParams.set('redirect_uri', redirectUri);
  url.searchParams.set('state', attempt.state);
  url.searchParams.set(
    'code_challenge',
    createHash('sha256').update(attempt.verifier).digest('base64url'),
  );
  url.searchParams.set('code_challenge_method', 'S256');
  url.searchParams.set('allow_signup', 'false');
  return url.toString();
}

export class GitHubSignInError extends Error {}

/**
 * Trades the code for a user token (with the PKCE verifier), reads who the user is, and lets
 * the token go: switchboard keeps nothing of GitHub's but the numeric user id. Plain requests,
 * because @octokit/oauth-methods sends no `code_verifier`.
 */
export async function readGitHubUser(
  host: GitHubHost,
  credentials: GitHubOAuthCredentials,
  { code, verifier, redirectUri }: { code: string; verifier: string; redirectUri: string },
): Promise<{ id: number; login: string }> {
  const exchange = await fetch(`${host.web}/login/oauth/access_token`, {
    method: 'POST',
    headers: { accept: 'application/json', 'content-type': 'application/json' },
    body: JSON.stringify({
      client_id: credentials.clientId,
      client_secret: credentials.clientSecret,
      code,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    }),
    signal: AbortSignal.timeout(DEADLINE_MS),
  });
  const answer = (await exchange.json().catch(() => ({}))) as {
    access_token?: unknown;
    error?: unknown;
  };
  if (!exchange.ok || typeof answer.access_token !== 'string') {
    throw new GitHubSignInError(
      `GitHub did not accept the sign-in (${typeof answer.error === 'string' ? answer.error : `HTTP ${exchange.status}`})`,
    );
  }
  const user = await fetch(`${host.api}/user`, {
    headers: {
      accept: 'application/vnd.github+json',
      authorization: `Bearer ${answer.access_token}`,
      'user-agent': 'switchboard',
    },
    signal: AbortSignal.timeout(DEADLINE_MS),
  });
  const body = (await user.json().catch(() => ({}))) as { id?: unknown; login?: unknown };
  if (!user.ok || typeof body.id !== 'number' || typeof body.login !== 'string')
    throw new GitHubSignInError(`GitHub did not say who signed in (HTTP ${user.status})`);
  return { id: body.id, login: body.login };
}
