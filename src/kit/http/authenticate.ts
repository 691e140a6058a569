import type { Request, RequestHandler, Response } from 'express';
import { actorFor, type Actor, type Principal } from '../../data/index.js';
import { clientAddressOf } from './client-address.js';
import type { FailureLimiter } from './failure-limiter.js';
import { HttpError } from './http-error.js';
import type { TokenCache } from './token-cache.js';

/** Where a request says it comes from; recorded as the `via` of every change it makes. */
const CLIENTS = new Set(['cli', 'mcp', 'channel', 'web', 'api']);

/**
 * Resolves `Authorization: Bearer sbk_…` to the acting principal, or answers 401. A token that
 * fails counts against its client's address (`failures`); over the limit the refusal is 429 with
 * Retry-After. A valid token is always accepted, whatever others at its address sent: a revoked
 * token one agent keeps retrying must not shut out the agents beside it.
 */
export function authenticate(tokens: TokenCache, failures: FailureLimiter): RequestHandler {
  return async (req, res, next) => {
    const header = req.get('authorization');
    const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) {
      throw new HttpError(
        401,
        'unauthenticated',
        'missing bearer token: send Authorization: Bearer sbk_…',
      );
    }
    const bearer = await tokens.authenticate(match[1]!);
    if (!bearer) {
      const wait = await failures.fail(`token:${clientAddressOf(req)}`);
      if (wait === undefined)
        throw new HttpError(401, 'unauthenticated', 'token is invalid or revoked');
      res.set('retry-after', String(wait));
      throw new HttpError(
        429,
        'too_many_failures',
        `token is invalid or revoked, and more than ${failures.limit} tokens sent from your address failed within ${failures.windowMs / 60_000} minutes: ` +
          `wait ${wait} s before sending another (SWITCHBOARD_AUTH_FAILURE_LIMIT; a valid token is always accepted)`,
      );
    }
    // An OAuth token is bound to its resource (RFC 8707): a client's for /mcp is no API token.
    if (bearer.grant && !bearer.grant.resource.endsWith('/api/v1'))
      throw new HttpError(401, 'unauthenticated', 'this token was issued for /mcp, not the API');
    res.locals.actor = actorOfRequest(req, bearer.principal);
    res.locals.token = match[1]!;
    next();
  };
}

/** The principal as the acting actor, `via` what the request says it comes from. */
export function actorOfRequest(req: Request, principal: Principal): Actor {
  const client = req.get('x-switchboard-client');
  return actorFor(principal, client && CLIENTS.has(client) ? client : 'api');
}

export function actorOf(res: Response): Actor {
  return res.locals.actor as Actor;
}

/** The bearer token the request was authenticated with: streams end when it is revoked. */
export function tokenOf(res: Response): string {
  return res.locals.token as string;
}
