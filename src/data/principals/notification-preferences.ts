import type { Db } from '../../platform/db/open-database.js';
import type { Actor } from '../actor.js';
import { forbidden } from '../ledger-error.js';

/** Where a human is told of what waits for them; each way on unless turned off. */
export interface NotificationPreferences {
  web_push: boolean;
  slack: boolean;
  webhook: boolean;
}

export const NOTIFY_EVERY_WAY: NotificationPreferences = {
  web_push: true,
  slack: true,
  webhook: true,
};

export async function notificationPreferences(
  db: Db,
  actor: Actor,
): Promise<NotificationPreferences> {
  if (actor.kind !== 'human') throw forbidden('notification preferences are a human’s');
  const [row] = await db<NotificationPreferences[]>`
    select web_push, slack, webhook from notification_preferences
    where principal_id = ${actor.principal.id}`;
  return row ?? NOTIFY_EVERY_WAY;
}

/** Turns ways on or off; those not named stay as they are. */
export async function setNotificationPreferences(
  db: Db,
  actor: Actor,
  change: Partial<NotificationPreferences>,
): Promise<NotificationPreferences> {
  if (actor.kind !== 'human') throw forbidden('notification preferences are a human’s');
  const next = { ...(await notificationPreferences(db, actor)), ...change };
  const [row] = await db<NotificationPreferences[]>`
    insert into notification_preferences (principal_id, web_push, slack, webhook)
    values (${actor.principal.id}, ${next.web_push}, ${next.slack}, ${next.webhook})
    on conflict (principal_id) do update set web_push = excluded.web_push,
      slack = excluded.slack, webhook = excluded.webhook, updated_at = now()
    returning web_push, slack, webhook`;
  return row!;
}

/** SQL: the principal `p` lets switchboard tell them this way (a principal with no row: yes). */
export function allowsNotice(db: Db, way: keyof NotificationPreferences) {
  return db`coalesce((select np.${db(way)} from notification_preferences np where np.principal_id = p.id), true)`;
}

/**
 * Whether Slack tells `principal` of an approval: the app is installed with a token Slack has not
 * refused, the human is linked in its workspace, and keeps Slack on.
 */
export function slackTells(db: Db, principal: string) {
  return db`exists (
    select 1 from principals p
    join slack_links l on l.principal_id = p.id
    join slack_apps a on a.team_id = l.team_id and a.bot_token is not null and a.token_refused_at is null
    where p.name = ${principal} and p.revoked_at is null and ${allowsNotice(db, 'slack')})`;
}
