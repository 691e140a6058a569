import type { OAuthClientMetadata as SdkClientMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { OAuthClientMetadata } from '../../data/index.js';

const MAX_REDIRECT_URIS = 10;
const MAX_URI_LENGTH = 2000;
const MAX_NAME_LENGTH = 200;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);
const BROWSER_SCHEMES = new Set(
  [
    'javascript',
    'data',
    'vbscript',
    'file',
    'blob',
    'about',
    'ftp',
    'ws',
    'wss',
    'mailto',
    'tel',
    'chrome',
    'view-source',
    'filesystem',
  ].map((s) => `${s}:`),
);

/** A client's metadata is refused, saying why (the caller answers `invalid_client_metadata`). */
export class ClientMetadataError extends Error {
  override readonly name = 'ClientMetadataError';
}

/**
 * What switchboard keeps of a client's metadata (a registration, or a metadata document), and
 * the rules it holds. Redirects go only to https, to this machine over http (RFC 8252 §7.3), or
 * to an app's own scheme (§7.1), never with a fragment. Every client is made public (PKCE is its
 * proof; no secret is issued or stored) and uses the authorization code with refresh tokens,
 * whatever it asked for: RFC 7591 §3.2.1 lets the server put its own values in the answer, which
 * the client then follows.
 */
export function checkClientMetadata(metadata: SdkClientMetadata): OAuthClientMetadata {
  const uris = metadata.redirect_uris;
  if (uris.length === 0) throw new ClientMetadataError('redirect_uris is empty');
  if (uris.length > MAX_REDIRECT_URIS)
    throw new ClientMetadataError(`more than ${MAX_REDIRECT_URIS} redirect_uris`);
  for (const uri of uris) {
    const why = redirectUriRefusal(uri);
    if (why)
      throw new ClientMetadataError(`redirect_uri ${JSON.stringify(uri.slice(0, 100))} ${why}`);
  }
  const name = metadata.client_name;
  // eslint-disable-next-line no-control-regex -- control characters are what is refused
  if (name !== undefined && (name.length > MAX_NAME_LENGTH || /[\u0000-\u001f\u007f]/.test(name)))
    throw new ClientMetadataError(
      `client_name is longer than ${MAX_NAME_LENGTH} characters or holds control characters`,
    );
  const clientUri = metadata.client_uri;
  if (
    clientUri !== undefined &&
    (clientUri.length > MAX_URI_LENGTH || !/^https:\/\//.test(clientUri))
  )
    throw new ClientMetadataError('client_uri must be an https URL');
  return {
    redirect_uris: uris,
    ...(name !== undefined && { client_name: name }),
    ...(clientUri !== undefined && { client_uri: clientUri }),
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    ...(metadata.scope !== undefined && { scope: metadata.scope.slice(0, 1000) }),
    ...(metadata.software_id !== undefined && { software_id: metadata.software_id.slice(0, 200) }),
    ...(metadata.software_version !== undefined && {
      software_version: metadata.software_version.slice(0, 200),
    }),
  };
}

function redirectUriRefusal(uri: string): string | null {
  if (uri.length > MAX_URI_LENGTH) return `is longer than ${MAX_URI_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'is not a URL';
  }
  if (url.hash !== '' || uri.includes('#')) return 'has a fragment';
  if (url.username || url.password) return 'holds credentials';
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:')
    return LOOPBACK.has(url.hostname) ? null : 'is plain http to another machine (use https)';
  // An app's own scheme (RFC 8252 §7.1: `com.example.app:`, `cursor:`), but none a browser
  // would run, show or send elsewhere itself.
  if (!BROWSER_SCHEMES.has(url.protocol)) return null;
  return `uses the scheme ${url.protocol}, which is not https, loopback http, or an app's own`;
}
