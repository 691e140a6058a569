import type { RequestHandler, Response } from 'express';
import { clientAddressOf } from './client-address.js';
import type { FailureLimiter } from './failure-limiter.js';
import { sendError } from './http-error.js';
import { readRawBody } from './read-raw-body.js';

/** GitHub caps webhook payloads at 25 MB; no provider sends more, so nothing larger is a delivery. */
export const WEBHOOK_MAX_BYTES = 25 * 1024 * 1024;
/** What a webhook refused for want of room is told to wait: a held body is read or timed out by then. */
const BUSY_RETRY_SECONDS = 5;

export interface WebhookBodyBudget {
  /**
   * Mounted before every webhook route: refuses, before a byte of the body is read, a body
   * declared over the cap (413), a client address over its failed-signature limit (429), and a
   * body there is no room for (503); otherwise reserves its bytes until it is verified or answered.
   */
  admit: RequestHandler;
  /** Bytes reserved now by bodies not yet verified. */
  reservedBytes(): number;
}

/** A webhook body admitted within the budget, for its route to read and verify. */
export interface AdmittedBody {
  /** Reads the raw bytes (body-parser's errors, e.g. `entity.too.large`, reject it). */
  read(): Promise<Buffer>;
  /** The signature matched: the bytes are no longer unverified, and leave the budget. */
  verified(): void;
  /**
   * Read and not verified (its signature did not match): one failure of the client's address,
   * counted before the refusal is sent (so that its next delivery meets the count); never throws.
   */
  failed(): Promise<void>;
}

/**
 * Webhook bodies are unauthenticated until their signature is checked, and it covers every byte:
 * they must be read whole first. Their bytes are bounded across all requests: each one reserves
 * what it declares (or, chunked, the cap) before it is read, and gives it back when it is verified
 * or answered. Ten 24 MB bodies with bad signatures, sent at once, raised the server from 145 MB
 * to 434 MB: now what does not fit waits its turn (503, Retry-After). A client address that keeps
 * sending bad signatures is refused (429) before its bodies are read at all.
 */
export function createWebhookBodyBudget({
  budgetBytes,
  failures,
}: {
  budgetBytes: number;
  failures: FailureLimiter;
}): WebhookBodyBudget {
  const maxBytes = Math.min(WEBHOOK_MAX_BYTES, budgetBytes);
  let reserved = 0;

  const admit: RequestHandler = (req, res, next) => {
    const declared = req.get('content-length');
    if (Number(declared ?? 0) > maxBytes) {
      return sendError(
        res,
        413,
        'too_large',
        `webhook payload is larger than ${megabytes(maxBytes)} (the most any provider sends)`,
      );
    }
    const address = clientAddressOf(req);
    const wait = failures.retryAfter(`signature:${address}`);
    if (wait !== undefined) {
      res.set('retry-after', String(wait));
      return sendError(
        res,
        429,
        'too_many_failures',
        `${failures.limit} deliveries from your address failed their signature check within ${failures.windowMs / 60_000} minutes: ` +
          `its deliveries are refused unread for ${wait} s (SWITCHBOARD_AUTH_FAILURE_LIMIT)`,
      );
    }
    // Chunked, a body says its size only as it arrives: it may take the cap.
    const bytes = declared === undefined ? maxBytes : Number(declared);
    if (reserved + bytes > budgetBytes) {
      res.set('retry-after', String(BUSY_RETRY_SECONDS));
      return sendError(
        res,
        503,
        'busy',
        `the server holds ${megabytes(budgetBytes)} of webhook bodies not yet verified, the most it takes (SWITCHBOARD_UNVERIFIED_BODY_MB): send it again shortly`,
      );
    }
    reserved += bytes;
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      reserved -= bytes;
    };
    res.once('close', release);
    const admitted: AdmittedBody = {
      read: () => readRawBody(req, maxBytes),
      verified: release,
      // Uncounted when the database does not answer: the delivery is refused all the same.
      failed: () =>
        failures.fail(`signature:${address}`).then(
          () => {},
          () => {},
        ),
    };
    res.locals.webhookBody = admitted;
    next();
  };

  return { admit, reservedBytes: () => reserved };
}

/** The body `admit` let in: its route reads it from here. */
export function webhookBodyOf(res: Response): AdmittedBody {
  const admitted = res.locals.webhookBody as AdmittedBody | undefined;
  if (!admitted) throw new Error('webhook route reached without createWebhookBodyBudget().admit');
  return admitted;
}

function megabytes(bytes: number): string {
  return `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MB`;
}
