import { isUtf8 } from 'node:buffer';
// Bolt's own verifier, from its file: the package's index loads the whole App (Express, Socket
// Mode, OAuth) — most of a second to start — for this one function.
import { verifySlackRequest as boltVerify } from '@slack/bolt/dist/receivers/verify-request.js';

/** Slack's window: a request signed more than five minutes from now, either way, is refused. */
export const SLACK_TIMESTAMP_TOLERANCE_SECONDS = 300;

export type SlackVerification = { ok: true } | { ok: false; reason: string };

/**
 * Slack's request signature (v0): HMAC-SHA256 under the signing secret of
 * `v0:<X-Slack-Request-Timestamp>:<raw body>`, compared in constant time (Bolt's verifier does
 * both). Around it, what Bolt leaves to its caller: both headers present and well formed, the
 * timestamp within five minutes in the future as well as the past (Bolt checks only the past),
 * and the body's exact bytes — UTF-8, so that the text Bolt signs is those bytes.
 */
export function verifySlackSignature(
  signingSecret: string,
  headers: { signature: string | undefined; timestamp: string | undefined },
  raw: Buffer,
  nowMs = Date.now(),
): SlackVerification {
  const { signature, timestamp } = headers;
  if (!signature || !timestamp) {
    return { ok: false, reason: 'X-Slack-Signature and X-Slack-Request-Timestamp are required' };
  }
  if (!/^[0-9]{1,12}$/.test(timestamp)) {
    return { ok: false, reason: 'X-Slack-Request-Timestamp is not a Unix time' };
  }
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > SLACK_TIMESTAMP_TOLERANCE_SECONDS) {
    return { ok: false, reason: 'the request was signed more than five minutes ago (or ahead)' };
  }
  if (!/^v0=[0-9a-f]{64}$/.test(signature)) {
    return { ok: false, reason: 'X-Slack-Signature is not a v0 signature' };
  }
  if (!isUtf8(raw)) return { ok: false, reason: 'the body is not UTF-8' };
  try {
    boltVerify({
      signingSecret,
      body: raw.toString('utf8'),
      headers: { 'x-slack-signature': signature, 'x-slack-request-timestamp': Number(timestamp) },
      nowMilliseconds: nowMs,
    });
    return { ok: true };
  } catch {
    return { ok: false, reason: 'the signature does not match' };
  }
}
