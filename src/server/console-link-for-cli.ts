import type postgres from 'postgres';
import { resolveCredentials } from '../client/resolve-credentials.js';
import { authenticateToken } from '../data/index.js';
import { mintSignInLink } from '../data/console/sign-in-links.js';

/**
 * What `switchboard up` prints at start: a one-time sign-in link for the human whose credentials
 * the CLI on this machine keeps for this very server (its entry in the credentials file, current
 * or not: a second server on another port has one too); otherwise nothing.
 */
export async function consoleLinkForCli(
  server: { url: string; publicUrl?: string; sql: postgres.Sql },
  env: Record<string, string | undefined> = process.env,
): Promise<string | undefined> {
  const credentials = await resolveCredentials(env, { url: server.url }).catch(() => undefined);
  if (!credentials || credentials.url !== server.url) return undefined;
  const human = await authenticateToken(server.sql, credentials.token);
  if (human?.kind !== 'human') return undefined;
  const { token } = await mintSignInLink(server.sql, human);
  return `${server.publicUrl ?? server.url}/sign-in/${token}`;
}
