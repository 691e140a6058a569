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
 * SQL: the id of `principal` if it may be told this way (not revoked, and keeps the way on), else
 * null; for an integration's own statement about whom it tells.
 */
export function principalToTell(db: Db, principal: string, way: keyof NotificationPreferences) {
  return db`(
    select p.id from principals p
    where p.name = ${principal} and p.revoked_at is null and ${allowsNotice(db, way)})`;
}
