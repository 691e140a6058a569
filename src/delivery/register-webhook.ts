import type postgres from 'postgres';
import { invalid } from '../ledger/index.js';
import { isAllowedWebhookUrl, newWebhookSecret } from './send-webhook.js';

/**
 * Registers (or replaces) a principal's outbound webhook and returns its new signing secret,
 * shown this once. Only https URLs, or http to this machine, are accepted.
 */
export async function registerWebhook(
  sql: postgres.Sql,
  principal: string,
  url: string,
): Promise<{ url: string; secret: string }> {
  if (!isAllowedWebhookUrl(url))
    throw invalid('webhook url must be https (or http to 127.0.0.1, ::1 or localhost)');
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
