import type { IncomingHttpHeaders } from 'node:http';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { header, type Verification } from '../provider.js';

/**
 * The Standard Webhooks scheme (Svix, Resend, Clerk, OpenAI, GitLab's signing token), with its
 * reference library: `webhook-signature` holds one or more `v1,<base64 HMAC>` entries (several
 * during the sender's own key rotation) of `<webhook-id>.<webhook-timestamp>.<body>` under the
 * `whsec_` secret, compared in constant time, and the timestamp must be within 5 minutes of now
 * either way — so a captured delivery cannot be replayed later, under any id. Each of the
 * source's secrets (two during a rotation here) is tried.
 */
export function verifyStandardWebhook(
  raw: Buffer,
  headers: IncomingHttpHeaders,
  secrets: string[],
): Verification {
  const signed = {
    'webhook-id': header(headers, 'webhook-id') ?? '',
    'webhook-timestamp': header(headers, 'webhook-timestamp') ?? '',
    'webhook-signature': header(headers, 'webhook-signature') ?? '',
  };
  const missing = Object.entries(signed)
    .filter(([, value]) => value === '')
    .map(([name]) => name);
  if (missing.length)
    return { ok: false, reason: `required header missing: ${missing.join(', ')}` };
  if (!/^\d{1,12}$/.test(signed['webhook-timestamp'])) {
    return { ok: false, reason: 'webhook-timestamp must be the Unix time in seconds' };
  }
  let reason = 'the signature does not match the body under this source\u2019s secret';
  for (const secret of secrets) {
    try {
      new Webhook(secret).verify(raw, signed, { jsonParse: false });
      return { ok: true };
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
      if (/timestamp too old/i.test(error.message)) {
        return { ok: false, reason: 'webhook-timestamp is more than 5 minutes old' };
      }
      if (/timestamp too new/i.test(error.message)) {
        return { ok: false, reason: 'webhook-timestamp is more than 5 minutes in the future' };
      }
      reason = 'the signature does not match the body under this source\u2019s secret';
    }
  }
  return { ok: false, reason };
}
