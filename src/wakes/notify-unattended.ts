import type postgres from 'postgres';
import type { Doorbell } from '../contract/doorbell.js';
import { allowsNotice, eventRecorded, recordEvent, slackTells, type Wake } from '../data/index.js';
import type { Logger } from '../platform/logger.js';
import type { Outbound } from '../platform/egress/create-egress.js';
import { sendWebhook } from '../integrations/webhooks/send-webhook.js';
import { DISPATCHER } from './take-ring.js';

/**
 * An approval or verdict for a principal with no live session: its webhook is rung, or the
 * history says that nobody was told (unless Web Push tells the human's browsers of it). Every
 * process hears the wake; under a lock on the todo, the first to find no record of this wake
 * acts, and the others find its record.
 */
export async function notifyUnattended(
  {
    sql,
    schema,
    outbound,
    webhookRetriesMs,
    log,
  }: {
    sql: postgres.Sql;
    schema: string;
    outbound: Outbound;
    webhookRetriesMs: number[];
    log: Logger;
  },
  wake: Wake,
  principal: string,
  doorbell: Doorbell,
): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtextextended(${`${schema}.notice.${wake.todo_id}`}, 0))`;
    const [{ handled }] = await tx<[{ handled: boolean }]>`
      select ${eventRecorded(tx, {
        todo: wake.todo_id,
        actions: ['notified', 'wake_stored'],
        key: 'wake',
        equals: wake.wake_id,
      })} as handled`;
    if (handled) return;
    const event = (action: string, data: Record<string, unknown>) =>
      recordEvent(tx, {
        todoId: wake.todo_id,
        actor: DISPATCHER,
        action,
        data: { ...data, wake: wake.wake_id },
      });
    // A human may have turned their webhook, Web Push or Slack off (notification preferences).
    const [registered] = await tx<{ url: string; secret: string; allowed: boolean }[]>`
      select w.url, w.secret, ${allowsNotice(tx, 'webhook')} as allowed from consumer_webhooks w
      join principals p on p.name = w.principal and p.revoked_at is null
      where w.principal = ${principal}`;
    const webhook = registered?.allowed ? registered : undefined;
    if (webhook) {
      const sent = await sendWebhook(
        outbound,
        webhook,
        `${doorbell.type}_${wake.todo_id}_${wake.wake_id}`,
        doorbell,
        { retryDelaysMs: webhookRetriesMs, log },
      );
      await event('notified', {
        principal,
        path: 'webhook',
        outcome: sent.ok ? 'delivered' : `failed (${sent.detail})`,
      });
      if (sent.ok) return;
    }
    const why = `${principal} has no session attached and ${webhook ? 'its webhook failed' : registered ? 'its webhook turned off' : 'no webhook'}`;
    // A human's browsers that said yes to Web Push are told of an approval by the push sender
    // (push-sender.ts), and a linked Slack user by the bot (src/integrations/slack/slack-notifier.ts), each
    // recording what it sent: somebody is told then.
    const [{ browsers, slack }] = await tx<[{ browsers: number; slack: boolean }]>`
      select count(*)::int as browsers,
             ${doorbell.type === 'approval'} and ${slackTells(tx, principal)} as slack
      from web_push_subscriptions s
      join principals p on p.id = s.principal_id and p.revoked_at is null
      join web_sessions ws on ws.id = s.session_id and ws.expires_at > now()
      where p.name = ${principal} and ${doorbell.type === 'approval'} and ${allowsNotice(tx, 'web_push')}`;
    const told = [
      browsers > 0 &&
        `Web Push tells ${browsers === 1 ? 'its browser' : `its ${browsers} browsers`}`,
      slack && 'Slack tells them',
    ].filter(Boolean);
    await event('wake_stored', {
      principal,
      reason: told.length > 0 ? `${why}; ${told.join('; ')}` : `nobody was told: ${why}`,
    });
  });
}
