import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { Doorbell } from '../../contract/doorbell.js';
import type { Logger } from '../../platform/logger.js';
import {
  failureOf,
  isOutboundRefused,
  type Outbound,
} from '../../platform/egress/create-egress.js';

/** A new Standard Webhooks signing secret: `whsec_` and 32 random bytes in base64. */
export function newWebhookSecret(): string {
  return 'whsec_' + randomBytes(32).toString('base64');
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
 * success; a redirect is a failure, not followed. The same message id on every attempt lets the
 * receiver drop duplicates. The detail is what the webhook's owner may read in a todo's history:
 * an address the outbound policy refuses is not tried again, and reads as `unreachable` there
 * (the reason goes to the server's log).
 */
export async function sendWebhook(
  outbound: Outbound,
  target: { url: string; secret: string },
  messageId: string,
  doorbell: Doorbell,
  {
    retryDelaysMs = [1000, 5000],
    timeoutMs = 5000,
    log,
  }: { retryDelaysMs?: number[]; timeoutMs?: number; log?: Logger } = {},
): Promise<WebhookOutcome> {
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
      const answer = await outbound.request(target.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': messageId,
          'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
          'webhook-signature': signer.sign(messageId, sentAt, body),
        },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (answer.status >= 200 && answer.status < 300)
        return { ok: true, attempts: attempt + 1, detail: String(answer.status) };
      detail =
        answer.status >= 300 && answer.status < 400
          ? `${answer.status}, a redirect: not followed`
          : String(answer.status);
    } catch (error) {
      detail = failureOf(error);
      if (isOutboundRefused(error)) {
        log?.warn({ err: error, messageId }, 'a webhook was not sent: its address is refused');
        return { ok: false, attempts: attempt + 1, detail };
      }
    }
  }
  return { ok: false, attempts: retryDelaysMs.length + 1, detail };
}
