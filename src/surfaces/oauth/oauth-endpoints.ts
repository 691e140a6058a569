/**
 * Every address the authorization server names, built from the server's public URL
 * (SWITCHBOARD_PUBLIC_URL, else the address it listens on) — never from a request's Host
 * header, which whoever sends the request chooses.
 */
export interface OAuthEndpoints {
  issuer: string;
  authorization: string;
  token: string;
  registration: string;
  revocation: string;
  deviceAuthorization: string;
  /** The console page where a human types a device's user code. */
  verification: string;
  /** The resources tokens are bound to (RFC 8707): MCP clients' and the CLI's. */
  mcpResource: string;
  apiResource: string;
  /** Protected-resource metadata (RFC 9728) of each. */
  mcpResourceMetadata: string;
  apiResourceMetadata: string;
}

export const OAUTH_PATHS = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  registration: '/oauth/register',
  revocation: '/oauth/revoke',
  deviceAuthorization: '/oauth/device_authorization',
  verification: '/device',
  consent: '/oauth/consent',
} as const;

export function oauthEndpoints(publicUrl: string): OAuthEndpoints {
  const base = publicUrl.replace(/\/+$/, '');
  const origin = new URL(base).origin;
  const path = new URL(base).pathname.replace(/\/+$/, '');
  return {
    issuer: base,
    authorization: base + OAUTH_PATHS.authorization,
    token: base + OAUTH_PATHS.token,
    registration: base + OAUTH_PATHS.registration,
    revocation: base + OAUTH_PATHS.revocation,
    deviceAuthorization: base + OAUTH_PATHS.deviceAuthorization,
    verification: base + OAUTH_PATHS.verification,
    mcpResource: `${base}/mcp`,
    apiResource: `${base}/api/v1`,
    // RFC 9728 §3.1: the well-known segment goes between the host and the resource's path.
    mcpResourceMetadata: `${origin}/.well-known/oauth-protected-resource${path}/mcp`,
    apiResourceMetadata: `${origin}/.well-known/oauth-protected-resource${path}/api/v1`,
  };
}

/**
 * Whether OAuth may be served at this address: https, or this machine (OAuth 2.1 allows plain
 * http only to loopback; the SDK's router refuses any other issuer, and so do clients).
 */
export function mayServeOAuth(publicUrl: string): boolean {
  const url = new URL(publicUrl);
  return (
    url.protocol === 'https:' ||
    ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname) ||
    /^127\./.test(url.hostname)
  );
}
