import type { ErrorRequestHandler, Response } from 'express';
import { ZodError } from 'zod';
import { isDatabaseUnavailable } from '../../platform/db/is-database-unavailable.js';
import { LedgerError, type LedgerErrorCode } from '../../data/index.js';
import type { Logger } from '../../platform/logger.js';

/** An HTTP-level refusal that is not the ledger's: authentication, media type, size, routing. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const STATUS: Record<LedgerErrorCode, number> = {
  invalid: 400,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  lease_lost: 409,
};

export function sendError(res: Response, status: number, code: string, message: string): void {
  res.status(status).json({ error: message, code });
}

/** What a client sees of a failure: `{error, code}` with the right status, never a stack or a statement. */
export function createErrorHandler(log: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, next) => {
    if (res.headersSent) return next(error);
    if (error instanceof LedgerError)
      return sendError(res, STATUS[error.code], error.code, error.message);
    if (error instanceof HttpError) return sendError(res, error.status, error.code, error.message);
    if (error instanceof ZodError) {
      const issue = error.issues[0]!;
      const where = issue.path.length ? `${issue.path.join('.')}: ` : '';
      return sendError(res, 400, 'invalid', `${where}${issue.message}`);
    }
    // The router could not percent-decode a path segment (e.g. %ED%A0%80, a lone surrogate).
    if (error instanceof URIError)
      return sendError(res, 400, 'invalid', 'the path is not percent-encoded UTF-8');
    // body-parser's errors carry a `type` and a client status.
    const type = (error as { type?: unknown }).type;
    if (type === 'entity.too.large')
      return sendError(res, 413, 'too_large', 'request body is too large');
    if (type === 'entity.parse.failed')
      return sendError(res, 400, 'invalid', 'request body is not valid JSON');
    if (type === 'entity.verify.failed')
      return sendError(res, 400, 'invalid', 'request body is not valid UTF-8');
    if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
      return sendError(res, 415, 'unsupported_media_type', 'request body must be UTF-8 JSON');
    }
    if (type === 'request.aborted' || type === 'request.size.invalid')
      return sendError(res, 400, 'invalid', 'request body was cut short');
    // Not a bug: PostgreSQL is down, restarting or out of connections. Say so (the client can
    // act on it: wait and retry) without the driver's words, which name hosts and ports.
    if (isDatabaseUnavailable(error)) {
      log.warn(
        { code: (error as { code: string }).code, method: req.method, path: req.path },
        'request failed: the database is not answering',
      );
      res.set('retry-after', '5');
      return sendError(
        res,
        503,
        'database_unavailable',
        'the database is not answering; try again shortly',
      );
    }
    log.error({ err: error, method: req.method, path: req.path }, 'request failed');
    return sendError(res, 500, 'internal', 'internal error; the server log has the details');
  };
}
