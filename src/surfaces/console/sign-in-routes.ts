import { Router, type Request, type Response } from 'express';
import { parse, serialize } from 'cookie';
import type postgres from 'postgres';
import type { Logger } from '../../platform/logger.js';
import { HttpError } from '../../kit/http/http-error.js';
import type { PublicAddress } from '../../kit/http/public-address.js';
import { actorOf } from '../../kit/http/authenticate.js';
import { clientAddressOf } from '../../kit/http/client-address.js';
import { createFailureLimiter } from '../../kit/http/failure-limiter.js';
import { findGitHubHuman } from '../../data/console/github-accounts.js';
import { assertHuman } from '../../data/index.js';
import {
  authorizeUrl,
  GitHubSignInError,
  type GitHubSignIn,
  readGitHubUser,
  startGitHubAttempt,
} from './github-sign-in.js';
import { mintSignInLink, redeemSignInLink } from '../../data/console/sign-in-links.js';
import {
  openWebSession,
  endWebSession,
  type SignInMethod,
} from '../../data/console/web-sessions.js';
import {
  clearSessionCookie,
  localPath,
  setSessionCookie,
  webRequestOf,
  type CookiePolicy,
} from '../../kit/pages/web-request.js';
import type { Principal } from '../../data/index.js';
import { signInBody } from '../../kit/pages/sign-in-page.js';
import type { RenderPage } from '../../kit/pages/render-page.js';
import { takeReturn } from '../../kit/pages/return-after-sign-in.js';

export interface SignInOptions {
  sql: postgres.Sql;
  log: Logger;
  cookies: CookiePolicy;
  /** Links and GitHub's callback are built on it, never on the request's Host. */
  address: PublicAddress;
  /** The App's OAuth client, read at each sign-in: it may be set up while the server runs. */
  github: GitHubSignIn | undefined;
  render: RenderPage;
  /** Failed sign-in attempts allowed per client address per window. */
  attemptLimit?: number;
}

const ATTEMPT_WINDOW_MS = 15 * 60_000;
const ATTEMPT_COOKIE_SECONDS = 600;

/**
 * Signing in and out: one-time links (minted over the API for `switchboard open`), "Sign in with
 * GitHub" (state and PKCE checked, GitHub's token dropped once it said who the user is), and the
 * session cookie. Failed attempts are limited per client address (as SWITCHBOARD_TRUST_PROXY
 * says who the client is): only failures count, and a valid link or GitHub sign-in always works,
 * whatever others at the same address did — behind one proxy, one attacker must not lock
 * everyone out.
 */
