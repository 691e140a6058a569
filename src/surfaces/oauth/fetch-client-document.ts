import { OAuthClientMetadataSchema } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { OAuthClientMetadata } from '../../data/index.js';
import type { Outbound } from '../../platform/egress/create-egress.js';
import { checkClientMetadata } from './check-client-metadata.js';

/** A metadata document is a few hundred bytes; the draft asks servers to cap it (5 KB). */
export const MAX_DOCUMENT_BYTES = 5 * 1024;
const TIMEOUT_MS = 5000;

/** A client id that is a URL the client's metadata document is served at (MCP 2025-11-25). */
export function isClientDocumentUrl(clientId: string): boolean {
  if (!clientId.startsWith('https://') || clientId.length > 2048) return false;
  try {
    const url = new URL(clientId);
    return url.pathname !== '/' && url.hash === '' && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}

/**
 * Reads a client ID metadata document through the outbound module (https to public addresses
 * only, no redirect followed) and checks it: its `client_id` must be the URL it came from, and
 * the rest must be what a registration would accept. Throws, saying why, otherwise.
 */
export async function fetchClientDocument(
  outbound: Outbound,
  url: string,
): Promise<OAuthClientMetadata> {
  const answer = await outbound.request(url, {
    headers: { accept: 'application/json' },
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  if (answer.status !== 200)
    throw new Error(`its URL answered ${answer.status} (redirects are not followed)`);
  if (Buffer.byteLength(answer.body) > MAX_DOCUMENT_BYTES)
    throw new Error(`it is larger than ${MAX_DOCUMENT_BYTES} bytes`);
  let json: unknown;
  try {
    json = JSON.parse(answer.body);
  } catch {
    throw new Error('it is not JSON');
  }
  const clientId = (json as { client_id?: unknown } | null)?.client_id;
  if (clientId !== url) throw new Error('its client_id is not the URL it was fetched from');
  const parsed = OAuthClientMetadataSchema.safeParse(json);
  if (!parsed.success)
    throw new Error(`it is not client metadata: ${parsed.error.issues[0]?.message}`);
  return checkClientMetadata(parsed.data);
}
