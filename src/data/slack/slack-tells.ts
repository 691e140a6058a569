import type { Db } from '../../platform/db/open-database.js';
import { principalToTell } from '../principals/notification-preferences.js';

/**
 * Whether Slack tells `principal` of an approval, as an SQL boolean: the app is installed with a
 * token Slack has not refused, the human is linked in its workspace, and keeps Slack on.
 */
export function slackTells(db: Db, principal: string) {
  return db`exists (
    select 1 from slack_links l
    join slack_apps a on a.team_id = l.team_id and a.bot_token is not null and a.token_refused_at is null
    where l.principal_id = ${principalToTell(db, principal, 'slack')})`;
}