export function signInRoutes(options: SignInOptions): { routes: Router; apiRoutes: Router } {
  const { sql, log, cookies, address, render } = options;
  const oauth = () => options.github?.oauth();
  const routes = Router({ caseSensitive: true });
  const failures = createFailureLimiter({
    sql,
    name: 'sign-in',
    limit: options.attemptLimit ?? 20,
    windowMs: ATTEMPT_WINDOW_MS,
  });
  const attemptCookie = cookies.secure ? '__Host-switchboard_github' : 'switchboard_github';
  const redirectUri = () => `${address.url()}/auth/github/callback`;

  const signIn = async (res: Response, human: Principal, method: SignInMethod, next = '/') => {
    const token = await openWebSession(sql, human, method);
    setSessionCookie(res, cookies, token);
    log.info({ human: human.name, method }, 'signed in to the web console');
    res.redirect(303, takeReturn(res.req, res, cookies) ?? localPath(next));
  };
  const refuse = (res: Response, status: number, problem: string) =>
    render(res, {
      status,
      title: 'Sign in',
      body: signInBody({ github: !!oauth(), url: address.url(), problem }),
    });
  /** A failed attempt: counted against the client's address, and refused 429 past the limit. */
  const refuseFailed = async (req: Request, res: Response, status: number, problem: string) => {
    const wait = await failures.fail(clientAddressOf(req));
    if (wait === undefined) return refuse(res, status, problem);
    res.set('retry-after', String(wait));
    return render(res, {
      status: 429,
      title: 'Too many attempts',
      body: signInBody({
        github: !!oauth(),
        url: address.url(),
        problem: `${problem} Too many failed sign-in attempts came from your address: wait ${Math.ceil(wait / 60)} minutes before trying again. A valid sign-in link still works.`,
      }),
    });
  };

  routes.get('/sign-in', (_req, res) => {
    if (webRequestOf(res)) return res.redirect(303, '/');
    render(res, { title: 'Sign in', body: signInBody({ github: !!oauth(), url: address.url() }) });
  });

  // The link is its own credential: GET, so that it works when clicked in a terminal.
  routes.get('/sign-in/:token', async (req, res) => {
    res.set('cache-control', 'no-store');
    const human = await redeemSignInLink(sql, String(req.params.token));
    if (!human) {
      return refuseFailed(
        req,
        res,
        401,
        'This sign-in link was already used, has expired, or was never valid. Run switchboard open for a new one.',
      );
    }
    // A link minted for a page (`switchboard github setup`) lands on it.
    await signIn(res, human, 'link', localPath(req.query.next));
  });

  routes.get('/auth/github', (req, res) => {
    const github = oauth();
    if (!github)
      throw new HttpError(404, 'not_found', 'GitHub sign-in is not set up on this server');
    const attempt = startGitHubAttempt();
    res.append(
      'set-cookie',
      serialize(attemptCookie, `${attempt.state}.${attempt.verifier}`, {
        httpOnly: true,
        // Lax: the cookie comes back on GitHub's top-level redirect to the callback.
        sameSite: 'lax',
        secure: cookies.secure,
        path: '/',
        maxAge: ATTEMPT_COOKIE_SECONDS,
      }),
    );
    res.set('cache-control', 'no-store');
    res.redirect(303, authorizeUrl(options.github!.host, github, attempt, redirectUri()));
  });

  routes.get('/auth/github/callback', async (req, res) => {
    const github = oauth();
    if (!github)
      throw new HttpError(404, 'not_found', 'GitHub sign-in is not set up on this server');
    res.set('cache-control', 'no-store');
    // The attempt is used up whatever happens next.
    res.append(
      'set-cookie',
      serialize(attemptCookie, '', {
        httpOnly: true,
        sameSite: 'lax',
        secure: cookies.secure,
        path: '/',
        maxAge: 0,
      }),
    );
    const [state, verifier] = (parse(req.get('cookie') ?? '')[attemptCookie] ?? '').split('.');
    const { code, state: returned, error } = req.query;
    if (typeof error === 'string') {
      return refuseFailed(
        req,
        res,
        400,
        'GitHub did not sign you in (it said: the request was refused or canceled).',
      );
    }
    if (!state || !verifier || typeof returned !== 'string' || returned !== state) {
      return refuseFailed(
        req,
        res,
        400,
        'Sign-in with GitHub was refused: its state does not match this browser’s. Start again from this page.',
      );
    }
    if (typeof code !== 'string' || code.length === 0 || code.length > 512) {
      return refuseFailed(req, res, 400, 'Sign-in with GitHub was refused: GitHub sent no code.');
    }
    let user: { id: number; login: string };
    try {
      user = await readGitHubUser(options.github!.host, github, {
        code,
        verifier,
        redirectUri: redirectUri(),
      });
    } catch (err) {
      log.warn(
        { err: err instanceof GitHubSignInError ? err.message : err },
        'GitHub sign-in failed',
      );
      return refuse(res, 502, 'GitHub could not confirm who you are; try again in a moment.');
    }
    const human = await findGitHubHuman(sql, user);
    if (!human) {
      log.info({ github_login: user.login }, 'refused a GitHub sign-in: no such human');
      return refuseFailed(
        req,
        res,
        403,
        `GitHub says you are @${user.login}, but no switchboard human has that GitHub account. ` +
          'Ask an admin to add you with your GitHub login, then sign in again.',
      );
    }
    await signIn(res, human, 'github');
  });

  // Signing out: a POST like every change (the CSRF guard runs before it, see page-routes).
  routes.post('/sign-out', async (_req, res) => {
    const web = webRequestOf(res);
    if (web) await endWebSession(sql, web.session.id);
    clearSessionCookie(res, cookies);
    res.redirect(303, '/sign-in');
  });

  // For `switchboard open` (bearer token): a one-time link for the caller, who must be a human.
  const apiRoutes = Router({ caseSensitive: true });
  apiRoutes.post('/web/sign-in-links', async (req, res) => {
    const actor = actorOf(res);
    assertHuman(actor, 'sign in to the web console');
    const { token, expiresAt } = await mintSignInLink(sql, actor.principal!);
    res.status(201).json({ url: `${address.url()}/sign-in/${token}`, expires_at: expiresAt });
  });
  return { routes, apiRoutes };
}
