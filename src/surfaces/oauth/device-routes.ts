import type { OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { RequestHandler, Response } from 'express';
import type postgres from 'postgres';
import {
  CLI_CLIENT_ID,
  DEVICE_POLL_SECONDS,
  exchangeDeviceCode,
  issueGrantTokens,
  LedgerError,
  requestDeviceAuthorization,
  sameResource,
} from '../../data/index.js';
import type { OAuthEndpoints } from './oauth-endpoints.js';

const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/**
 * The device authorization grant (RFC 8628), for `switchboard login` in a terminal with no
 * browser: the CLI gets a device code and a user code, its human types the user code into the
 * console (/device) and answers the consent page, and the CLI's polls of the token endpoint get
 * the token. The MCP SDK has no handler for it; only switchboard's CLI may use it.
 */
export const deviceRoutes = {
  /** POST /oauth/device_authorization (RFC 8628 §3.1). */
  authorization({
    sql,
    provider,
    endpoints,
  }: {
    sql: postgres.Sql;
    provider: OAuthServerProvider;
    endpoints: OAuthEndpoints;
  }): RequestHandler {
    return async (req, res) => {
      res.set('cache-control', 'no-store');
      if (req.method !== 'POST')
        return refuse(res, 405, 'invalid_request', 'the device authorization endpoint takes POST');
      const body = (req.body ?? {}) as Record<string, unknown>;
      const clientId = body.client_id;
      if (typeof clientId !== 'string' || !(await provider.clientsStore.getClient(clientId)))
        return refuse(res, 401, 'invalid_client', 'unknown client_id');
      if (clientId !== CLI_CLIENT_ID)
        return refuse(
          res,
          400,
          'unauthorized_client',
          'only switchboard’s CLI may use the device flow',
        );
      const resource = body.resource;
      if (
        resource !== undefined &&
        (typeof resource !== 'string' || !sameResource(resource, endpoints.apiResource))
      )
        return refuse(res, 400, 'invalid_target', `the CLI’s resource is ${endpoints.apiResource}`);
      const { deviceCode, userCode, expiresIn } = await requestDeviceAuthorization(sql, {
        clientId,
        resource: endpoints.apiResource,
      });
      const typed = `${userCode.slice(0, 4)}-${userCode.slice(4)}`;
      res.json({
        device_code: deviceCode,
        user_code: typed,
        verification_uri: endpoints.verification,
        verification_uri_complete: `${endpoints.verification}?user_code=${typed}`,
        expires_in: expiresIn,
        interval: DEVICE_POLL_SECONDS,
      });
    };
  },

  /** The device code grant at the token endpoint (RFC 8628 §3.4); other grants go on to the SDK. */
  tokenGrant({
    sql,
    provider,
  }: {
    sql: postgres.Sql;
    provider: OAuthServerProvider;
  }): RequestHandler {
    return async (req, res, next) => {
      const body = (req.body ?? {}) as Record<string, unknown>;
      if (req.method !== 'POST' || body.grant_type !== DEVICE_CODE_GRANT) return next();
      res.set('cache-control', 'no-store');
      const { client_id: clientId, device_code: deviceCode } = body;
      if (typeof clientId !== 'string' || !(await provider.clientsStore.getClient(clientId)))
        return refuse(res, 401, 'invalid_client', 'unknown client_id');
      if (typeof deviceCode !== 'string' || deviceCode.length > 100)
        return refuse(res, 400, 'invalid_request', 'device_code is missing');
      try {
        const tokens = await sql.begin(async (tx) => {
          const outcome = await exchangeDeviceCode(tx, { clientId, deviceCode });
          return typeof outcome === 'string' ? outcome : issueGrantTokens(tx, outcome);
        });
        if (typeof tokens === 'string')
          return refuse(res, 400, tokens, DEVICE_ANSWERS[tokens] ?? tokens);
        res.json(tokens);
      } catch (error) {
        if (!(error instanceof LedgerError)) throw error;
        refuse(res, 400, 'invalid_grant', error.message);
      }
    };
  },
};

const DEVICE_ANSWERS: Record<string, string> = {
  authorization_pending: 'the human has not answered yet',
  slow_down: `poll at most every ${DEVICE_POLL_SECONDS} seconds`,
  access_denied: 'the human said no',
  expired_token: 'the device code expired before the human answered; start again',
};

function refuse(res: Response, status: number, error: string, description: string): void {
  res.status(status).json({ error, error_description: description });
}
