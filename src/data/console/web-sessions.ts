import { randomBytes } from 'node:crypto';
import type { Db } from '../../platform/db/open-database.js';
import { hashToken, type Principal } from '../index.js';

/** A session not used for this long ends… */
const IDLE_HOURS = 7 * 24;
/** …and none outlives this, however often it is used. */
const ABSOLUTE_HOURS = 30 * 24;
/** Sliding the idle deadline is a write: done at most this often per session. */
const SLIDE_EVERY_HOURS = 1;
const SESSION_TOKEN = /^sbs_[A-Za-z0-9_-]{43}$/;

export type SignInMethod = 'link' | 'github';

export interface WebSession {
  id: number;
  /** The cookie's secret; CSRF tokens are derived from it. */
  token: string;
  human: Principal;
}

/** Opens a session for a human; returns the cookie's secret (stored only as its hash). */
export async function openWebSession(
  db: Db,
  human: Principal,
  method: SignInMethod,
): Promise<string> {
  const token = 'sbs_' + randomBytes(32).toString('base64url');
  await db`
    insert into web_sessions (principal_id, hash, method, expires_at)
    values (${human.id}, ${hashToken(token)}, ${method}, now() + make_interval(hours => ${IDLE_HOURS}))`;
  return token;
}

/** The live session a cookie's secret names, with its human (not revoked), or nothing. */
export async function findWebSession(db: Db, token: string): Promise<WebSession | undefined> {
  if (!SESSION_TOKEN.test(token)) return undefined;
  const [row] = await db<(Principal & { session_id: number; stale: boolean })[]>`
    select p.*, s.id as session_id,
           s.expires_at < least(s.created_at + make_interval(hours => ${ABSOLUTE_HOURS}),
                                now() + make_interval(hours => ${IDLE_HOURS - SLIDE_EVERY_HOURS})) as stale
    from web_sessions s join principals p on p.id = s.principal_id
    where s.hash = ${hashToken(token)} and s.expires_at > now()
      and p.kind = 'human' and p.revoked_at is null`;
  if (!row) return undefined;
  const { session_id, stale, ...human } = row;
  if (stale) {
    await db`
      update web_sessions
      set expires_at = least(created_at + make_interval(hours => ${ABSOLUTE_HOURS}),
                             now() + make_interval(hours => ${IDLE_HOURS}))
      where id = ${session_id}`;
  }
  return { id: session_id, token, human };
}

/** Signing out: the session's row goes, so its cookie is worthless at once. */
export async function endWebSession(db: Db, sessionId: number): Promise<void> {
  await db`delete from web_sessions where id = ${sessionId}`;
}

/** Sessions, links and the cookie's lifetime, for the cookie's Max-Age. */
export const SESSION_MAX_AGE_SECONDS = ABSOLUTE_HOURS * 3600;

/** How long console session `sessionId` has left, if it is live and its human not revoked. */
export async function findWebSessionExpiry(
  db: Db,
  sessionId: number,
): Promise<{ expires_in_ms: number } | undefined> {
  const [row] = await db<{ expires_in_ms: number }[]>`
    select (extract(epoch from s.expires_at - now()) * 1000)::float8 as expires_in_ms
    from web_sessions s join principals p on p.id = s.principal_id
    where s.id = ${sessionId} and s.expires_at > now()
      and p.kind = 'human' and p.revoked_at is null`;
  return row;
}
