import type postgres from 'postgres';
import { invalid } from '../../data/index.js';
import type { OutboundPolicy } from '../../platform/egress/egress-policy.js';
import { newWebhookSecret } from './send-webhook.js';

/**
 * Registers (or replaces) a principal's outbound webhook and returns its new signing secret,
 * shown this once. The URL must pass the outbound policy as far as it can be told now (https, or
 * http to an allowed address; no address inside written in it); what a name resolves to is
 * checked at each ring.
 */
export async function registerWebhook(
  sql: postgres.Sql,
  policy: OutboundPolicy,
  principal: string,
  url: string,
): Promise<{ url: string; secret: string }> {
  const refused = policy.urlRefusal(url);
  if (refused) throw invalid(`webhook url ${refused}`);
  const secret = newWebhookSecret();
  await sql`
    insert into consumer_webhooks (principal, url, secret) values (${principal}, ${url}, ${secret})
    on conflict (principal) do update set url = excluded.url, secret = excluded.secret, created_at = now()`;
  return { url, secret };
}

export async function removeWebhook(sql: postgres.Sql, principal: string): Promise<boolean> {
  const removed = await sql`delete from consumer_webhooks where principal = ${principal}`;
  return removed.count > 0;
}
