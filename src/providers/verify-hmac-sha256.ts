import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Verification } from './provider.js';

/**
 * A hex HMAC-SHA256 of the raw body under the webhook's secret (GitHub's `X-Hub-Signature-256`
 * after its `sha256=`, Gitea's `X-Gitea-Signature`), compared in constant time. Every secret is
 * tried, whichever matches (two during a rotation): the time taken says nothing about which.
 */
export function verifyHmacSha256(
  raw: Buffer,
  hex: string,
  secrets: string[],
  mismatch: string,
): Verification {
  if (!/^[0-9a-f]{64}$/i.test(hex)) {
    return { ok: false, reason: 'the signature is not a hex HMAC-SHA256' };
  }
  const given = Buffer.from(hex, 'hex');
  let matched = false;
  for (const secret of secrets) {
    const expected = createHmac('sha256', secret).update(raw).digest();
    matched = timingSafeEqual(expected, given) || matched;
  }
  return matched ? { ok: true } : { ok: false, reason: mismatch };
}
