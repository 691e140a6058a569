import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { Doorbell } from '../contract/doorbell.js';

/** A new Standard Webhooks signing secret: `whsec_` and 32 random bytes in base64. */
export function newWebhookSecret(): string {
  return 'whsec_' + randomBytes(32).toString('base64');
}

const LOOPBACK = new Set(['127.0.0.1', '::1', '[::1]', 'localhost']);

/** Webhooks go over https, or plain http to this machine only (local agents, tests). */
export function isAllowedWebhookUrl(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.username || parsed.password) return false;
  return (
    parsed.protocol === 'https:' || (parsed.protocol === 'http:' && LOOPBACK.has(parsed.hostname))
  );
}

export interface WebhookOutcome {
  ok: boolean;
  attempts: number;
  /** The last HTTP status, or the reason there was none. */
  detail: string;
}

/**
 * POSTs a doorbell signed per the Standard Webhooks spec (webhook-id, webhook-timestamp,
 * webhook-signature), retrying a failed attempt after each delay in `retryDelaysMs`. Any 2xx is
 * success. The same message id on every attempt lets the receiver drop duplicates.
 */
export async function sendWebhook(
  target: { url: string; secret: string },
  messageId: string,
  doorbell: Doorbell,
  {
    retryDelaysMs = [1000, 5000],
    timeoutMs = 5000,
  }: { retryDelaysMs?: number[]; timeoutMs?: number } = {},
): Promise<WebhookOutcome> {
  if (!isAllowedWebhookUrl(target.url))
    return { ok: false, attempts: 0, detail: 'url not allowed' };
  const body = JSON.stringify({
    type: `todo.${doorbell.type}`,
    timestamp: new Date().toISOString(),
    data: doorbell,
  });
  const signer = new Webhook(target.secret);
  let detail = '';
  for (let attempt = 0; attempt <= retryDelaysMs.length; attempt++) {
    if (attempt > 0)
      await new Promise((resolve) => setTimeout(resolve, retryDelaysMs[attempt - 1]));
    const sentAt = new Date();
    try {
      const response = await fetch(target.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': messageId,
          'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
          'webhook-signature': signer.sign(messageId, sentAt, body),
        },
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
      await response.body?.cancel();
      if (response.ok) return { ok: true, attempts: attempt + 1, detail: String(response.status) };
      detail = String(response.status);
    } catch (error) {
      detail = (error as Error).name === 'TimeoutError' ? 'timeout' : 'unreachable';
    }
  }
  return { ok: false, attempts: retryDelaysMs.length + 1, detail };
}
