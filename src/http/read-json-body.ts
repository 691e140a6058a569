import { isUtf8 } from 'node:buffer';
import express, { type RequestHandler } from 'express';
import { JSON_MAX_DEPTH } from '../ledger/validate.js';
import { HttpError } from './http-error.js';
import { isUtf8Json } from './is-utf8-json.js';

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

const parseJson = express.json({
  limit: API_MAX_BODY_BYTES,
  inflate: false,
  // Refused, not decoded into U+FFFD: what is stored must be what was sent.
  verify: (_req, _res, bytes) => {
    if (!isUtf8(bytes)) throw new HttpError(400, 'invalid', 'request body is not valid UTF-8');
  },
});

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
