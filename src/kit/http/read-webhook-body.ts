import type { Request, Response } from 'express';
import { isUtf8Json } from './is-utf8-json.js';
import { WEBHOOK_MAX_BYTES, webhookBodyOf, type AdmittedBody } from './webhook-body-budget.js';

/** A webhook body refused before it was verified: the status and `{error, code}` to answer. */
export interface BodyRefusal {
  status: 400 | 413 | 415;
  code: 'invalid' | 'too_large' | 'unsupported_media_type';
  message: string;
}

/**
 * A webhook's body, as the exact bytes its sender signed — read once, for every provider, before
 * anything is verified or parsed: JSON by its content type (a lenient provider's is checked
 * after authentication instead), not compressed, and within the cap (refused before reading when
 * Content-Length says so, and as the bytes arrive when it does not). It was admitted within the
 * budget of unverified bodies (src/kit/http/webhook-body-budget.ts): the caller says whether it
 * verified (`body.verified()`, it leaves the budget) or failed (`body.failed()`, one failure of
 * the client's address).
 */
export async function readWebhookBody(
  req: Request,
  res: Response,
  { lenient = false }: { lenient?: boolean | undefined } = {},
): Promise<{ raw: Buffer; body: AdmittedBody } | { refused: BodyRefusal }> {
  if (!lenient && !isUtf8Json(req.get('content-type'))) {
    return refused(
      415,
      'unsupported_media_type',
      "a webhook body must be UTF-8 application/json (set the webhook's content type to JSON)",
    );
  }
  const encoding = req.get('content-encoding');
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
    return refused(415, 'unsupported_media_type', 'a webhook body must not be compressed');
  }
  if (Number(req.get('content-length') ?? 0) > WEBHOOK_MAX_BYTES) {
    return refused(413, 'too_large', 'webhook payload is larger than 25 MB');
  }
  const body = webhookBodyOf(res);
  let raw: Buffer;
  try {
    // The cap holds however the body is framed (a chunked body has no Content-Length to check).
    raw = await body.read();
  } catch (error) {
    if ((error as { type?: unknown }).type === 'entity.too.large') {
      return refused(413, 'too_large', 'webhook payload is larger than 25 MB');
    }
    return refused(400, 'invalid', 'the body could not be read');
  }
  return { raw, body };
}

const refused = (
  status: BodyRefusal['status'],
  code: BodyRefusal['code'],
  message: string,
): { refused: BodyRefusal } => ({ refused: { status, code, message } });
