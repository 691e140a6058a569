import { Router, type Response } from 'express';
import type postgres from 'postgres';
import { z } from 'zod';
import {
  notificationPreferences,
  setNotificationPreferences,
  type Actor,
} from '../../data/index.js';
import { waitingApprovals } from '../../surfaces/console/console-pages.js';
import { html, type Html } from '../../kit/pages/html.js';
import type { RenderPage } from '../../kit/pages/render-page.js';
import { timeTag } from '../../kit/pages/time-tag.js';
import { webRequestOf, type WebRequest } from '../../kit/pages/web-request.js';
import { getSlackApp, type SlackApp } from './slack-app-store.js';
import { createLinkCode, linkOf, unlink, type SlackLink } from './slack-links.js';

const PreferencesForm = z.object({
  web_push: z.literal('on').optional(),
  slack: z.literal('on').optional(),
  webhook: z.literal('on').optional(),
});

/**
 * The console's Slack page (`/slack`): the app as it stands — a token Slack refused said here
 * until it is replaced — the human's link (a code to link, a button to unlink at once), and
 * where they are told of what waits for them. Forms are the console's (session, Origin, CSRF,
 * checked before they get here).
 */
export function slackConsolePages(sql: postgres.Sql, render: RenderPage): Router {
  const router = Router({ caseSensitive: true });
  const signedIn = (res: Response): WebRequest => {
    const web = webRequestOf(res);
    if (!web) throw new Error('Slack page reached without a session');
    return web;
  };
  const show = async (res: Response, web: WebRequest, code?: { code: string; expires_at: Date }) =>
    render(res, {
      title: 'Slack',
      nav: 'slack',
      waiting: (await waitingApprovals(sql, web.actor)).length,
      body: slackBody({
        app: await getSlackApp(sql),
        link: await linkOf(sql, web.actor),
        preferences: await preferencesOf(sql, web.actor),
        csrf: web.csrf,
        admin: web.actor.principal.is_admin,
        code,
      }),
    });

  router.get('/slack', async (_req, res) => {
    const web = webRequestOf(res);
    if (!web) return res.redirect(303, '/sign-in');
    await show(res, web);
  });

  // The code is shown on the answer itself, once: only its hash is stored.
  router.post('/slack/link-code', async (_req, res) => {
    const web = signedIn(res);
    await show(res, web, await createLinkCode(sql, web.actor));
  });

  router.post('/slack/unlink', async (_req, res) => {
    await unlink(sql, signedIn(res).actor);
    res.redirect(303, '/slack');
  });

  // A checkbox left unticked is not sent: every way the form shows is set.
  router.post('/slack/notifications', async (req, res) => {
    const form = PreferencesForm.parse(req.body);
    await setNotificationPreferences(sql, signedIn(res).actor, {
      web_push: form.web_push === 'on',
      slack: form.slack === 'on',
      webhook: form.webhook === 'on',
    });
    res.redirect(303, '/slack');
  });

  return router;
}

const preferencesOf = async (sql: postgres.Sql, actor: Actor) =>
  actor.kind === 'human' ? notificationPreferences(sql, actor) : null;

function slackBody(view: {
  app: SlackApp | null;
  link: SlackLink | null;
  preferences: Awaited<ReturnType<typeof preferencesOf>>;
  csrf: string;
  admin: boolean;
  code: { code: string; expires_at: Date } | undefined;
}): Html {
  const { app, link, preferences, csrf, admin, code } = view;
  const hidden = html`<input type="hidden" name="_csrf" value="${csrf}" />`;
  const appPart = !app
    ? html`<p>
        Slack is not set up on this server: an admin runs <code>switchboard slack add</code>.
      </p>`
    : html`<p>
          ${
            app.installed
              ? html`Installed in the workspace
                  <strong>${app.team_name ?? app.team_id}</strong> (${app.team_id}), as the bot
                  ${app.bot_user_id}.`
              : 'Set up, not yet installed in a workspace.'
          }
        </p>
        ${
          app.token_refused_at
            ? html`<p class="flash" role="alert">
                Slack refused the bot token ${timeTag(app.token_refused_at)}
                (${app.token_refused_reason}): nothing is sent to Slack until an admin replaces it
                (<code>switchboard slack add</code>).
              </p>`
            : ''
        }
        ${
          admin && app.has_oauth_client
            ? html`<p>
                <a class="button" href="/slack/install"
                  >${app.installed ? 'Install again from Slack' : 'Install in Slack'}</a
                >
              </p>`
            : ''
        }`;
  const linkPart = link
    ? html`<p>
          Your Slack user <strong>${link.slack_user_id}</strong> is linked
          (${timeTag(link.linked_at)}): approvals assigned to you arrive
          ${link.channel_id ? html`in the channel ${link.channel_id}` : 'in a direct message from the bot'},
          and your Allow and Deny there count as yours.
        </p>
        <form method="post" action="/slack/unlink">
          ${hidden}
          <button type="submit" class="deny">Unlink now</button>
        </form>`
    : html`<p>
          Your Slack user is not linked: a press of yours in Slack decides nothing until it is.
        </p>
        ${
          code
            ? html`<p>Send this code to the switchboard bot in a direct message in Slack:</p>
                <pre class="secret" tabindex="0" aria-label="Link code">${code.code}</pre>
                <p class="quiet">It works once, until ${timeTag(code.expires_at)}.</p>`
            : app?.installed
              ? html`<form method="post" action="/slack/link-code">
                    ${hidden}
                    <button type="submit">Get a link code</button>
                  </form>
                  ${
                    app.has_oauth_client
                      ? html`<p><a class="button" href="/slack/sign-in">Sign in with Slack</a></p>`
                      : ''
                  }`
              : ''
        }`;
  const box = (name: 'web_push' | 'slack' | 'webhook', label: string) =>
    html`<label
      ><input type="checkbox" name="${name}" ${preferences?.[name] ? 'checked' : ''} />
      ${label}</label
    >`;
  const preferencesPart = preferences
    ? html`<form method="post" action="/slack/notifications" class="preferences">
        ${hidden}
        <fieldset>
          <legend>Tell me of what waits for me by</legend>
          ${box('web_push', 'Web Push (this console)')} ${box('slack', 'Slack')}
          ${box('webhook', 'my outbound webhook')}
        </fieldset>
        <button type="submit">Save</button>
      </form>`
    : '';
  return html`<h2>The Slack app</h2>
    ${appPart}
    <h2>Your Slack user</h2>
    ${linkPart}
    <h2>Where you are told</h2>
    ${preferencesPart}`;
}
