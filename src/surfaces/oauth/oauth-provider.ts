import type { OAuthRegisteredClientsStore } from '@modelcontextprotocol/sdk/server/auth/clients.js';
import {
  InvalidClientMetadataError,
  InvalidGrantError,
  InvalidRequestError,
  InvalidTargetError,
  InvalidTokenError,
  UnauthorizedClientError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type {
  AuthorizationParams,
  OAuthServerProvider,
} from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type {
  OAuthClientInformationFull,
  OAuthTokenRevocationRequest,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Response } from 'express';
import type postgres from 'postgres';
import type { TokenCache } from '../../kit/http/token-cache.js';
import {
  CLI_CLIENT_ID,
  codeChallengeFor,
  exchangeCode,
  findOAuthClient,
  issueGrantTokens,
  LedgerError,
  registerOAuthClient,
  requestAuthorization,
  revokeGrantByToken,
  sameResource,
  saveClientDocument,
  useRefreshToken,
  type OAuthClient,
  type Replayed,
} from '../../data/index.js';
import type { Logger } from '../../platform/logger.js';
import type { Outbound } from '../../platform/egress/create-egress.js';
import { checkClientMetadata, ClientMetadataError } from './check-client-metadata.js';
import { fetchClientDocument, isClientDocumentUrl } from './fetch-client-document.js';
import { OAUTH_PATHS, type OAuthEndpoints } from './oauth-endpoints.js';

/** A metadata document is read again after this long (clients change their redirect URIs rarely). */
const DOCUMENT_MAX_AGE_MS = 60 * 60_000;
/** Static tokens do not expire; the SDK's bearer check wants a number all the same. */
const NEVER = Number.MAX_SAFE_INTEGER;

export interface OAuthProviderOptions {
  sql: postgres.Sql;
  tokens: TokenCache;
  outbound: Outbound;
  log: Logger;
  endpoints: OAuthEndpoints;
  /** A grant was revoked here: its sessions in this process end now (others hear the NOTIFY). */
  onGrantRevoked: (grantId: number) => void;
}

/**
 * The MCP SDK's OAuthServerProvider, on switchboard's own tables: the SDK's handlers parse and
 * answer each request; every decision is a ledger function's (src/data/oauth/oauth-grants.ts).
 */
export function createOAuthProvider({
  sql,
  tokens,
  outbound,
  log,
  endpoints,
  onGrantRevoked,
}: OAuthProviderOptions): OAuthServerProvider {
  const clientsStore: OAuthRegisteredClientsStore = {
    async getClient(clientId) {
      const stored = await findOAuthClient(sql, clientId);
      if (!isClientDocumentUrl(clientId)) return stored && asClientInformation(stored);
      if (stored?.fetched_at && Date.now() - stored.fetched_at.getTime() < DOCUMENT_MAX_AGE_MS)
        return asClientInformation(stored);
      try {
        const metadata = await fetchClientDocument(outbound, clientId);
        return asClientInformation(await saveClientDocument(sql, clientId, metadata));
      } catch (error) {
        log.info(
          { client_id: clientId, reason: (error as Error).message },
          'refused a client metadata document',
        );
        return undefined;
      }
    },
    async registerClient(client) {
      let metadata;
      try {
        metadata = checkClientMetadata(client);
      } catch (error) {
        if (error instanceof ClientMetadataError)
          throw new InvalidClientMetadataError(error.message);
        throw error;
      }
      const { client_id } = client as { client_id?: string };
      if (!client_id) throw new Error('the SDK made no client_id');
      const stored = await registerOAuthClient(sql, client_id, metadata);
      log.info({ client_id, client_name: metadata.client_name }, 'registered an OAuth client');
      return asClientInformation(stored);
    },
  };

  /** The resource a client asked for (RFC 8707), which must be the one it may have. */
  const resourceFor = (clientId: string, asked: URL | string | undefined): string => {
    const own = clientId === CLI_CLIENT_ID ? endpoints.apiResource : endpoints.mcpResource;
    if (asked === undefined) return own;
    if (!sameResource(String(asked), own))
      throw new InvalidTargetError(
        `the resource ${String(asked).slice(0, 200)} is not one this client may have a token for: ${own}`,
      );
    return own;
  };

  /**
   * A replayed code or refresh token ended its grant (committed): this process forgets its
   * tokens and ends its sessions now (others hear the NOTIFY), and the request is refused.
   */
  const refuseReplay = (clientId: string, { replayed, reason }: Replayed): never => {
    tokens.clear();
    onGrantRevoked(replayed.id);
    log.warn(
      { client_id: clientId, grant: replayed.id, grant_client_id: replayed.client_id },
      'a code or refresh token was presented again after its use: its grant is revoked',
    );
    throw new InvalidGrantError(reason);
  };

  return {
    clientsStore,

    async authorize(client, params: AuthorizationParams, res: Response) {
      const sent = (res.req.method === 'POST' ? res.req.body : res.req.query) as unknown;
      const id = await refusingLedger(InvalidRequestError, () =>
        requestAuthorization(sql, {
          clientId: client.client_id,
          resource: resourceFor(client.client_id, params.resource),
          redirectUri: params.redirectUri,
          redirectUriSent: (sent as Record<string, unknown>).redirect_uri !== undefined,
          codeChallenge: params.codeChallenge,
          state: params.state,
        }),
      );
      res.redirect(302, `${endpoints.issuer}${OAUTH_PATHS.consent}/${id}`);
    },

    async challengeForAuthorizationCode(client, code) {
      const found = await refusingLedger(InvalidGrantError, () =>
        codeChallengeFor(sql, client.client_id, code),
      );
      if (typeof found !== 'string') return refuseReplay(client.client_id, found);
      return found;
    },

    async exchangeAuthorizationCode(client, code, _verifier, redirectUri, resource) {
      const issued = await refusingLedger(InvalidGrantError, () =>
        sql.begin(async (tx) => {
          const grant = await exchangeCode(tx, {
            clientId: client.client_id,
            code,
            redirectUri,
            resource: resource?.href,
          });
          return 'replayed' in grant ? grant : asTokens(await issueGrantTokens(tx, grant));
        }),
      );
      if ('replayed' in issued) return refuseReplay(client.client_id, issued);
      return issued;
    },

    async exchangeRefreshToken(client, refreshToken, _scopes, resource) {
      const issued = await refusingLedger(InvalidGrantError, () =>
        sql.begin(async (tx) => {
          const grant = await useRefreshToken(tx, {
            clientId: client.client_id,
            refreshToken,
            resource: resource?.href,
          });
          return 'replayed' in grant ? grant : asTokens(await issueGrantTokens(tx, grant));
        }),
      );
      if ('replayed' in issued) return refuseReplay(client.client_id, issued);
      return issued;
    },

    async verifyAccessToken(token): Promise<AuthInfo> {
      const bearer = await tokens.authenticate(token);
      if (!bearer) throw new InvalidTokenError('token is invalid or revoked (or expired)');
      const { grant } = bearer;
      return {
        token,
        clientId: grant?.client_id ?? 'static',
        scopes: [],
        // A static token is good for every resource of this server, until it is revoked.
        expiresAt: grant?.expires_at ? Math.floor(grant.expires_at.getTime() / 1000) : NEVER,
        resource: new URL(grant?.resource ?? endpoints.mcpResource),
        extra: { bearer },
      };
    },

    async revokeToken(client, request: OAuthTokenRevocationRequest) {
      const outcome = await revokeGrantByToken(sql, client.client_id, request.token);
      if (outcome === 'other_client')
        throw new UnauthorizedClientError('the token was not issued to this client');
      if (typeof outcome === 'number') {
        tokens.clear();
        onGrantRevoked(outcome);
        log.info({ client_id: client.client_id, grant: outcome }, 'a client revoked its grant');
      }
    },
  };
}

/** A ledger refusal (bad or used code, …) becomes the OAuth error the endpoint answers with. */
async function refusingLedger<T>(
  OAuthError: new (message: string) => Error,
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof LedgerError) throw new OAuthError(error.message);
    throw error;
  }
}

function asClientInformation(client: OAuthClient): OAuthClientInformationFull {
  return {
    ...client.metadata,
    client_id: client.client_id,
    client_id_issued_at: Math.floor(client.created_at.getTime() / 1000),
  };
}

function asTokens(tokens: {
  access_token: string;
  token_type: string;
  expires_in?: number;
  refresh_token?: string;
}): OAuthTokens {
  return { ...tokens };
}
