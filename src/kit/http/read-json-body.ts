import { isUtf8 } from 'node:buffer';
import { finished } from 'node:stream';
import type { Request, RequestHandler } from 'express';
import { JSON_MAX_DEPTH } from '../../data/validate.js';
import { HttpError } from './http-error.js';
import { isUtf8Json } from './is-utf8-json.js';
import { bodyError, readRawBody } from './read-raw-body.js';

export const API_MAX_BODY_BYTES = 2 * 1024 * 1024;

/**
 * Reads a JSON API request's body into `req.body`, or refuses it with a 4xx `{error, code}`
 * before anything is done with it: over the cap (413, before reading when Content-Length says
 * so), not UTF-8 `application/json` or compressed (415), bytes that are not UTF-8 or not JSON
 * (400), JSON nested deeper than any field may hold (400). A request without a body passes.
 */
export function readJsonBody(): RequestHandler[] {
  return [checkHeaders, parseJson, checkDepth];
}

const checkHeaders: RequestHandler = (req, _res, next) => {
  if (Number(req.get('content-length') ?? 0) > API_MAX_BODY_BYTES) {
    // Answered at once: body-parser would read all the declared bytes before saying no.
    throw new HttpError(413, 'too_large', 'request body is too large (at most 2 MB)');
  }
  const hasBody =
    Number(req.get('content-length') ?? 0) > 0 || req.get('transfer-encoding') !== undefined;
  if (!hasBody) return next();
  if (!isUtf8Json(req.get('content-type'))) {
    throw new HttpError(
      415,
      'unsupported_media_type',
      'request body must be UTF-8 application/json',
    );
  }
  // Like webhooks: no decompression, so the cap is on what is sent and no bomb is inflated.
  const encoding = req.get('content-encoding');
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
    throw new HttpError(415, 'unsupported_media_type', 'request body must not be compressed');
  }
  next();
};

const parseJson = parseJsonBody(API_MAX_BODY_BYTES);

/** Whether the request says it has a body (a length above 0, or chunks). */
function hasBody(req: Request): boolean {
  return (
    Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined
  );
}

const hasByteOrderMark = (bytes: Buffer) =>
  bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;

/**
 * Reads a UTF-8 `application/json` body of at most `limit` bytes into `req.body` (once: the
 * bytes are held in one buffer, src/kit/http/read-raw-body.ts), leaving any other request alone. Its
 * refusals carry body-parser's error types, which every error handler here knows: not UTF-8 bytes
 * (`entity.verify.failed`: refused, not decoded into U+FFFD — what is stored must be what was
 * sent), not JSON or not an object or array at the top (`entity.parse.failed`), another charset
 * (`charset.unsupported`), over the limit, compressed or cut short (readRawBody's).
 */
export function parseJsonBody(limit: number): RequestHandler {
  return (req, _res, next) => {
    if (req.body !== undefined || !hasBody(req)) return next();
    if (!isUtf8Json(req.headers['content-type'])) {
      if (!req.is('application/json')) return next();
      return next(bodyError(415, 'charset.unsupported', 'the body must be UTF-8 JSON'));
    }
    readRawBody(req, limit).then(
      (bytes) => {
        if (!isUtf8(bytes))
          return next(bodyError(400, 'entity.verify.failed', 'the body is not UTF-8'));
        if (bytes.length === 0) {
          req.body = {};
          return next();
        }
        let body: unknown;
        try {
          // A byte order mark is no part of the text (body-parser's decoding dropped it too).
          body = JSON.parse(bytes.toString('utf8', hasByteOrderMark(bytes) ? 3 : 0));
        } catch {
          return next(bodyError(400, 'entity.parse.failed', 'the body is not valid JSON'));
        }
        if (typeof body !== 'object' || body === null)
          return next(
            bodyError(400, 'entity.parse.failed', 'the body is not a JSON object or array'),
          );
        req.body = body;
        next();
      },
      (error: unknown) => {
        // As body-parser does: what is left of a refused body is read and dropped before the
        // answer, which a client still sending would otherwise never get to read.
        finished(req, () => next(error));
        req.resume();
      },
    );
  };
}

/**
 * The body itself is one level; a field (a result) holds at most JSON_MAX_DEPTH more, which the
 * ledger checks again. Refused here, without recursion, so that no schema walks 500,000 levels.
 */
const checkDepth: RequestHandler = (req, _res, next) => {
  const stack: [unknown, number][] = [[req.body, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    if (depth > JSON_MAX_DEPTH + 1) {
      throw new HttpError(
        400,
        'invalid',
        `request body is nested too deeply (a field holds at most ${JSON_MAX_DEPTH} levels)`,
      );
    }
    for (const inner of Object.values(value)) stack.push([inner, depth + 1]);
  }
  next();
};
