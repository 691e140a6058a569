import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { HttpError } from './http-error.js';
import type { TokenCache } from './token-cache.js';

/**
 * `/metrics` tells queue and source names and how much waits where: it asks for a bearer token,
 * SWITCHBOARD_METRICS_TOKEN (what Prometheus' `authorization` setting sends; compared in constant
 * time, and in memory, so that a scrape still works while the database is down) or an admin's.
 */
export function metricsAccess(
  tokens: TokenCache,
  metricsToken: string | undefined,
): RequestHandler {
  const expected = metricsToken === undefined ? undefined : digest(metricsToken);
  return async (req, res, next) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '');
    const refuse = () => {
      res.set('www-authenticate', 'Bearer realm="switchboard metrics"');
      return new HttpError(
        401,
        'unauthenticated',
        'metrics need a bearer token: SWITCHBOARD_METRICS_TOKEN, or an admin’s token',
      );
    };
    if (!match) throw refuse();
    const token = match[1]!;
    // Hashing first makes the comparison as long whatever the length of what was sent.
    if (expected && timingSafeEqual(digest(token), expected)) return next();
    const bearer = await tokens.authenticate(token);
    if (!bearer) throw refuse();
    const { principal } = bearer;
    if (principal.kind !== 'human' || !principal.is_admin)
      throw new HttpError(403, 'forbidden', 'only an admin’s token reads metrics');
    next();
  };
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}
