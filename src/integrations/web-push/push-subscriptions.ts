import type { Db } from '../../platform/db/open-database.js';
import type { WebSession } from '../../data/console/web-sessions.js';

export interface PushSubscriptionInput {
  endpoint: string;
  p256dh: string;
  auth: string;
}

/**
 * A human's browsers that may be pushed to, at most this many: each approval is one request per
 * subscription, so a human (or a script with their session) cannot make every approval cost
 * thousands; the oldest goes first.
 */
export const SUBSCRIPTIONS_PER_HUMAN = 20;

/**
 * Keeps a browser's push subscription for the session's human, bound to that session (it goes
 * when the session does). The same endpoint again (the page re-sends it after a new sign-in) moves
 * it to this session and human: an endpoint is one browser profile, whoever is signed in there.
 */
export async function savePushSubscription(
  db: Db,
  session: WebSession,
  input: PushSubscriptionInput,
): Promise<void> {
  await db`
    with saved as (
      insert into web_push_subscriptions (principal_id, session_id, endpoint, p256dh, auth)
      values (${session.human.id}, ${session.id}, ${input.endpoint}, ${input.p256dh}, ${input.auth})
      on conflict (endpoint) do update
        set principal_id = excluded.principal_id, session_id = excluded.session_id,
            p256dh = excluded.p256dh, auth = excluded.auth
      returning id
    )
    delete from web_push_subscriptions s
    where s.principal_id = ${session.human.id}
      and s.id not in (select id from saved)
      and s.id not in (
        select id from web_push_subscriptions
        where principal_id = ${session.human.id}
        order by created_at desc, id desc
        limit ${SUBSCRIPTIONS_PER_HUMAN - 1})`;
}
