import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Router } from 'express';
import type postgres from 'postgres';
import { z } from 'zod';
import { adminOnly } from '../../kit/http/admin-only.js';
import { actorOf } from '../../kit/http/authenticate.js';
import { HttpError } from '../../kit/http/http-error.js';
import type { PublicAddress } from '../../kit/http/public-address.js';
import {
  forbidden,
  invalid,
  notificationPreferences,
  setNotificationPreferences,
  type Actor,
} from '../../data/index.js';
import { slackAppProblems } from '../../contract/slack-app.js';
import { PACKAGE_ROOT } from '../../platform/package-root.js';
import type { SecretBox } from '../../platform/secrets/secret-box.js';
import { getSlackApp, removeSlackApp, saveSlackApp, type BotIdentity } from './slack-app-store.js';
import { slackFailureOf, type SlackClientFactory } from './slack-client.js';
import { createLinkCode, linkOf, setApprovalChannel, unlink } from './slack-links.js';

const MANIFEST_FILE = 'slack-app-manifest.yml';
const MANIFEST_URL = 'https://switchboard.example.com';

const AppBody = z.strictObject({
  bot_token: z.string().min(1).max(512).optional(),
  signing_secret: z.string().min(1).max(128),
  client_id: z.string().min(1).max(64).optional(),
  client_secret: z.string().min(1).max(128).optional(),
});
const LinkBody = z.strictObject({ channel: z.string().max(40).nullable() });
const PreferencesBody = z.strictObject({
  web_push: z.boolean().optional(),
  slack: z.boolean().optional(),
  webhook: z.boolean().optional(),
});

function assertHumanActor(actor: Actor): void {
  if (actor.kind !== 'human')
    throw forbidden('only a human has Slack settings; agents never decide');
}

/** The manifest in the repository, naming this server at its public address. */
export async function slackManifest(publicUrl: string): Promise<string> {
  const text = await readFile(join(PACKAGE_ROOT, MANIFEST_FILE), 'utf8');
  return text.split(MANIFEST_URL).join(publicUrl);
}

/**
 * Asks Slack who a bot token is (`auth.test`): the workspace and the bot's user. A token Slack
 * refuses is refused here, in Slack's words; a Slack that does not answer is a 502.
 */
export async function identifyBot(
  clients: SlackClientFactory,
  token: string,
): Promise<BotIdentity> {
  let answer: { team_id?: string; team?: string; user_id?: string };
  try {
    answer = await clients(token).auth.test();
  } catch (error) {
    const failure = slackFailureOf(error);
    if (failure.kind === 'retry')
      throw new HttpError(
        502,
        'slack_unreachable',
        `could not ask Slack about the token: ${failure.detail}`,
      );
    throw invalid(`Slack refused the bot token: ${failure.detail}`);
  }
  if (!answer.team_id || !answer.user_id) throw invalid('Slack did not say whose token this is');
  return { team_id: answer.team_id, team_name: answer.team ?? null, bot_user_id: answer.user_id };
}

/**
 * Slack under /api/v1 (what `switchboard slack …` and `switchboard notifications` call): the app
 * (admins; tokens and secrets go in and never come out), each human's link, their link codes and
 * where their approvals go, and their notification preferences.
 */
export function slackApiRoutes(options: {
  sql: postgres.Sql;
  box: SecretBox | null;
  clients: SlackClientFactory;
  address: PublicAddress;
}): Router {
  const { sql, box, clients, address } = options;
  const router = Router({ caseSensitive: true });
  const sealer = () => {
    if (!box) {
      throw new HttpError(
        503,
        'slack_disabled',
        'Slack is off: set SWITCHBOARD_SECRET_KEY on this server (it seals the bot token)',
      );
    }
    return box;
  };

  router.get('/slack', async (_req, res) => {
    const actor = actorOf(res);
    assertHumanActor(actor);
    const app = await getSlackApp(sql);
    res.json({
      app,
      link: await linkOf(sql, actor),
      events_url: `${address.url()}/api/slack/events`,
      interactions_url: `${address.url()}/api/slack/interactions`,
    });
  });

  router.get('/slack/manifest', async (_req, res) => {
    assertHumanActor(actorOf(res));
    res.json({ manifest: await slackManifest(address.url()) });
  });

  router.put('/slack/app', adminOnly('set up Slack'), async (req, res) => {
    const body = AppBody.parse(req.body ?? {});
    const actor = actorOf(res);
    const sealed = sealer();
    // Every problem at once, and before Slack is asked about the token.
    const problems = slackAppProblems(body);
    if (problems.length) throw invalid(problems.join('; '));
    const bot =
      body.bot_token === undefined
        ? undefined
        : { token: body.bot_token, ...(await identifyBot(clients, body.bot_token)) };
    const app = await saveSlackApp(sql, sealed, {
      signingSecret: body.signing_secret,
      bot,
      clientId: body.client_id,
      clientSecret: body.client_secret,
      addedBy: actor.name,
    });
    res.json({ app });
  });

  router.delete('/slack/app', adminOnly('remove Slack'), async (_req, res) => {
    await removeSlackApp(sql);
    res.json({ removed: true });
  });

  router.post('/slack/link-code', async (_req, res) => {
    const actor = actorOf(res);
    assertHumanActor(actor);
    const app = await getSlackApp(sql);
    if (!app?.installed)
      throw new HttpError(
        409,
        'conflict',
        'Slack is not installed on this server yet: an admin runs switchboard slack add',
      );
    const { code, expires_at } = await createLinkCode(sql, actor);
    res.status(201).json({ code, expires_at, bot_user_id: app.bot_user_id });
  });

  router.put('/slack/link', async (req, res) => {
    const actor = actorOf(res);
    const { channel } = LinkBody.parse(req.body ?? {});
    await setApprovalChannel(sql, actor, channel);
    res.json({ link: await linkOf(sql, actor) });
  });

  router.delete('/slack/link', async (_req, res) => {
    const actor = actorOf(res);
    await unlink(sql, actor);
    res.json({ unlinked: true });
  });

  router.get('/notifications', async (_req, res) => {
    res.json({ preferences: await notificationPreferences(sql, actorOf(res)) });
  });

  router.put('/notifications', async (req, res) => {
    const change = PreferencesBody.parse(req.body ?? {});
    res.json({ preferences: await setNotificationPreferences(sql, actorOf(res), change) });
  });

  return router;
}
