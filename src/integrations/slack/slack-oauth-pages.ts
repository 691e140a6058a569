import { createHmac } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import type postgres from 'postgres';
import { z } from 'zod';
import { HttpError } from '../../kit/http/http-error.js';
import { forbidden } from '../../data/index.js';
import type { SecretBox } from '../../platform/secrets/secret-box.js';
import type { RenderPage } from '../../kit/pages/render-page.js';
import { problemBody } from '../../kit/pages/sign-in-page.js';
import { sameToken, webRequestOf, type WebRequest } from '../../kit/pages/web-request.js';
import { openSlackApp, saveInstalledBot, type OpenedSlackApp } from './slack-app-store.js';
import { slackFailureOf, type SlackClientFactory } from './slack-client.js';
import { linkSignedIn } from './slack-links.js';
import {
  SlackIdTokenRefused,
  SlackKeysUnavailable,
  type SlackIdTokenVerifier,
} from './verify-slack-id-token.js';
import type { Logger } from '../../platform/logger.js';

/** Slack's pages a browser is sent to: the app's install (OAuth v2) and Sign in with Slack (OIDC). */
const INSTALL_URL = 'https://slack.com/oauth/v2/authorize';
const SIGN_IN_URL = 'https://slack.com/openid/connect/authorize';
/** The manifest's bot scopes, and no more. */
const BOT_SCOPES = 'chat:write,im:history';

const Callback = z.object({
  code: z.string().min(1).max(500).optional(),
  state: z.string().max(200).optional(),
  error: z.string().max(200).optional(),
});

/**
 * The console's two round trips through Slack. Both start from a signed-in session and come back
 * to it: the `state` Slack carries is an HMAC of the session's CSRF token, so a callback is taken
 * only in the browser session that started it (nothing is stored meanwhile). The install is an
 * admin's, and saves the bot token Slack gives (sealed); Sign in with Slack links the Slack user
 * its id_token names — verified, in the app's workspace — to the human signed in.
 */
