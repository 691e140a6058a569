import express, { type Request, type Response } from 'express';
import { isUtf8Json } from '../http/is-utf8-json.js';

/** GitHub caps webhook payloads at 25 MB; nothing larger is a real delivery, from any provider. */
export const WEBHOOK_MAX_BYTES = 25 * 1024 * 1024;

/** A webhook body refused before it was verified: the status and `{error, code}` to answer. */
export interface BodyRefusal {
  status: 400 | 413 | 415;
  code: 'invalid' | 'too_large' | 'unsupported_media_type';
  message: string;
}

// The cap holds however the body is framed (a chunked body has no Content-Length to check);
// nothing is decompressed, so the cap is on what is sent and no bomb is inflated.
const readRaw = express.raw({ type: () => true, limit: WEBHOOK_MAX_BYTES, inflate: false });

/**
 * A webhook's body, as the exact bytes its sender signed — read once, for every provider, before
 * anything is verified or parsed: JSON by its content type (a lenient provider's is checked
 * after authentication instead), not compressed, and within the cap (refused before reading when
 * Content-Length says so, and as the bytes arrive when it does not).
 */
export async function readWebhookBody(
  req: Request,
  res: Response,
  { lenient = false }: { lenient?: boolean | undefined } = {},
): Promise<{ raw: Buffer } | { refused: BodyRefusal }> {
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
  try {
    await new Promise<void>((resolve, reject) =>
      readRaw(req, res, (error?: Error) => (error ? reject(error) : resolve())),
    );
  } catch (error) {
    if ((error as { type?: unknown }).type === 'entity.too.large') {
      return refused(413, 'too_large', 'webhook payload is larger than 25 MB');
    }
    return refused(400, 'invalid', 'the body could not be read');
  }
  return { raw: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0) };
}

const refused = (
  status: BodyRefusal['status'],
  code: BodyRefusal['code'],
  message: string,
): { refused: BodyRefusal } => ({ refused: { status, code, message } });
