import type { Db } from '../../platform/db/open-database.js';
import { conflict, invalid, notFound } from '../../data/index.js';
import type { SecretBox } from '../../platform/secrets/secret-box.js';
import { slackAppProblems, type SlackAppView } from '../../contract/slack-app.js';

/** The Slack app as the API and the console show it (its times not yet text). */
export interface SlackApp extends Omit<
  SlackAppView,
  'token_refused_at' | 'created_at' | 'updated_at'
> {
  token_refused_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** The app with its secrets opened: for the Web API client, the request verifier, OAuth. */
export interface OpenedSlackApp extends SlackApp {
  botToken: string | null;
  signingSecret: string;
  clientSecret: string | null;
}

interface SlackAppRow extends SlackApp {
  bot_token: Buffer | null;
  signing_secret: Buffer;
  client_secret: Buffer | null;
}

const VIEW = (db: Db) => db`
  team_id, team_name, bot_user_id, bot_token is not null as installed,
  client_secret is not null as has_oauth_client, client_id, added_by,
  token_refused_at, token_refused_reason, created_at, updated_at`;

const view = (row: SlackAppRow): SlackApp => ({
  team_id: row.team_id,
  team_name: row.team_name,
  bot_user_id: row.bot_user_id,
  installed: row.installed,
  has_oauth_client: row.has_oauth_client,
  client_id: row.client_id,
  added_by: row.added_by,
  token_refused_at: row.token_refused_at,
  token_refused_reason: row.token_refused_reason,
  created_at: row.created_at,
  updated_at: row.updated_at,
});

/** What `auth.test` said of a bot token: the workspace it is for and the bot's own user. */
export interface BotIdentity {
  team_id: string;
  team_name: string | null;
  bot_user_id: string;
}

export interface NewSlackApp {
  signingSecret: string;
  /** With the bot that `auth.test` vouched for; without one, the console's install flow adds it. */
  bot?: ({ token: string } & BotIdentity) | undefined;
  clientId?: string | undefined;
  clientSecret?: string | undefined;
  addedBy: string;
}

/**
 * Adds the app, or replaces its credentials: a new bot token (a reinstall) clears a refusal.
 * Another workspace than the one configured is refused — its humans' links name that one —
 * until `slack remove`.
 */
export async function saveSlackApp(db: Db, box: SecretBox, input: NewSlackApp): Promise<SlackApp> {
  const problems = slackAppProblems({
    bot_token: input.bot?.token,
    signing_secret: input.signingSecret,
    client_id: input.clientId,
    client_secret: input.clientSecret,
  });
  if (problems.length) throw invalid(problems.join('; '));
  const [current] = await db<{ team_id: string | null }[]>`select team_id from slack_apps`;
  if (current?.team_id && input.bot && input.bot.team_id !== current.team_id) {
    throw conflict(
      `this server's Slack app is in workspace ${current.team_id}, not ${input.bot.team_id}: run switchboard slack remove first`,
    );
  }
  const bot = input.bot;
  const [row] = await db<SlackAppRow[]>`
    insert into slack_apps (team_id, team_name, bot_user_id, bot_token, signing_secret,
                            client_id, client_secret, added_by)
    values (${bot?.team_id ?? null}, ${bot?.team_name ?? null}, ${bot?.bot_user_id ?? null},
            ${bot ? box.seal(bot.token) : null}, ${box.seal(input.signingSecret)},
            ${input.clientId ?? null}, ${input.clientSecret ? box.seal(input.clientSecret) : null},
            ${input.addedBy})
    on conflict (id) do update set
      team_id = coalesce(excluded.team_id, slack_apps.team_id),
      team_name = coalesce(excluded.team_name, slack_apps.team_name),
      bot_user_id = coalesce(excluded.bot_user_id, slack_apps.bot_user_id),
      bot_token = coalesce(excluded.bot_token, slack_apps.bot_token),
      signing_secret = excluded.signing_secret,
      client_id = coalesce(excluded.client_id, slack_apps.client_id),
      client_secret = coalesce(excluded.client_secret, slack_apps.client_secret),
      added_by = excluded.added_by,
      token_refused_at = case when excluded.bot_token is null then slack_apps.token_refused_at end,
      token_refused_reason = case when excluded.bot_token is null then slack_apps.token_refused_reason end,
      updated_at = now()
    returning ${VIEW(db)}`;
  return view(row!);
}

/** The console's install flow finished: the bot it installed, in the workspace configured (or the first). */
export async function saveInstalledBot(
  db: Db,
  box: SecretBox,
  bot: { token: string } & BotIdentity,
): Promise<SlackApp> {
  const [row] = await db<SlackAppRow[]>`
    update slack_apps set team_id = ${bot.team_id}, team_name = ${bot.team_name},
      bot_user_id = ${bot.bot_user_id}, bot_token = ${box.seal(bot.token)},
      token_refused_at = null, token_refused_reason = null, updated_at = now()
    where team_id is null or team_id = ${bot.team_id}
    returning ${VIEW(db)}`;
  if (!row) {
    const app = await getSlackApp(db);
    if (!app) throw notFound('no Slack app is configured: switchboard slack add first');
    throw conflict(
      `this server's Slack app is in workspace ${app.team_id}, not ${bot.team_id}: run switchboard slack remove first`,
    );
  }
  return view(row);
}

export async function getSlackApp(db: Db): Promise<SlackApp | null> {
  const [row] = await db<SlackAppRow[]>`select ${VIEW(db)} from slack_apps`;
  return row ? view(row) : null;
}

export async function openSlackApp(db: Db, box: SecretBox): Promise<OpenedSlackApp | null> {
  const [row] = await db<SlackAppRow[]>`
    select ${VIEW(db)}, bot_token, signing_secret, client_secret from slack_apps`;
  if (!row) return null;
  return {
    ...view(row),
    botToken: row.bot_token ? box.open(row.bot_token) : null,
    signingSecret: box.open(row.signing_secret),
    clientSecret: row.client_secret ? box.open(row.client_secret) : null,
  };
}

/** Removes the app; humans' links stay, so that adding the same workspace again needs no relinking. */
export async function removeSlackApp(db: Db): Promise<void> {
  const [row] = await db`delete from slack_apps returning id`;
  if (!row) throw notFound('no Slack app is configured');
}

/**
 * Slack refused the bot token. True only for the call that recorded it, so that it is said once
 * in the log however many sends meet it; the console shows it until the token is replaced.
 */
export async function markTokenRefused(db: Db, reason: string): Promise<boolean> {
  const rows = await db`
    update slack_apps set token_refused_at = now(), token_refused_reason = ${reason.slice(0, 200)}
    where bot_token is not null and token_refused_at is null
    returning id`;
  return rows.length > 0;
}
