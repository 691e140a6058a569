import { createApiClient } from '../client/api-client.js';
import { ApiError, CertificateError, ConnectionError } from '../client/client-errors.js';

export interface TokenOwner {
  name: string;
  kind: string;
}

/** How long start-up may take to learn whose token it holds: Claude Code waits meanwhile. */
const TIMEOUT_MS = 5000;

export type TokenIdentity =
  | { owner: TokenOwner }
  /** The server refused it (401, 403): it would be refused all session. */
  | { refused: { status: number; reason: string } }
  /** The server could not say (unreachable, or not answering as switchboard does). */
  | { unknown: string };

/**
 * Whose token the channel was given, asked of the server before the MCP handshake: a token it
 * refuses would be refused all session while `claude mcp list` showed the channel connected,
 * so the channel must not start. A server that cannot be reached now is no reason not to
 * start — it may come later — so then the owner is unknown, and why is said.
 */
export async function identifyToken(url: string, token: string): Promise<TokenIdentity> {
  const base = url.replace(/\/+$/, '');
  const api = createApiClient({ url, token }, { client: 'channel', timeoutMs: TIMEOUT_MS });
  try {
    const { principal } = await api.whoami();
    if (principal) return { owner: principal };
    return { unknown: `${base} answered whoami without a principal` };
  } catch (error) {
    if (error instanceof ConnectionError || error instanceof CertificateError)
      return { unknown: error.message };
    if (!(error instanceof ApiError))
      return { unknown: `${base} did not answer whoami as switchboard does` };
    if (error.status === 401 || error.status === 403)
      return { refused: { status: error.status, reason: error.message } };
    return { unknown: `${base} answered whoami with HTTP ${error.status}` };
  }
}
