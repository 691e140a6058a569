import { Router, type RequestHandler } from 'express';
import type postgres from 'postgres';
import { revokedGrants } from '../../data/oauth/oauth-grants.js';
import { listenForRevocations } from '../../data/principals/listen-for-revocations.js';
import { authenticate } from '../../kit/http/authenticate.js';
import type { FailureLimiter } from '../../kit/http/failure-limiter.js';
import type { TokenCache } from '../../kit/http/token-cache.js';
import type { Logger } from '../../platform/logger.js';
import type { McpEndpoint } from '../mcp/mcp-endpoint.js';
import type { Outbound } from '../../platform/egress/create-egress.js';
import type { RenderPage } from '../../kit/pages/render-page.js';
import type { CookiePolicy } from '../../kit/pages/web-request.js';
import { consentRoutes } from './consent-routes.js';
import { mcpBearerAuth } from './mcp-bearer-auth.js';
import { mayServeOAuth, oauthEndpoints, type OAuthEndpoints } from './oauth-endpoints.js';
import { createOAuthProvider } from './oauth-provider.js';
import { oauthRoutes } from './oauth-routes.js';

export interface OAuthOptions {
  sql: postgres.Sql;
  /** Straight to PostgreSQL (Database.direct): LISTEN does not pass a transaction pooler. */
  direct: postgres.Sql;
  schema: string;
  log: Logger;
  tokens: TokenCache;
  outbound: Outbound;
  /** SWITCHBOARD_PUBLIC_URL; without it, the address the server listens on. */
  publicUrl: string | undefined;
  /** Tests: the SDK's per-address rate limits off. */
  rateLimit?: false;
  /** Failed tokens per client address, counted as the API counts them. */
  authFailures: FailureLimiter;
}

export interface OAuth {
  /** Discovery and the OAuth endpoints, mounted at the top level before the console. */
  routes: Router;
  /** /mcp's authentication: OAuth's bearer check when OAuth is on, else the API's. */
  mcpAuthenticate: RequestHandler;
  /** The console's consent, device and revoke pages (mounted with the console's pages). */
  consentPages: (render: RenderPage, cookies: CookiePolicy) => Router;
  /** The server listens at `url`: OAuth's addresses are built now (from the public URL if set). */
  listening(url: string, mcp: McpEndpoint): Promise<void>;
  close(): Promise<void>;
}

/**
 * switchboard's OAuth 2.1 authorization server for /mcp and the API (README "Signing in with
 * OAuth"). Its addresses come from the public URL, known once the server listens; until then
 * (and when the public URL is plain http to another machine, where OAuth may not be served)
 * every OAuth path is left to the routes after it, and /mcp takes static tokens as before.
 */
export function createOAuth(options: OAuthOptions): OAuth {
  const { sql, schema, log, tokens, outbound } = options;
  let endpoints: OAuthEndpoints | undefined;
  let routes: Router | undefined;
  let bearer: RequestHandler | undefined;
  let mcp: McpEndpoint | undefined;
  let unlisten: (() => Promise<void>) | undefined;
  const plain = authenticate(tokens, options.authFailures);
  const onGrantRevoked = (grantId: number) => mcp?.endGrant(grantId);

  const mounted = Router({ caseSensitive: true });
  mounted.use((req, res, next) => (routes ? routes(req, res, next) : next()));

  return {
    routes: mounted,
    mcpAuthenticate: (req, res, next) => (bearer ?? plain)(req, res, next),
    consentPages: (render, cookies) =>
      consentRoutes({
        sql,
        log,
        tokens,
        render,
        cookies,
        endpoints: () => endpoints,
        onGrantRevoked,
      }),

    async listening(url, endpoint) {
      mcp = endpoint;
      const base = options.publicUrl ?? url;
      if (!mayServeOAuth(base)) {
        log.info(
          { public_url: base },
          'OAuth sign-in is off: it needs an https public URL (SWITCHBOARD_PUBLIC_URL) or a server on this machine; /mcp takes static tokens only',
        );
        return;
      }
      endpoints = oauthEndpoints(base);
      const provider = createOAuthProvider({
        sql,
        tokens,
        outbound,
        log,
        endpoints,
        onGrantRevoked,
      });
      routes = oauthRoutes({ sql, provider, endpoints, rateLimit: options.rateLimit });
      bearer = mcpBearerAuth(provider, endpoints, options.authFailures);
      // A grant revoked by any process (or while this one was not listening) ends its sessions here.
      const endRevoked = async () => {
        const open = endpoint.openGrants();
        if (open.length === 0) return;
        for (const id of await revokedGrants(sql, open)) endpoint.endGrant(id);
      };
      const subscription = await listenForRevocations(
        options.direct,
        schema,
        (payload) => {
          const grant = /^oauth_grants (\d+)$/.exec(payload);
          if (grant) endpoint.endGrant(Number(grant[1]));
        },
        () => {
          endRevoked().catch((error: unknown) =>
            log.warn(
              { err: error },
              'could not check for revoked sign-ins; will at the next revocation',
            ),
          );
        },
      );
      unlisten = () => subscription.unlisten();
    },

    async close() {
      await unlisten?.().catch((error: unknown) => {
        log.debug({ err: error }, 'could not stop listening for revoked sign-ins');
      });
    },
  };
}
