import { verifyWithFallback } from '@octokit/webhooks-methods';
import type { Verification } from './provider.js';

// Strict: bytes that are not UTF-8 are refused, not replaced (what is checked is what was signed).
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * A `sha256=`-prefixed hex HMAC-SHA256 of the exact body under the webhook's secret (GitHub's
 * `X-Hub-Signature-256`; Gitea's bare `X-Gitea-Signature` once prefixed), checked by Octokit's
 * own verify against each secret still accepted (two during a rotation). Octokit signs text, and
 * GitHub sends UTF-8 JSON: a body that is empty or not UTF-8 is not one it sends, and is refused
 * as malformed (400) without a secret being tried.
 */
export async function verifySha256Signature(
  raw: Buffer,
  signature: string,
  secrets: string[],
  mismatch: string,
): Promise<Verification> {
  if (!/^sha256=[0-9a-f]{64}$/i.test(signature)) {
    return { ok: false, reason: 'the signature is not a hex HMAC-SHA256' };
  }
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    return { ok: false, malformed: true, reason: 'the body is not valid UTF-8' };
  }
  if (text === '') return { ok: false, malformed: true, reason: 'the body is empty' };
  const [secret, ...fallbacks] = secrets;
  if (secret === undefined) return { ok: false, reason: mismatch };
  const matched = (await verifyWithFallback(
    secret,
    text,
    signature.toLowerCase(),
    fallbacks,
  )) as boolean;
  return matched ? { ok: true } : { ok: false, reason: mismatch };
}
