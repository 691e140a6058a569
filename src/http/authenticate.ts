import type { RequestHandler, Response } from 'express';
import { actorFor, type Actor } from '../ledger/index.js';
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
    const principal = await tokens.authenticate(match[1]!);
    if (!principal) throw new HttpError(401, 'unauthenticated', 'token is invalid or revoked');
    const client = req.get('x-switchboard-client');
    res.locals.actor = actorFor(principal, client && CLIENTS.has(client) ? client : 'api');
    res.locals.token = match[1]!;
    next();
  };
}

export function actorOf(res: Response): Actor {
  return res.locals.actor as Actor;
}

/** The bearer token the request was authenticated with: streams end when it is revoked. */
export function tokenOf(res: Response): string {
  return res.locals.token as string;
}
