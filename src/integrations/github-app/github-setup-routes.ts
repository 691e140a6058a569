import { isIP } from 'node:net';
import { Router } from 'express';
import type postgres from 'postgres';
import { z } from 'zod';
import { adminOnly } from '../../kit/http/admin-only.js';
import { actorOf } from '../../kit/http/authenticate.js';
import { HttpError } from '../../kit/http/http-error.js';
import type { PublicAddress } from '../../kit/http/public-address.js';
import { conflict } from '../../data/index.js';
import type { Logger } from '../../platform/logger.js';
import { appManifest, manifestFormAction, ORG_LOGIN, webhookUrlOf } from './app-manifest.js';
import { convertManifestCode, ManifestConversionError } from './convert-manifest-code.js';
import type { GitHubCredentials } from './github-app-credentials.js';
import { saveGitHubApp } from './github-app-store.js';
import type { SecretBox } from '../../platform/secrets/secret-box.js';
import { mintSetupState, takeSetupState } from './github-setup-states.js';
import type { RenderPage } from '../../kit/pages/render-page.js';
import { rememberReturn } from '../../kit/pages/return-after-sign-in.js';
import { CSP } from '../../kit/pages/security-headers.js';
import { mintSignInLink } from '../../data/console/sign-in-links.js';
import { githubSetUpBody, githubSetupBody } from './github-setup-page.js';
import { problemBody } from '../../kit/pages/sign-in-page.js';
import { webRequestOf, type CookiePolicy, type WebRequest } from '../../kit/pages/web-request.js';

export interface GitHubSetupOptions {
  sql: postgres.Sql;
  log: Logger;
  credentials: GitHubCredentials;
  /** Seals the App's credentials; null (no server key): setup is off. */
  box: SecretBox | null;
  address: PublicAddress;
  /** WEBHOOK_PROXY_URL: GitHub delivers to the smee.io channel, which the server forwards from. */
  webhookProxyUrl: string | undefined;
  /**
   * WEBHOOK_SECRET from the environment: it wins over the secret GitHub made for the App, so the
   * App is told to sign with it (a manifest cannot carry a secret).
   */
  envWebhookSecret: string | undefined;
}

const SetupBody = z.object({
  org: z
    .string()
    .regex(ORG_LOGIN, 'must be an organization login, as in github.com/ORG')
    .optional(),
});

/** How long one wait for the App may last: under the idle timeouts of proxies (60 s). */
const MAX_WAIT_SECONDS = 50;
const WaitQuery = z.object({
  wait: z.coerce.number().int().min(0).max(MAX_WAIT_SECONDS).optional(),
  after: z.iso.datetime({ offset: true }).optional(),
});

const CODE = /^[A-Za-z0-9_-]{1,512}$/;

/**
 * `switchboard github setup`: the GitHub App's manifest flow, inside switchboard.
 * - `POST /api/v1/github/setup` (admins): the setup page's URL, as a one-time sign-in link that
 *   lands on it, so that the browser it is opened in is the admin's.
 * - `GET /api/v1/github/app` (admins): the App in use, waiting (`wait`) for one set up after
 *   `after` — how the CLI knows the App was created.
 * - `GET /github/setup` (the console, admins): the manifest, in a form that posts it to GitHub
 *   with a one-time `state`, bound to the admin's session.
 * - `GET /github/setup/callback`: GitHub sends the admin back with a code; the state is taken,
 *   the code converted, and the App's credentials stored sealed, for every process to use.
 */
