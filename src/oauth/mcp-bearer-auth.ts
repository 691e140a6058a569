import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import type { OAuthTokenVerifier } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { RequestHandler } from 'express';
import { actorOfRequest } from '../http/authenticate.js';
import type { Bearer } from '../ledger/index.js';
import type { OAuthEndpoints } from './oauth-endpoints.js';

/**
 * /mcp's authentication with OAuth on: the SDK's bearer check, whose 401 names the protected
 * resource metadata (`WWW-Authenticate: Bearer resource_metadata="…"`) so that a client knowing
 * only the URL can find where to sign in, and which refuses a token issued for another resource
 * (the CLI's, for the API) or expired. Static tokens pass as before. The grant a token was issued
 * under goes with the request (`res.locals.grantId`): the session it opens ends with the grant.
 */
export function mcpBearerAuth(
  verifier: OAuthTokenVerifier,
  endpoints: OAuthEndpoints,
): RequestHandler {
  const check = requireBearerAuth({
    verifier,
    resourceMetadataUrl: endpoints.mcpResourceMetadata,
    expectedResource: new URL(endpoints.mcpResource),
  });
  return (req, res, next) =>
    check(req, res, (error?: unknown) => {
      if (error) return next(error);
      const bearer = req.auth?.extra?.bearer as Bearer;
      res.locals.actor = actorOfRequest(req, bearer.principal);
      // Its notification stream ends when this token is revoked (src/http/revocation-watch.ts).
      res.locals.token = req.auth!.token;
      res.locals.grantId = bearer.grant?.id;
      next();
    });
}
