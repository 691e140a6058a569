import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import type { OAuthTokenVerifier } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { Request, RequestHandler, Response } from 'express';
import { actorOfRequest } from '../../kit/http/authenticate.js';
import { clientAddressOf } from '../../kit/http/client-address.js';
import type { FailureLimiter } from '../../kit/http/failure-limiter.js';
import type { Bearer } from '../../data/index.js';
import type { OAuthEndpoints } from './oauth-endpoints.js';

/**
 * /mcp's authentication with OAuth on: the SDK's bearer check, whose 401 names the protected
 * resource metadata (`WWW-Authenticate: Bearer resource_metadata="…"`) so that a client knowing
 * only the URL can find where to sign in, and which refuses a token issued for another resource
 * (the CLI's, for the API) or expired. Static tokens pass as before. The grant a token was issued
 * under goes with the request (`res.locals.grantId`): the session it opens ends with the grant.
 *
 * A token that fails counts against its client's address as on the API (src/kit/http/authenticate.ts);
 * once the address is over the limit, a failing token is answered 429 with Retry-After, and a
 * valid one is still accepted.
 */
export function mcpBearerAuth(
  verifier: OAuthTokenVerifier,
  endpoints: OAuthEndpoints,
  failures: FailureLimiter,
): RequestHandler {
  const options = {
    resourceMetadataUrl: endpoints.mcpResourceMetadata,
    expectedResource: new URL(endpoints.mcpResource),
  };
  /**
   * A failed token counts against its address; one that takes the address over the limit has
   * the SDK's 401 turned into the API's 429. (Only a failure is counted: a valid token costs
   * nothing here.)
   */
  const countFailure = async (req: Request, res: Response) => {
    const wait = await failures.fail(`token:${clientAddressOf(req)}`);
    if (wait === undefined) return;
    const json = res.json.bind(res);
    res.json = (body: unknown) => {
      if (res.statusCode !== 401) return json(body);
      res.status(429).set('retry-after', String(wait));
      return json({
        jsonrpc: '2.0',
        error: {
          code: -32001,
          message: `token is invalid or revoked, and more than ${failures.limit} tokens sent from your address failed within ${failures.windowMs / 60_000} minutes: wait ${wait} s before sending another (SWITCHBOARD_AUTH_FAILURE_LIMIT; a valid token is always accepted)`,
        },
        id: null,
      });
    };
  };
  return async (req, res, next) => {
    const counting: OAuthTokenVerifier = {
      async verifyAccessToken(token) {
        try {
          return await verifier.verifyAccessToken(token);
        } catch (error) {
          if (error instanceof InvalidTokenError) await countFailure(req, res);
          throw error;
        }
      },
    };
    const check = requireBearerAuth({ verifier: counting, ...options });
    await check(req, res, (error?: unknown) => {
      if (error) return next(error);
      const bearer = req.auth?.extra?.bearer as Bearer;
      res.locals.actor = actorOfRequest(req, bearer.principal);
      // Its notification stream ends when this token is revoked (src/kit/http/revocation-watch.ts).
      res.locals.token = req.auth!.token;
      res.locals.grantId = bearer.grant?.id;
      next();
    });
  };
}
