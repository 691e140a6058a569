import type postgres from 'postgres';
import { findWebSessionExpiry } from '../../data/console/web-sessions.js';
import { findLiveToken, hashToken } from '../../data/index.js';
import { listenForRevocations } from '../../data/principals/listen-for-revocations.js';
import type { Logger } from '../../platform/logger.js';

/** What a long-lived response was opened with: a bearer token, or a console session. */
export type Credential =
  | { kind: 'token'; token: string; principalId: number }
  | { kind: 'web_session'; sessionId: number; principalId: number };

export interface RevocationWatch {
  /**
   * Calls `end` (once) as soon as `credential` no longer holds: its token or principal revoked,
   * its console session signed out or expired — by this process or any other on the database.
   * Returns the function that stops watching (call it when the response ends anyway).
   */
  watch(credential: Credential, end: () => void): () => void;
  close(): Promise<void>;
}

/** A session's expiry is looked at again at least this often (timers cannot wait 30 days). */
const MAX_TIMER_MS = 6 * 3600_000;

interface Watcher {
  credential: Credential;
  hash?: Buffer;
  end: () => void;
  /** The token's row, once looked up: its revocation is told by id. */
  tokenId?: number;
  /** An agent's owner, once looked up: the agent's credentials end with the owner's. */
  ownerId?: number | null;
  /** A console session's expiry. */
  timer?: NodeJS.Timeout;
  checking: boolean;
  /** Something was heard while a check was running: check again when it is done. */
  again: boolean;
  ended: boolean;
}

/**
 * Ends streams with their credentials. Every revocation and sign-out NOTIFYs
 * `<schema>.revocations` with the row it concerns (migration 0024); each process ends its own
 * streams of that token, principal or session at once. A console session's expiry is no event:
 * each watched session is looked at again when it is due. A stream is checked against the
 * database once when it starts to be watched (closing the gap since its request was
 * authenticated) and after every (re)LISTEN, since a NOTIFY sent while the connection was down
 * is lost. A check that fails (the database unreachable) ends the stream: its client reconnects,
 * and is authenticated afresh.
 */
export async function createRevocationWatch(
  sql: postgres.Sql,
  /** Straight to PostgreSQL (Database.direct): LISTEN does not pass a transaction pooler. */
  direct: postgres.Sql,
  schema: string,
  log: Logger,
): Promise<RevocationWatch> {
  const watchers = new Set<Watcher>();

  const finish = (watcher: Watcher) => {
    if (watcher.ended) return;
    watcher.ended = true;
    watchers.delete(watcher);
    clearTimeout(watcher.timer);
    try {
      watcher.end();
    } catch (error) {
      log.warn({ err: error }, 'could not end a stream whose credential ended');
    }
  };

  /** Whether the credential still holds; a live session's next look is scheduled. */
  const holds = async (watcher: Watcher): Promise<boolean> => {
    const { credential } = watcher;
    if (credential.kind === 'token') {
      const row = await findLiveToken(sql, watcher.hash!);
      if (!row) return false;
      watcher.tokenId = Number(row.id);
      watcher.ownerId = row.owner_id === null ? null : Number(row.owner_id);
      return true;
    }
    const row = await findWebSessionExpiry(sql, credential.sessionId);
    if (!row) return false;
    clearTimeout(watcher.timer);
    watcher.timer = setTimeout(
      () => void check(watcher),
      Math.min(Math.max(row.expires_in_ms, 0) + 1, MAX_TIMER_MS),
    );
    watcher.timer.unref();
    return true;
  };

  const check = async (watcher: Watcher): Promise<void> => {
    if (watcher.ended) return;
    if (watcher.checking) {
      watcher.again = true;
      return;
    }
    watcher.checking = true;
    try {
      do {
        watcher.again = false;
        if (!(await holds(watcher))) finish(watcher);
      } while (watcher.again && !watcher.ended);
    } catch (error) {
      log.warn({ err: error }, 'could not check a stream’s credential: the stream ends');
      finish(watcher);
    } finally {
      watcher.checking = false;
    }
  };

  const heard = (payload: string) => {
    const [table, id] = payload.split(':');
    const rowId = Number(id);
    for (const watcher of watchers) {
      const { credential } = watcher;
      if (!Number.isSafeInteger(rowId)) void check(watcher);
      else if (table === 'principals') {
        if (credential.principalId === rowId || watcher.ownerId === rowId) finish(watcher);
        // Whose agent it is not looked up yet: the lookup is under way, and runs again when done.
        else if (credential.kind === 'token' && watcher.ownerId === undefined) void check(watcher);
      } else if (table === 'web_sessions') {
        if (credential.kind === 'web_session' && credential.sessionId === rowId) finish(watcher);
      } else if (table === 'tokens') {
        if (credential.kind !== 'token') continue;
        if (watcher.tokenId === rowId) finish(watcher);
        // Its row not looked up yet: the lookup is under way, and runs again when done.
        else if (watcher.tokenId === undefined) void check(watcher);
      } else void check(watcher);
    }
  };

  let listened = false;
  const subscription = await listenForRevocations(direct, schema, heard, () => {
    // The first LISTEN has nothing to catch up on; every later one may have missed a NOTIFY.
    if (listened) for (const watcher of watchers) void check(watcher);
    listened = true;
  });

  return {
    watch(credential, end) {
      const watcher: Watcher = {
        credential,
        hash: credential.kind === 'token' ? hashToken(credential.token) : undefined,
        end,
        checking: false,
        again: false,
        ended: false,
      };
      watchers.add(watcher);
      void check(watcher);
      return () => {
        watcher.ended = true;
        watchers.delete(watcher);
        clearTimeout(watcher.timer);
      };
    },
    async close() {
      for (const watcher of watchers) clearTimeout(watcher.timer);
      watchers.clear();
      await subscription.unlisten().catch((error: unknown) => {
        log.debug({ err: error }, 'could not stop listening for revocations');
      });
    },
  };
}
