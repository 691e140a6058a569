import type { Request, RequestHandler, Response } from 'express';
import { actorFor, type Actor, type Principal } from '../ledger/index.js';
import { HttpError } from './http-error.js';
import type { TokenCache } from './token-cache.js';

/** Where a request says it comes from; recorded as the `via` of every change it makes. */
const CLIENTS = new Set(['cli', 'mcp', 'channel', 'web', 'api']);

/** Resolves `Authorization: Bearer sbk_…` to the acting principal, or answers 401. */
export function authenticate(tokens: TokenCache): RequestHandler {
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
    if (!bearer) throw new HttpError(401, 'unauthenticated', 'token is invalid or revoked');
    // An OAuth token is bound to its resource (RFC 8707): a client's for /mcp is no API token.
    if (bearer.grant && !bearer.grant.resource.endsWith('/api/v1'))
      throw new HttpError(401, 'unauthenticated', 'this token was issued for /mcp, not the API');
    res.locals.actor = actorOfRequest(req, bearer.principal);
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
