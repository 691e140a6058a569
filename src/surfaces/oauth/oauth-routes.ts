import { authorizationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/authorize.js';
import { metadataHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/metadata.js';
import { clientRegistrationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/register.js';
import { revocationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/revoke.js';
import { tokenHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/token.js';
import type { OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type {
  OAuthMetadata,
  OAuthProtectedResourceMetadata,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import express, { Router, type ErrorRequestHandler } from 'express';
import type { Options as RateLimitOptions } from 'express-rate-limit';
import type postgres from 'postgres';
import { deviceRoutes } from './device-routes.js';
import { OAUTH_PATHS, type OAuthEndpoints } from './oauth-endpoints.js';

export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** A registration is a few hundred bytes; anything near this is not one (RFC 7591 sets no cap). */
export const MAX_REGISTRATION_BYTES = 16 * 1024;
const MAX_FORM_BYTES = 16 * 1024;

export interface OAuthRoutesOptions {
  sql: postgres.Sql;
  provider: OAuthServerProvider;
  endpoints: OAuthEndpoints;
  /** Tests: the SDK's per-address rate limits off (its defaults otherwise). */
  rateLimit?: false;
}

/**
 * The authorization server's endpoints (README "Signing in with OAuth"): discovery, the MCP SDK's
 * handlers for registration, authorization, tokens and revocation over switchboard's provider,
 * and the device flow (RFC 8628), which the SDK has no handler for. Bodies are read here first,
 * capped, so that an oversized or malformed one is an OAuth error, not a generic one.
 */
export function oauthRoutes({ sql, provider, endpoints, rateLimit }: OAuthRoutesOptions): Router {
  // The SDK's limits key on req.ip, as switchboard's own do (src/kit/http/client-address.ts). Their
  // library's configuration checks are off: they print to the console, a stack trace outside the
  // log, for a request any client can send (X-Forwarded-For, Forwarded); the server says what it
  // needs to in its log (src/kit/http/untrusted-proxy-warning.ts).
  const limits =
    rateLimit === false
      ? { rateLimit: false as const }
      : { rateLimit: { validate: false } satisfies Partial<RateLimitOptions> };
  const routes = Router({ caseSensitive: true });

  const metadata: OAuthMetadata = {
    issuer: endpoints.issuer,
    authorization_endpoint: endpoints.authorization,
    token_endpoint: endpoints.token,
    registration_endpoint: endpoints.registration,
    revocation_endpoint: endpoints.revocation,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token', DEVICE_CODE_GRANT],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    client_id_metadata_document_supported: true,
    device_authorization_endpoint: endpoints.deviceAuthorization,
    authorization_response_iss_parameter_supported: true,
  };
  const resource = (url: string, name: string): OAuthProtectedResourceMetadata => ({
    resource: url,
    authorization_servers: [endpoints.issuer],
    bearer_methods_supported: ['header'],
    resource_name: name,
  });
  const issuerPath = new URL(endpoints.issuer).pathname.replace(/\/+$/, '');
  routes.use(
    `/.well-known/oauth-authorization-server${issuerPath}`,
    exactly(metadataHandler(metadata)),
  );
  const mcp = metadataHandler(resource(endpoints.mcpResource, 'switchboard MCP'));
  routes.use(new URL(endpoints.mcpResourceMetadata).pathname, exactly(mcp));
  // Clients that ask at the root (RFC 9728 §3 for a resource without a path) are told of /mcp.
  routes.use('/.well-known/oauth-protected-resource', exactly(mcp));
  routes.use(
    new URL(endpoints.apiResourceMetadata).pathname,
    exactly(metadataHandler(resource(endpoints.apiResource, 'switchboard API'))),
  );

  const form = express.urlencoded({ extended: false, limit: MAX_FORM_BYTES, parameterLimit: 50 });
  routes.use(
    OAUTH_PATHS.registration,
    express.json({ limit: MAX_REGISTRATION_BYTES }),
    clientRegistrationHandler({
      clientsStore: provider.clientsStore,
      // Public clients get no secret, so nothing of theirs expires.
      clientSecretExpirySeconds: 0,
      ...limits,
    }),
  );
  routes.use(
    OAUTH_PATHS.authorization,
    form,
    keepState,
    authorizationHandler({ provider, ...limits }),
  );
  routes.use(OAUTH_PATHS.token, form, deviceRoutes.tokenGrant({ sql, provider }));
  routes.use(OAUTH_PATHS.token, tokenHandler({ provider, ...limits }));
  routes.use(OAUTH_PATHS.revocation, form, revocationHandler({ provider, ...limits }));
  routes.use(
    OAUTH_PATHS.deviceAuthorization,
    form,
    deviceRoutes.authorization({ sql, provider, endpoints }),
  );
  routes.use(['/.well-known', '/oauth'], bodyErrorsAsOAuth);
  return routes;
}

/**
 * RFC 6749 §4.1.2.1: an error sent back to the client carries the request's `state`. The SDK's
 * authorization handler leaves it out when the request's other parameters did not parse (a
 * missing or `plain` PKCE method): it is put back here, so the client can match the refusal.
 */
const keepState: express.RequestHandler = (req, res, next) => {
  const state = ((req.method === 'POST' ? req.body : req.query) as Record<string, unknown>)?.state;
  if (typeof state !== 'string') return next();
  const redirect = res.redirect.bind(res) as (status: number, url: string) => void;
  res.redirect = (status: number | string, url?: string) => {
    if (typeof status === 'string') [status, url] = [302, status];
    const target = new URL(url!);
    if (target.searchParams.has('error') && !target.searchParams.has('state'))
      target.searchParams.set('state', state);
    redirect(status, target.href);
  };
  next();
};

/** A metadata document answers at its own path only (router.use would also match below it). */
function exactly(handler: express.RequestHandler): express.RequestHandler {
  return (req, res, next) => (req.path === '/' ? handler(req, res, next) : next());
}

/** body-parser's refusals, as OAuth errors (RFC 6749 §5.2, RFC 7591 §3.2.2). */
const bodyErrorsAsOAuth: ErrorRequestHandler = (error, req, res, next) => {
  const type = (error as { type?: unknown }).type;
  if (typeof type !== 'string' || res.headersSent) return next(error);
  const registration = req.originalUrl.startsWith(OAUTH_PATHS.registration);
  const code = registration ? 'invalid_client_metadata' : 'invalid_request';
  const [status, description] =
    type === 'entity.too.large'
      ? [
          413,
          `the request body is larger than ${(registration ? MAX_REGISTRATION_BYTES : MAX_FORM_BYTES) / 1024} KB`,
        ]
      : type === 'entity.parse.failed'
        ? [400, 'the request body is not valid JSON']
        : type === 'parameters.too.many'
          ? [413, 'the request has too many parameters']
          : [400, 'the request body could not be read (it must be UTF-8)'];
  res
    .status(status)
    .set('cache-control', 'no-store')
    .json({ error: code, error_description: description });
};
