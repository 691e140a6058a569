import { Router, type Request, type Response } from 'express';
import { rateLimit } from 'express-rate-limit';
import { parse, serialize } from 'cookie';
import type postgres from 'postgres';
import type { GitHubOAuthCredentials } from '../config/server-config.js';
import type { Logger } from '../logger.js';
import { HttpError } from '../http/http-error.js';
import { actorOf } from '../http/authenticate.js';
import { assertHuman } from '../ledger/index.js';
import {
  authorizeUrl,
  findGitHubHuman,
  GitHubSignInError,
  readGitHubUser,
  startGitHubAttempt,
} from './github-sign-in.js';
import { mintSignInLink, redeemSignInLink } from './sign-in-links.js';
import { openWebSession, endWebSession, type SignInMethod } from './web-sessions.js';
import {
  clearSessionCookie,
  localPath,
  ownOrigin,
  setSessionCookie,
  webRequestOf,
  type CookiePolicy,
} from './web-request.js';
import type { Principal } from '../ledger/index.js';
import { signInBody } from './views/sign-in-page.js';
import type { RenderPage } from './render-page.js';
import { takeReturn } from './return-after-sign-in.js';

export interface SignInOptions {
  sql: postgres.Sql;
  log: Logger;
  cookies: CookiePolicy;
  publicUrl: string | undefined;
  github: GitHubOAuthCredentials | undefined;
  render: RenderPage;
  /** Failed sign-in attempts allowed per address per window. */
  attemptLimit?: number;
}

const ATTEMPT_WINDOW_MS = 15 * 60_000;
const ATTEMPT_COOKIE_SECONDS = 600;

/**
 * Signing in and out: one-time links (minted over the API for `switchboard open`), "Sign in with
 * GitHub" (state and PKCE checked, GitHub's token dropped once it said who the user is), and the
 * session cookie. Failed attempts are rate-limited per address.
 */
export function signInRoutes(options: SignInOptions): { routes: Router; apiRoutes: Router } {
  const { sql, log, cookies, publicUrl, github, render } = options;
  const routes = Router();
  const attempts = rateLimit({
    windowMs: ATTEMPT_WINDOW_MS,
    limit: options.attemptLimit ?? 20,
    // Only refusals count: a human signing in often is not an attack.
    skipSuccessfulRequests: true,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    handler: (_req, res) =>
      render(res, {
        status: 429,
        title: 'Too many attempts',
        body: signInBody({
          github: !!github,
          problem: 'Too many failed sign-in attempts from your address; wait a few minutes.',
        }),
      }),
  });
  const attemptCookie = cookies.secure ? '__Host-switchboard_github' : 'switchboard_github';
  const redirectUri = (req: Request) => `${ownOrigin(req, publicUrl)}/auth/github/callback`;

  const signIn = async (res: Response, human: Principal, method: SignInMethod, next = '/') => {
    const token = await openWebSession(sql, human, method);
    setSessionCookie(res, cookies, token);
    log.info({ human: human.name, method }, 'signed in to the web console');
    res.redirect(303, takeReturn(res.req, res, cookies) ?? localPath(next));
  };
  const refuse = (res: Response, status: number, problem: string) =>
    render(res, { status, title: 'Sign in', body: signInBody({ github: !!github, problem }) });

  routes.get('/sign-in', (_req, res) => {
    if (webRequestOf(res)) return res.redirect(303, '/');
    render(res, { title: 'Sign in', body: signInBody({ github: !!github }) });
  });

  // The link is its own credential: GET, so that it works when clicked in a terminal.
  routes.get('/sign-in/:token', attempts, async (req, res) => {
    res.set('cache-control', 'no-store');
    const human = await redeemSignInLink(sql, String(req.params.token));
    if (!human) {
      return refuse(
        res,
        401,
        'This sign-in link was already used, has expired, or was never valid. Run switchboard open for a new one.',
      );
    }
    await signIn(res, human, 'link');
  });

  routes.get('/auth/github', attempts, (req, res) => {
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
    res.redirect(303, authorizeUrl(github, attempt, redirectUri(req)));
  });

  routes.get('/auth/github/callback', attempts, async (req, res) => {
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
      return refuse(
        res,
        400,
        'GitHub did not sign you in (it said: the request was refused or canceled).',
      );
    }
    if (!state || !verifier || typeof returned !== 'string' || returned !== state) {
      return refuse(
        res,
        400,
        'Sign-in with GitHub was refused: its state does not match this browser’s. Start again from this page.',
      );
    }
    if (typeof code !== 'string' || code.length === 0 || code.length > 512) {
      return refuse(res, 400, 'Sign-in with GitHub was refused: GitHub sent no code.');
    }
    let user: { id: number; login: string };
    try {
      user = await readGitHubUser(github, { code, verifier, redirectUri: redirectUri(req) });
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
      return refuse(
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
  const apiRoutes = Router();
  apiRoutes.post('/web/sign-in-links', async (req, res) => {
    const actor = actorOf(res);
    assertHuman(actor, 'sign in to the web console');
    const { token, expiresAt } = await mintSignInLink(sql, actor.principal!);
    const base = publicUrl ?? `${req.protocol}://${req.get('host') ?? ''}`;
    res.status(201).json({ url: `${base}/sign-in/${token}`, expires_at: expiresAt });
  });
  return { routes, apiRoutes };
}
