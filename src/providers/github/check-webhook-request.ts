import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import { sendError } from '../../http/http-error.js';
import { isUtf8Json } from '../../http/is-utf8-json.js';
import { webhookBodyOf } from '../../http/webhook-body-budget.js';
import type { Logger } from '../../logger.js';

// GitHub's event names: `issues`, `pull_request_review_comment`, `security_and_analysis`, …
const EVENT = /^[a-z][a-z0-9_]{0,99}$/;
const DELIVERY_ID = /^[\x21-\x7e]{1,128}$/;

// Strict: bytes that are not UTF-8 are refused, not replaced (GitHub sends UTF-8 only).
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A delivery whose signature matched its bytes, read: what Probot is handed. */
export interface VerifiedWebhook {
  id: string;
  name: string;
  payload: Record<string, unknown>;
  /** The SHA-256 of the signed bytes: a replay under another delivery id repeats it. */
  bodySha256: Buffer;
}

/**
 * Verifies a webhook request — the first step of every provider: the raw bytes against the
 * signature, in constant time, before anything is parsed — and answers what GitHub never sends
 * with a 4xx `{error, code}` (nothing is stored): not JSON by its content type, headers missing
 * or malformed, a body over the cap, a signature that does not match its bytes, bytes that are
 * not UTF-8, JSON that is not an object. Resolves with the delivery, which is then handed to Probot
 * (verified once, here); null when it has answered.
 */
export async function checkWebhookRequest(
  req: Request,
  res: Response,
  { secret, log }: { secret: string; log: Logger },
): Promise<VerifiedWebhook | null> {
  const refuse = (status: number, code: string, message: string) => {
    // The reason only: never the payload, the signature or a header's raw value.
    log.warn({ status, reason: message }, 'github delivery refused');
    sendError(res, status, code, message);
    return null;
  };
  if (!isUtf8Json(req.get('content-type'))) {
    return refuse(415, 'unsupported_media_type', 'a webhook body must be UTF-8 application/json');
  }
  const missing = ['x-github-event', 'x-github-delivery', 'x-hub-signature-256'].filter(
    (name) => req.get(name) === undefined,
  );
  if (missing.length)
    return refuse(400, 'invalid', `required header missing: ${missing.join(', ')}`);
  if (!EVENT.test(req.get('x-github-event')!)) {
    return refuse(400, 'invalid', 'X-GitHub-Event must be the name of a GitHub event');
  }
  if (!DELIVERY_ID.test(req.get('x-github-delivery')!)) {
    return refuse(400, 'invalid', 'X-GitHub-Delivery must be 1 to 128 printable characters');
  }

  // Within the budget of unverified bodies, and the cap however the body is framed (a chunked
  // body has no Content-Length to check).
  const body = webhookBodyOf(res);
  const raw = await body.read();
  // GitHub signs bytes: the HMAC of the very bytes received, computed before anything else is
  // made of them (no text, no copy), so that a body that fails costs no more than its bytes.
  if (!signatureMatches(secret, raw, req.get('x-hub-signature-256')!)) {
    body.failed();
    return refuse(
      400,
      'invalid',
      'signature does not match: X-Hub-Signature-256 must be the HMAC of the body under WEBHOOK_SECRET',
    );
  }
  body.verified();
  // GitHub sends UTF-8 only: bytes that are not are refused by name, never decoded with U+FFFD.
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    return refuse(400, 'invalid', 'the body is not valid UTF-8');
  }
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    return refuse(400, 'invalid', 'the body is not valid JSON');
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    return refuse(400, 'invalid', 'the payload is not a JSON object');
  }
  return {
    id: req.get('x-github-delivery')!,
    name: req.get('x-github-event')!,
    payload: payload as Record<string, unknown>,
    bodySha256: createHash('sha256').update(raw).digest(),
  };
}

/** `sha256=<hex>` of the bytes under the secret, compared in constant time (as @octokit/webhooks-methods does, on bytes). */
function signatureMatches(secret: string, raw: Buffer, signature: string): boolean {
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`);
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