export function slackOAuthPages(options: {
  sql: postgres.Sql;
  box: SecretBox | null;
  clients: SlackClientFactory;
  idTokens: SlackIdTokenVerifier;
  log: Logger;
  publicUrl: () => string;
  render: RenderPage;
}): Router {
  const { sql, box, clients, idTokens, log, publicUrl, render } = options;
  const router = Router({ caseSensitive: true });
  const stateFor = (web: WebRequest, purpose: string) =>
    createHmac('sha256', web.csrf).update(`slack ${purpose}`).digest('base64url');
  // The id_token carries it back: a token Slack issued to another browser session is refused.
  const nonceFor = (web: WebRequest) => stateFor(web, 'sign-in nonce');
  const redirectUri = (purpose: 'install' | 'sign-in') =>
    `${publicUrl()}/slack/${purpose}/callback`;

  /** The session, and the app with its OAuth client; or why not, as a page. */
  const ready = async (res: Response) => {
    const web = webRequestOf(res);
    if (!web) {
      res.redirect(303, '/sign-in');
      return null;
    }
    const app = box ? await openSlackApp(sql, box) : null;
    if (!app?.client_id || !app.clientSecret) {
      throw new HttpError(
        409,
        'conflict',
        'Slack’s OAuth client is not set up: an admin runs switchboard slack add with --client-id and --client-secret.',
      );
    }
    return { web, app: app as OpenedSlackApp & { client_id: string; clientSecret: string } };
  };

  /** The callback's code, from the session that asked for it; else a refusal that changes nothing. */
  const codeOf = (req: Request, web: WebRequest, purpose: string): string => {
    const query = Callback.parse(req.query);
    if (!sameToken(query.state, stateFor(web, purpose))) {
      throw new HttpError(
        400,
        'invalid',
        'This answer from Slack is not for this browser session. Nothing changed: start again from the Slack page.',
      );
    }
    if (query.error || !query.code) {
      throw new HttpError(
        400,
        'invalid',
        `Slack did not grant it (${query.error ?? 'no code'}). Nothing changed.`,
      );
    }
    return query.code;
  };

  const slackSaid = (error: unknown): never => {
    throw new HttpError(
      502,
      'slack_unreachable',
      `Slack did not complete it: ${slackFailureOf(error).detail}. Nothing changed.`,
    );
  };

  router.get('/slack/install', async (_req, res) => {
    const got = await ready(res);
    if (!got) return;
    if (!got.web.actor.principal.is_admin) throw forbidden('only an admin installs the Slack app');
    const url = new URL(INSTALL_URL);
    url.search = new URLSearchParams({
      client_id: got.app.client_id,
      scope: BOT_SCOPES,
      redirect_uri: redirectUri('install'),
      state: stateFor(got.web, 'install'),
    }).toString();
    res.redirect(303, url.toString());
  });

  router.get('/slack/install/callback', async (req, res) => {
    const got = await ready(res);
    if (!got) return;
    if (!got.web.actor.principal.is_admin) throw forbidden('only an admin installs the Slack app');
    const code = codeOf(req, got.web, 'install');
    let answer: {
      access_token?: string;
      token_type?: string;
      bot_user_id?: string;
      team?: { id?: string; name?: string };
    };
    try {
      answer = await clients().oauth.v2.access({
        client_id: got.app.client_id,
        client_secret: got.app.clientSecret,
        code,
        redirect_uri: redirectUri('install'),
      });
    } catch (error) {
      return slackSaid(error);
    }
    if (
      answer.token_type !== 'bot' ||
      !answer.access_token ||
      !answer.bot_user_id ||
      !answer.team?.id
    ) {
      throw new HttpError(
        502,
        'slack_unreachable',
        'Slack’s answer named no bot. Nothing changed.',
      );
    }
    await saveInstalledBot(sql, box!, {
      token: answer.access_token,
      team_id: answer.team.id,
      team_name: answer.team.name ?? null,
      bot_user_id: answer.bot_user_id,
    });
    res.redirect(303, '/slack');
  });

  router.get('/slack/sign-in', async (_req, res) => {
    const got = await ready(res);
    if (!got) return;
    const url = new URL(SIGN_IN_URL);
    url.search = new URLSearchParams({
      response_type: 'code',
      scope: 'openid',
      client_id: got.app.client_id,
      redirect_uri: redirectUri('sign-in'),
      state: stateFor(got.web, 'sign-in'),
      nonce: nonceFor(got.web),
      ...(got.app.team_id && { team: got.app.team_id }),
    }).toString();
    res.redirect(303, url.toString());
  });

  router.get('/slack/sign-in/callback', async (req, res) => {
    const got = await ready(res);
    if (!got) return;
    const code = codeOf(req, got.web, 'sign-in');
    let idToken: string | undefined;
    try {
      const token = await clients().openid.connect.token({
        client_id: got.app.client_id,
        client_secret: got.app.clientSecret,
        code,
        redirect_uri: redirectUri('sign-in'),
      });
      idToken = token.id_token;
    } catch (error) {
      return slackSaid(error);
    }
    if (!idToken) {
      throw new HttpError(
        502,
        'slack_unreachable',
        'Slack did not say who signed in (its answer had no id_token). Nothing changed.',
      );
    }
    const { user, team } = await verifiedIdentity(idToken, got);
    if (team !== got.app.team_id) {
      return render(res, {
        status: 403,
        title: 'Refused',
        body: problemBody(
          `You signed in to another Slack workspace (${team}) than the one switchboard is installed in. Nothing changed.`,
          '/slack',
        ),
      });
    }
    await linkSignedIn(sql, got.web.actor, { team_id: team, user_id: user });
    res.redirect(303, '/slack');
  });

  /** Who the id_token says signed in, once it holds; else a page saying why, nothing changed. */
  const verifiedIdentity = async (
    idToken: string,
    { web, app }: { web: WebRequest; app: { client_id: string } },
  ) => {
    try {
      return await idTokens.verify(idToken, { clientId: app.client_id, nonce: nonceFor(web) });
    } catch (error) {
      if (error instanceof SlackIdTokenRefused) {
        log.warn({ reason: error.reason }, 'refused a Sign in with Slack: its id_token');
        throw new HttpError(
          400,
          'invalid',
          `Slack’s answer could not be verified: its id_token was refused (${error.reason}). Nothing changed: start again from the Slack page.`,
        );
      }
      if (error instanceof SlackKeysUnavailable) {
        log.warn({ detail: error.detail }, 'Sign in with Slack: Slack’s signing keys unreadable');
        throw new HttpError(
          502,
          'slack_unreachable',
          'Slack’s signing keys could not be read, so who signed in could not be checked. Nothing changed: try again in a moment.',
        );
      }
      throw error;
    }
  };

  return router;
}