export function githubSetupRoutes(options: GitHubSetupOptions): {
  apiRoutes: Router;
  pages: (render: RenderPage, cookies: CookiePolicy) => Router;
} {
  const { sql, log, credentials, box, address } = options;
  const host = credentials.host;

  /** Why setup cannot run on this server, or null. */
  const setupOff = (): { status: number; code: string; message: string } | null => {
    if (credentials.appFromEnvironment) {
      return {
        status: 409,
        code: 'conflict',
        message:
          "this server's GitHub App comes from APP_ID and PRIVATE_KEY in its environment, which win over one set up here: unset them (and WEBHOOK_SECRET, GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET) to use switchboard github setup",
      };
    }
    if (!box) {
      return {
        status: 503,
        code: 'github_setup_off',
        message:
          "GitHub App setup is off: set SWITCHBOARD_SECRET_KEY on this server (it seals the App's credentials in the database)",
      };
    }
    return null;
  };

  const appInUse = () => {
    const stored = credentials.stored();
    if (credentials.appFromEnvironment) return { source: 'environment' as const };
    return stored ? { source: 'setup' as const, ...stored } : null;
  };

  const apiRoutes = Router({ caseSensitive: true });
  apiRoutes.post('/github/setup', adminOnly('set up the GitHub App'), async (req, res) => {
    const actor = actorOf(res);
    const { org } = SetupBody.parse(req.body ?? {});
    const off = setupOff();
    if (off) {
      if (off.status === 409) throw conflict(off.message);
      throw new HttpError(off.status, off.code, off.message);
    }
    const [{ now }] = await sql<[{ now: Date }]>`select now()`;
    const { token, expiresAt } = await mintSignInLink(sql, actor.principal!);
    const page = `/github/setup${org ? `?org=${org}` : ''}`;
    res.status(201).json({
      url: `${address.url()}/sign-in/${token}?next=${encodeURIComponent(page)}`,
      expires_at: expiresAt,
      requested_at: now,
    });
  });

  apiRoutes.get('/github/app', adminOnly('set up the GitHub App'), async (req, res) => {
    const { wait, after } = WaitQuery.parse(req.query);
    const fresh = () => {
      const stored = credentials.stored();
      return !after || (stored !== null && stored.created_at > new Date(after));
    };
    if (wait && !fresh()) {
      const gone = new AbortController();
      res.once('close', () => gone.abort());
      const deadline = AbortSignal.any([gone.signal, AbortSignal.timeout(wait * 1000)]);
      while (!fresh() && !deadline.aborted) await credentials.nextChange(deadline);
    }
    if (res.destroyed) return;
    res.json({ app: appInUse() });
  });

  const pages = (render: RenderPage, cookies: CookiePolicy) => {
    const routes = Router({ caseSensitive: true });

    /** Refused unless an admin is signed in and this server can keep an App. */
    const assertAdminPage = (web: WebRequest) => {
      if (!web.actor.principal.is_admin)
        throw new HttpError(403, 'forbidden', 'Only an admin can set up the GitHub App.');
      const off = setupOff();
      if (off) throw new HttpError(off.status, off.code, capitalised(off.message));
    };

    routes.get('/github/setup', async (req, res) => {
      const web = webRequestOf(res);
      if (!web) {
        // Signing in comes back here.
        rememberReturn(res, cookies, req.originalUrl);
        return res.redirect(303, '/sign-in');
      }
      assertAdminPage(web);
      const org = typeof req.query.org === 'string' && req.query.org ? req.query.org : null;
      if (org !== null && !ORG_LOGIN.test(org))
        throw new HttpError(400, 'invalid', 'That is not an organization login.');
      const publicUrl = address.url();
      const webhookUrl = webhookUrlOf(publicUrl, options.webhookProxyUrl);
      const state = await mintSetupState(sql, web.session.id, org);
      // This page's form, and only this page's, may post to GitHub.
      res.set(
        'content-security-policy',
        CSP.replace("form-action 'self'", `form-action 'self' ${new URL(host.web).origin}`),
      );
      render(res, {
        title: 'Set up the GitHub App',
        body: githubSetupBody({
          action: manifestFormAction(host, org, state),
          manifest: appManifest({ publicUrl, webhookUrl }),
          org,
          githubWeb: host.web,
          webhookUrl,
          unreachable: unreachable(webhookUrl, options.webhookProxyUrl, host.web),
          replaces: credentials.stored(),
        }),
      });
    });

    routes.get('/github/setup/callback', async (req, res) => {
      res.set('cache-control', 'no-store');
      const web = webRequestOf(res);
      if (!web) {
        throw new HttpError(
          401,
          'unauthenticated',
          'This browser is not signed in to switchboard, so the App GitHub registered cannot be taken up here. Run switchboard github setup again.',
        );
      }
      assertAdminPage(web);
      const { code, state } = req.query;
      const taken =
        typeof state === 'string' ? await takeSetupState(sql, state, web.session.id) : undefined;
      if (!taken) {
        log.info({ human: web.actor.name }, 'refused a GitHub App setup callback: unknown state');
        throw new HttpError(
          400,
          'invalid',
          'This setup was already finished, has expired (GitHub gives it an hour), or was started in another browser. Run switchboard github setup again.',
        );
      }
      if (typeof code !== 'string' || !CODE.test(code))
        throw new HttpError(400, 'invalid', 'GitHub sent no code back. Start again.');
      let conversion;
      try {
        conversion = await convertManifestCode(host, code);
      } catch (error) {
        if (!(error instanceof ManifestConversionError)) throw error;
        log.warn({ err: error.message }, 'GitHub did not convert the App manifest code');
        return render(res, {
          status: 502,
          title: 'Set up the GitHub App',
          body: problemBody(
            `GitHub did not hand over the App (${error.message}). If GitHub shows the App, delete it there, then run switchboard github setup again.`,
          ),
        });
      }
      await saveGitHubApp(sql, box!, conversion, web.actor.name);
      await credentials.reload();
      const app = credentials.stored()!;
      log.info(
        { app_id: app.id, slug: app.slug, human: web.actor.name, org: taken.org },
        'GitHub App set up',
      );
      const secretProblem = options.envWebhookSecret
        ? await useEnvironmentSecret(credentials, options.envWebhookSecret, log)
        : null;
      render(res, {
        title: 'Install the GitHub App',
        body: githubSetUpBody(app, secretProblem),
      });
    });
    return routes;
  };

  return { apiRoutes, pages };
}

