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
  let response: Response;
  try {
    response = await fetch(`${base}/api/v1/whoami`, {
      headers: { authorization: `Bearer ${token}`, 'x-switchboard-client': 'channel' },
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: unknown } }).cause?.code;
    const why = (error as Error).name === 'TimeoutError' ? 'no answer in 5 s' : cause;
    return { unknown: `cannot reach ${base}${typeof why === 'string' ? ` (${why})` : ''}` };
  }
  const json = (await response.json().catch(() => ({}))) as {
    principal?: TokenOwner;
    error?: unknown;
  };
  if (response.status === 401 || response.status === 403) {
    const reason = typeof json.error === 'string' ? json.error : `HTTP ${response.status}`;
    return { refused: { status: response.status, reason } };
  }
  if (!response.ok || !json.principal) {
    return { unknown: `${base} answered whoami with HTTP ${response.status}` };
  }
  return { owner: json.principal };
}
