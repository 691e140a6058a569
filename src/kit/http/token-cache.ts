import type postgres from 'postgres';
import { authenticateBearer, hashToken, type Bearer } from '../../data/index.js';
import { listenForRevocations } from '../../data/principals/listen-for-revocations.js';
import type { Logger } from '../../platform/logger.js';

export interface TokenCache {
  /**
   * The principal a token belongs to and the grant it was issued under, unless it, its grant or
   * its principal was revoked, or it expired.
   */
  authenticate(token: string): Promise<Bearer | undefined>;
  /**
   * Forgets every token now: this process just revoked one, and its next request must not wait
   * for the NOTIFY to come back round.
   */
  clear(): void;
  close(): Promise<void>;
}

/** A principal seen within this long is taken from memory; after it, the database is asked again. */
const TTL_MS = 60_000;
const MAX_ENTRIES = 10_000;

/**
 * Bearer tokens resolved once and kept in memory, so that a request costs no lookup. Every
 * revocation (a token or a principal, by any process) NOTIFYs `<schema>.revocations` in its
 * transaction, and every process clears its cache when it hears it — and on every (re)LISTEN,
 * since a NOTIFY sent while the connection was down is lost. Until it first listens, nothing is
 * cached. A lookup that races a revocation is not kept (the generation moved on meanwhile).
 */
export async function createTokenCache(
  sql: postgres.Sql,
  /** Straight to PostgreSQL (Database.direct): LISTEN does not pass a transaction pooler. */
  direct: postgres.Sql,
  schema: string,
  log: Logger,
): Promise<TokenCache> {
  const entries = new Map<string, { bearer: Bearer; until: number }>();
  let generation = 0;
  let listening = false;
  const clear = () => {
    generation++;
    entries.clear();
  };
  const subscription = await listenForRevocations(
    direct,
    schema,
    // A console session's end (`web_sessions:<id>`) concerns no token.
    (payload) => {
      if (!payload.startsWith('web_sessions:')) clear();
    },
    () => {
      clear();
      listening = true;
    },
  );
  return {
    async authenticate(token) {
      const key = hashToken(token).toString('base64');
      const cached = entries.get(key);
      if (cached && cached.until > Date.now()) return cached.bearer;
      const seen = generation;
      const bearer = await authenticateBearer(sql, token);
      if (bearer && listening && seen === generation) {
        entries.delete(key);
        if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
        // An OAuth access token is not kept past its expiry.
        const expires = bearer.grant?.expires_at?.getTime() ?? Infinity;
        entries.set(key, { bearer, until: Math.min(Date.now() + TTL_MS, expires) });
      }
      return bearer;
    },
    clear,
    async close() {
      listening = false;
      clear();
      await subscription.unlisten().catch((error: unknown) => {
        log.debug({ err: error }, 'could not stop listening for revocations');
      });
    },
  };
}