/**
 * Has GitHub sign the new App's deliveries with WEBHOOK_SECRET, the one this server verifies
 * with (`PATCH /app/hook/config`, as the App). Null when done, else what the admin must do.
 */
async function useEnvironmentSecret(
  credentials: GitHubCredentials,
  secret: string,
  log: Logger,
): Promise<string | null> {
  try {
    const octokit = await credentials.app()!.auth();
    await octokit.request('PATCH /app/hook/config', {
      secret,
      request: { retries: 0, signal: AbortSignal.timeout(20_000) },
    });
    return null;
  } catch (error) {
    const status = (error as { status?: unknown }).status;
    log.warn(
      { status: typeof status === 'number' ? status : undefined },
      "GitHub did not take WEBHOOK_SECRET as the new App's webhook secret",
    );
    return `GitHub did not take this server's WEBHOOK_SECRET as the App's webhook secret${typeof status === 'number' ? ` (it answered ${status})` : ''}, so its deliveries will be refused: paste WEBHOOK_SECRET into the App's settings on GitHub (Webhook secret), or unset WEBHOOK_SECRET and restart switchboard.`;
  }
}

/**
 * Why GitHub may not be able to deliver to `webhookUrl`, or null: an address of this machine's
 * own, unless GitHub is on this machine too (GHE_HOST on loopback: the fake GitHub of the tests,
 * which is how one tries the App path offline).
 */
function unreachable(
  webhookUrl: string,
  proxy: string | undefined,
  githubWeb: string,
): string | null {
  if (proxy) return null;
  const loopback = (url: string) => {
    const address = new URL(url).hostname.replace(/^\[|\]$/g, '');
    return (
      /(^|\.)localhost$/i.test(address) ||
      (isIP(address) !== 0 && /^(127\.|::1$|::ffff:127\.)/.test(address))
    );
  };
  return loopback(webhookUrl) && !loopback(githubWeb)
    ? `GitHub cannot deliver to ${webhookUrl}: that address is this machine's own. Set SWITCHBOARD_PUBLIC_URL to an address GitHub reaches, or WEBHOOK_PROXY_URL to a smee.io channel, restart, and open this page again.`
    : null;
}

const capitalised = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);
